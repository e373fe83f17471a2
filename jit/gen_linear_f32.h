// Generated linear kernels for F32 weights (contract linear.f32.ggml): ggml_vec_dot_f32 of
// an AVX-512 build, for a tile of rows x tokens at once, written once in KIR.
//
// Per output, exactly the reference's arithmetic (kernels/ref/linear_dot_float.cpp):
// four 16-lane FMA accumulators over the 64-element chunks of K (acc_j takes elements
// 64c + 16j + lane), folded (acc0+acc2) + (acc1+acc3), reduced by GCC's
// _mm512_reduce_add_ps tree (lanes i+8, i+4, then (u0+u2) + (u1+u3)); then the K % 64
// tail in index order: rounded products added one by one for the first (K % 64) & ~7
// elements, scalar FMAs for the last K % 8. The tile only shares loads between outputs.
//
// The AVX2 level computes the same 16-lane accumulators as pairs of ymm (lanes 0-7 and
// 8-15): the lane structure is the contract's, the vector width is the machine's. Its
// tiles are 1 x 1 (8 accumulators fill half the 16 ymm registers).
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// F16 weights (contract linear.f16.ggml, activations converted to f16 by the plan) take the
// same tiles: elements widened by vcvtph2ps (exact), ggml_vec_dot_f16's K % 64 tail as f32
// products added to the sum in double, rounded to f32 at the end.

// impl.params rows, tokens (AVX-512: rows 1..4, tokens 1..3, rows * tokens <= 6).
bool build_linear_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
// impl.params rows, tokens: 1 x 1 only.
bool build_linear_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_f16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_f16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
