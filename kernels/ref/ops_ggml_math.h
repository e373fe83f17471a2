// Private helpers of the reference op kernels: scalar emulations of the ggml-cpu building
// blocks whose exact arithmetic decides the bits (GGML-NUMERICS.md §3.2, §6, §7).
//
// ggml-cpu (the build behind shared/reference) is compiled for AVX-512 with FMA; these
// functions reproduce what one lane / one reduction of that code computes, in portable
// C++ with explicit std::fma where the SIMD code fuses. They are the shared vocabulary of
// the reference kernels and of the tests of optimized kernels; not a public kernel API.
#pragma once

#include <cstdint>

namespace cke::ref {

// One lane of ggml_v_expf (AVX-512 variant, vec.h): Arm's polynomial, ≤ 1.5 ulp; flushes
// to +inf / 0 when |round(x·log2 e)| > 192; exp(−inf) = 0, exp(NaN) = NaN.
float ggml_expf(float x);

// GCC 12's _mm512_reduce_add_ps of 16 lanes: upper 8 onto lower 8, then 4, then 2, then
// lane1 + lane0.
float reduce_add16(const float v[16]);

// ggml_vec_dot_f32 (AVX-512: GGML_F32_STEP 64, 4 accumulators × 16 lanes, FMA): chunks of
// 64 into the lanes, the accumulators folded (0+2, 1+3, 0+1) and reduced by reduce_add16,
// then the n % 64 leftovers added in index order as fl(x·y) (GCC vectorises the products
// of that loop and adds them one by one; checked against ggml for a leftover of 8).
float vec_dot_f32(const float* x, const float* y, int64_t n);

// ggml_vec_dot_f32 over a row that ggml sees zero-padded to a multiple of 64 (the KQV
// product over n_kv cells, whose length in ggml is a multiple of 256): every element goes
// into the 4×16 lane structure, none into the sequential leftovers. Zero products leave a
// lane unchanged, so this equals ggml's value on the padded row.
float vec_dot_f32_pad64(const float* x, const float* y, int64_t n);

// The per-output arithmetic of llamafile's tinyBLAS<16, __m512> (prefill F32 matmul): one
// 16-lane FMA accumulator, lane l takes elements 16c + l, then reduce_add16. For n not a
// multiple of 16 this is the value on the row zero-padded to the next multiple of 16.
float dot_tinyblas16(const float* x, const float* y, int64_t n);

// One row of ggml's soft_max_ext as the attention uses it (max_bias 0, mask 0 / −inf), in
// place. On entry w[0, len) holds fl(kq · scale) of cells 0..len−1, of which cells < first
// are masked; w must have room for len rounded up to 16. On return w[0, len) holds the
// probabilities (exact zeros where masked): e = ggml_expf(w − max) in 16-groups from cell 0,
// each group reduced by reduce_add16 into a double sum, p = fl(e · (float)(1.0 / sum)).
// This is ggml's value on the row extended with masked cells to any multiple of 16 (the
// 256-cell rows of the references); ggml's libm path for a partial last group never runs.
void softmax_row(float* w, int64_t len, int64_t first);

// ggml_silu_f32 as the AVX-512 swiglu path computes it for a full 16-group:
// x / (1 + ggml_expf(0 − x)) with a true division.
float silu_simd(float x);
// The scalar leftover path: x / (1 + expf(−x)) with libm expf.
float silu_libm(float x);

// ggml's GELU table lookup (GGML_GELU_FP16): T[f16(x)] widened, for −10 < x < 10.
// The 65,536-entry FP16 table of the tanh GELU is built once, thread-safely.
float gelu_table_f16(float x);
// The raw table entry for an FP16 bit pattern (for tests).
uint16_t gelu_table_entry(uint16_t h);
// The whole table (65,536 entries, indexed by FP16 bit pattern): what the generated GEGLU
// kernels read through their C helper.
const uint16_t* gelu_table_f16_data();

// ggml's per-token RoPE cache (ggml_rope_cache_init, ext_factor 0, attn_factor 1) for one
// position: cache[2k] = cosf, cache[2k+1] = sinf of fl(freq_scale * theta_k), theta_0 =
// (float)pos, theta_{k+1} = fl(theta_k * powf(freq_base, -2.0f / n_rot)); k < n_rot / 2.
// The reference rope kernels and the generated ones (through a C helper) share it.
void rope_cache(float* cache, int64_t n_rot, int64_t pos, float freq_base, float freq_scale);

// ggml_compute_forward_argsort_f32, GGML_SORT_ORDER_DESC, on one row: order = 0..n-1 put in
// order by std::sort with cmp_argsort (p[a] > p[b]). The same algorithm on the same
// comparisons gives ggml's order, ties (and all-NaN rows) included. The MoE router's
// reference and the generated router's tie path (through a C helper) share it.
void argsort_desc_ggml(const float* p, int32_t* order, int64_t n);

}  // namespace cke::ref
