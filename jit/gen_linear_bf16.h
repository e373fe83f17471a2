// Generated linear kernels for BF16 weights on AVX512-BF16 hosts, both of llama.cpp's
// arithmetics, each with vdpbf16ps (per f32 lane: the odd bf16 pair product added, then the
// even one; exact products, each add rounded, DAZ/FTZ) on bf16 activations the plan made:
//   linear.bf16.ggml (decode; prefill shapes tinyBLAS does not take): ggml_vec_dot_bf16,
//     two 16-lane accumulators over 64-element steps (c1: elements 0..31, c2: 32..63),
//     sumf (double) = 0 + reduce(c1) + reduce(c2), the K % 64 tail products (f32) added
//     in double, the double rounded to f32;
//   linear.bf16_tinyblas.ggml (prefill, K % 32 == 0, N % 4 == 0): tinyBLAS<32, __m512bh>,
//     one accumulator per output over 32-element steps, reduce, no tail.
// Without AVX512-BF16 (AVX2 and plain AVX-512 hosts) the same tiles emulate vdpbf16ps lane by
// lane: two FMAs (odd pair, then even) on the widened bf16 with MXCSR's DAZ and FTZ set
// around the loop (x86's flush is the instruction's: kernels/ref/linear_lanes.h
// dpbf16_lane), bit for bit; reductions and the tail run in the default environment.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows, tokens: vec_dot 2 * rows * tokens + tokens + 1 <= 32, tinyBLAS
// rows * tokens + tokens + 1 <= 32; rows, tokens in 1..8.
bool build_linear_bf16_avx512bf16(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_bf16_tinyblas_avx512bf16(const GeneratorParams& p, kir::Module* m,
                                           std::string* err);
bool build_linear_bf16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_bf16_tinyblas_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_bf16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_bf16_tinyblas_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
