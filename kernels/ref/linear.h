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

// Expert matmuls (ggml's MUL_MAT_ID) on pairs grouped by expert (moe_group, ops.h):
//   x: [K, P] activations of the sorted pairs (already in the weight's vec_dot type: pair j
//      at x + j * row_bytes(act, K)); w: [K, N, E], expert e's N rows at
//      w + e * N * row_bytes(wtype, K); sched: [2E] i32, count then first pair of each expert;
//   y: [N, P] f32 (pair j at y + j * N).
// For every expert e and pair j of it, rows [n0, n1): y[j] = W_e x[j] with the per-token
// arithmetic of the linear reference of that format (T = 1: vec_dot, or the repacked gemv),
// as ggml's mul_mat_id computes every (row, pair) with vec_dot and its repacked path with
// one gemv per pair.
#define CKE_REF_LINEAR_ID(name)                                                                 \
  void name(const void* x, const void* w, const int32_t* sched, float* y, int64_t K, int64_t N, \
            int64_t E, int64_t P, int64_t n0, int64_t n1)

extern "C" {
CKE_REF_LINEAR_ID(linear_id_f32_f32__ref);
CKE_REF_LINEAR_ID(linear_id_f16_f32__ref);
CKE_REF_LINEAR_ID(linear_id_bf16_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q8_0_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q4_0_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q4_0x8_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q4_1_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q5_0_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q5_1_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q2_K_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q2_Kx8_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q3_K_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q4_K_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q4_Kx8_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q5_K_f32__ref);
CKE_REF_LINEAR_ID(linear_id_q6_K_f32__ref);
}
