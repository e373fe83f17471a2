// Reference linear (matrix x activations) kernels: one per weight format.
//
// y[t][n] = sum_k W[n][k] * x[t][k] for tokens t in [0, T) and output rows n in [n0, n1).
//   x: [K, T] activations already in the weight's vec_dot type (f32 for f32 weights; f16,
//      bf16, Q8_0, Q8_1 or Q8_K rows otherwise: token t at x + t * row_bytes(act, K)),
//      converted by an act_quant plan step exactly as ggml converts them (act_steps.h)
//   w: N rows of row_bytes(wtype, K) bytes          y: [N, T] f32 (token t at y + t*N)
// Arithmetic is ggml's CPU arithmetic for that weight type (GGML-NUMERICS.md §3): dotted
// block by block in integers, accumulated in float lanes in ggml's order. Rows are
// independent, so any split of [0, N) gives the same bits: the kernel may be called on
// disjoint row ranges from several threads.
#pragma once

#include <cstdint>

#define CKE_REF_LINEAR(name)                                                                     \
  void name(const void* x, const void* w, float* y, int64_t K, int64_t N, int64_t T, int64_t n0, \
            int64_t n1)

extern "C" {
CKE_REF_LINEAR(linear_f32_f32__ref);
CKE_REF_LINEAR(linear_f16_f32__ref);
CKE_REF_LINEAR(linear_bf16_f32__ref);
// llamafile's tinyBLAS arithmetic (llama.cpp's float prefill): contracts linear.<w>_tinyblas.ggml
CKE_REF_LINEAR(linear_f32_tinyblas_f32__ref);
CKE_REF_LINEAR(linear_f16_tinyblas_f32__ref);
CKE_REF_LINEAR(linear_bf16_tinyblas_f32__ref);
CKE_REF_LINEAR(linear_q8_0_f32__ref);
CKE_REF_LINEAR(linear_q4_0_f32__ref);
CKE_REF_LINEAR(linear_q4_0x8_f32__ref);  // ggml's repacked arithmetic (N % 8 == 0 matrices)
CKE_REF_LINEAR(linear_q4_1_f32__ref);
CKE_REF_LINEAR(linear_q5_0_f32__ref);
CKE_REF_LINEAR(linear_q5_1_f32__ref);
CKE_REF_LINEAR(linear_q2_K_f32__ref);
CKE_REF_LINEAR(linear_q2_Kx8_f32__ref);
CKE_REF_LINEAR(linear_q3_K_f32__ref);
CKE_REF_LINEAR(linear_q4_K_f32__ref);
CKE_REF_LINEAR(linear_q4_Kx8_f32__ref);
CKE_REF_LINEAR(linear_q5_K_f32__ref);
CKE_REF_LINEAR(linear_q6_K_f32__ref);
}
