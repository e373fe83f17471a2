// Generated linear kernels with llamafile's tinyBLAS arithmetic (contracts
// linear.f32_tinyblas.ggml, linear.f16_tinyblas.ggml): what llama.cpp runs for float
// weights on a batch of two or more tokens when K % 16 == 0 and N % 4 == 0.
//
// Per output ONE 16-lane accumulator: lane l takes elements 16c + l by FMA (f16 widened
// exactly by vcvtph2ps), then GCC's _mm512_reduce_add_ps tree (Lanes16::reduce_add). No
// tail. With a quarter of ggml_vec_dot's accumulators per output, a tile holds 4 rows x 6
// tokens in zmm registers (as tinyBLAS's own 4x6 does): 10 loads per 24 FMAs.
//
// The AVX2 level keeps the same 16 lanes as ymm pairs; its tiles are smaller (16 ymm).
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows, tokens: AVX-512 rows * tokens + tokens + 1 <= 32 (4 x 6),
// AVX2 2 * rows * tokens + tokens + 1 <= 16 (3 x 2); rows, tokens in 1..8.
bool build_linear_f32_tinyblas_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_f32_tinyblas_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_f16_tinyblas_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_f16_tinyblas_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
