// The machine-code sink of KIR: lowers a module through asmjit's x86::Compiler (virtual
// registers, its register allocator) and places it in the JIT runtime.
//
// Instruction choice: a module whose isa lists avx512f is lowered with AVX-512 enabled
// (zmm16-31, k registers) and takes, for every op, the mnemonic that has an EVEX form
// (vpxord, vinserti32x4, ...); others get VEX-only code on registers 0-15.
#pragma once

#include <memory>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::kir {

// Null and *err on failure (an asmjit error, a module that does not validate).
std::unique_ptr<KernelModule> lower_to_machine_code(const Module& m, std::string* err);

}  // namespace cke::jit::kir
