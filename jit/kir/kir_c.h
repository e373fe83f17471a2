// The C sink of KIR: renders a module as C11 with <immintrin.h> intrinsics (--emit-c).
//
// Every op becomes the intrinsic of the instruction the machine-code sink emits (or one
// with the same lane-wise definition), so compiled with the flags of c_compile_flags()
// the function computes the same bits as the JIT's machine code. Views render as casts at
// each use (they alias, as register views do in the machine code).
//
// One thing C cannot pin: the sign and payload of a NaN result. x86 returns the first NaN
// operand of an add or multiply, and a C compiler may commute the operands of those
// intrinsics (they are commutative in value). Every non-NaN result is the same bits; a NaN
// result is a NaN in both.
#pragma once

#include <string>
#include <vector>

#include "jit/kir/kir.h"

namespace cke::jit::kir {

// The module as C: helper prototypes, inner functions (static), then the entry, which is
// `void <module name>(...)` with void* for pointers and int64_t for integers.
std::string render_c(const Module& m);

// gcc/clang flags for the CPU features of requires.isa names ("avx512vnni" ->
// "-mavx512vnni"); unknown names are returned in *unknown.
std::string c_isa_flags(const std::vector<std::string>& isa, std::vector<std::string>* unknown);

// What the emitted C must be compiled with so that it computes the bits the JIT computes:
// no contraction of a*b+c into FMAs the kernel did not ask for, no value-changing float
// optimisations, no strict-aliasing assumptions about the byte buffers kernels read.
constexpr const char* kCNumericsFlags =
    "-O2 -ffp-contract=off -fno-fast-math -fno-unsafe-math-optimizations -fno-strict-aliasing";

}  // namespace cke::jit::kir
