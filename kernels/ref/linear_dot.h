// One output of a linear kernel: the dot product of a weight row with a converted
// activation row, computed bit for bit as ggml's ggml_vec_dot_* of an x86 AVX-512 build
// (GGML-NUMERICS.md §3.2-3.3). These are the oracles of the optimized kernels: a JIT
// kernel of the same contract must return exactly these bits for every row.
//
// `n` is the element count (a multiple of the weight's block size); `w` is the weight row
// (2-byte aligned), `a` the activation row converted by kernels/ref/act_quant.h.
// Lane layouts, in short:
//   f32/f16: 4 x 16-lane FMA accumulators over 64-element chunks, folded (0+2)+(1+3) and
//     reduced by GCC's _mm512_reduce_add_ps tree. f32 keeps a float sum and adds the
//     n % 64 tail in index order: 16-element groups and one 8-element group as rounded
//     products, the last n % 8 with scalar FMAs (GCC's vectorised epilogue). f16 moves
//     the reduced value to double and adds rounded float tail products in double.
//   bf16: two 16-lane vdpbf16ps accumulators (elements 0..31 and 32..63 of each 64),
//     each reduced and added in double, tail products in double.
//   quantized: 8 float lanes; lane l of each 32-element group gets the exact int32 dot of
//     elements 4l..4l+3 (times their sub-block scale for K-quants), accumulated with one
//     FMA per block (per super-block for K-quants), then hsum8. Min terms: q4_1/q5_1 and
//     q5_K a scalar FMA accumulator, q2_K in the same 8 lanes, q4_K a 4-lane accumulator.
//     q6_K takes its -32 offset out of lane l as 32 * (bsum/scale of elements 32l..32l+31).
#pragma once

#include <cstdint>

#include "kernels/formats/blocks.h"

namespace cke::ref {

float vec_dot_f32(int64_t n, const float* w, const float* a);
float vec_dot_f16(int64_t n, const uint16_t* w, const uint16_t* a);
float vec_dot_bf16(int64_t n, const uint16_t* w, const uint16_t* a);

// llamafile's tinyBLAS, which llama.cpp runs instead of the vec_dots above for a batch of
// two or more tokens when K % KN == 0 and N % 4 == 0 (GGML-NUMERICS.md §3.2): per output
// ONE 16-lane f32 accumulator, then the _mm512_reduce_add_ps tree; no tail, no double.
//   f32/f16: KN = 16, lane l takes elements 16c + l by FMA (f16 widened exactly);
//   bf16:    KN = 32, lane l takes the pair 32c + 2l, +1 by vdpbf16ps (odd product first).
float tinyblas_f32(int64_t n, const float* w, const float* a);
float tinyblas_f16(int64_t n, const uint16_t* w, const uint16_t* a);
float tinyblas_bf16(int64_t n, const uint16_t* w, const uint16_t* a);

float vec_dot_q8_0_q8_0(int64_t n, const block_q8_0* w, const block_q8_0* a);
float vec_dot_q4_0_q8_0(int64_t n, const block_q4_0* w, const block_q8_0* a);
float vec_dot_q5_0_q8_0(int64_t n, const block_q5_0* w, const block_q8_0* a);
float vec_dot_q4_1_q8_1(int64_t n, const block_q4_1* w, const block_q8_1* a);
float vec_dot_q5_1_q8_1(int64_t n, const block_q5_1* w, const block_q8_1* a);

float vec_dot_q2_K_q8_K(int64_t n, const block_q2_K* w, const block_q8_K* a);
float vec_dot_q3_K_q8_K(int64_t n, const block_q3_K* w, const block_q8_K* a);
float vec_dot_q4_K_q8_K(int64_t n, const block_q4_K* w, const block_q8_K* a);
float vec_dot_q5_K_q8_K(int64_t n, const block_q5_K* w, const block_q8_K* a);
float vec_dot_q6_K_q8_K(int64_t n, const block_q6_K* w, const block_q8_K* a);

// The repacked kernels that replace the three above for matrices with N % 8 == 0
// (linear_dot_repack.cpp): one output of ggml_gemv_* (a token quantized by the plain
// quantizer) or of ggml_gemm_* (a token of a group of 4, quantized by the 4x8 quantizer).
// One float accumulator per output, no lane split; see linear_dot_repack.cpp.
float gemv_q4_0_8x8_q8_0(int64_t n, const block_q4_0* w, const block_q8_0* a);
float gemm_q4_0_8x8_q8_0(int64_t n, const block_q4_0* w, const block_q8_0* a);
float gemv_q4_K_8x8_q8_K(int64_t n, const block_q4_K* w, const block_q8_K* a);
float gemm_q4_K_8x8_q8_K(int64_t n, const block_q4_K* w, const block_q8_K* a);
float gemv_q2_K_8x8_q8_K(int64_t n, const block_q2_K* w, const block_q8_K* a);
float gemm_q2_K_8x8_q8_K(int64_t n, const block_q2_K* w, const block_q8_K* a);

}  // namespace cke::ref
