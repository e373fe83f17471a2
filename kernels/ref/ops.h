// Reference kernels for every non-matmul op of the supported circuits.
//
// Each computes what ggml's CPU backend computes (GGML-NUMERICS.md names the section).
// Shapes are ggml order, first dim contiguous. "T" is the number of tokens in this call,
// "pos0" the absolute position of its first token.
//
// Row-wise steps the plan splits across threads (rmsnorm, layernorm, add, add_bias, scale,
// unary, glu, rope, kv_store) take the range of their parallel dim last: [begin, end) of
// it, the rest of the call as if whole; a range that is empty or leaves [0, extent] writes
// nothing.
#pragma once

#include <cstdint>

extern "C" {

// True when [begin, end) is a non-empty range within [0, extent] (the range ABI above).
static inline bool cke_ref_in_range(int64_t extent, int64_t begin, int64_t end) {
  return 0 <= begin && begin < end && end <= extent;
}

// §1 Embedding lookup: y[t] = to_float(table row tokens[t]); table rows are n_embd wide in
// the named format (ggml-base dequantization). tokens: [T] int32, y: [n_embd, T].
#define CKE_REF_EMBED(name) \
  void name(const int32_t* tokens, const void* table, float* y, int64_t n_embd, int64_t T)
CKE_REF_EMBED(embed_f32__ref);
CKE_REF_EMBED(embed_f16__ref);
CKE_REF_EMBED(embed_bf16__ref);
CKE_REF_EMBED(embed_q8_0__ref);
CKE_REF_EMBED(embed_q4_0__ref);
CKE_REF_EMBED(embed_q4_1__ref);
CKE_REF_EMBED(embed_q5_0__ref);
CKE_REF_EMBED(embed_q5_1__ref);
CKE_REF_EMBED(embed_q2_K__ref);
CKE_REF_EMBED(embed_q3_K__ref);
CKE_REF_EMBED(embed_q4_K__ref);
CKE_REF_EMBED(embed_q5_K__ref);
CKE_REF_EMBED(embed_q6_K__ref);
#undef CKE_REF_EMBED

// §2 RMSNorm fused with its weight: per row of n, y = fl(fl(x * scale) * w), scale from a
// double sum of float squares. x, y: [n, rows] (may alias), w: [n] broadcast over rows.
// Per-head norms use n = head_dim, rows = n_head * T.
// Rows [begin, end) of rows.
void rmsnorm_f32__ref(const float* x, const float* w, float* y, int64_t n, int64_t rows, float eps,
                      int64_t begin, int64_t end);

// Fused: rmsnorm then act_quant.q8_0 (contract rmsnorm_act_quant.q8_0.ggml), the oracle of
// the fused providers: each row of rows [begin, end) normed into xn (as rmsnorm_f32__ref)
// and xn's row quantized into y (as act_quant_q8_0__ref, q8_0 blocks, n / 32 per row). xn
// may alias x. n % 32 != 0 writes nothing.
void rmsnorm_act_quant_q8_0__ref(const float* x, const float* w, float* xn, void* y, int64_t n,
                                 int64_t rows, float eps, int64_t begin, int64_t end);

// LayerNorm (ggml NORM, then MUL by w, then ADD of b): per row of n, mean from a double sum
// rounded to float, variance from ggml_vec_cvar_f32's AVX-512 16-groups (reduce_add16 into a
// double) and tail, y = fl(fl(fl((x - mean) * scale) * w) + b). x, y: [n, rows] (may alias).
// Rows [begin, end) of rows.
void layernorm_f32__ref(const float* x, const float* w, const float* b, float* y, int64_t n,
                        int64_t rows, float eps, int64_t begin, int64_t end);

// §5 RoPE in place on x: [head_dim, n_heads, T]; token t has position pos0 + t. The first
// n_rot dims of each head rotate (pairs (2i, 2i+1) for normal, (i, i + n_rot/2) for neox);
// freq_scale multiplies theta (1 = no scaling). Tokens [begin, end) of T.
void rope_normal_f32__ref(float* x, int64_t head_dim, int64_t n_heads, int64_t T, int64_t pos0,
                          int64_t n_rot, float freq_base, float freq_scale, int64_t begin,
                          int64_t end);
void rope_neox_f32__ref(float* x, int64_t head_dim, int64_t n_heads, int64_t T, int64_t pos0,
                        int64_t n_rot, float freq_base, float freq_scale, int64_t begin,
                        int64_t end);

// §6 KV store: cells pos0 .. pos0+T-1 of the caches take this chunk's K and V.
// k, v: [kv_dim, T]. k_cache: [kv_dim, n_ctx] (cell j at k_cache + j*kv_dim).
// v_cache is transposed: element (channel c, cell j) at v_cache[c*n_ctx + j].
// Tokens [begin, end) of T (cells pos0 + begin ..).
void kv_store_f32__ref(const float* k, const float* v, float* k_cache, float* v_cache,
                       int64_t kv_dim, int64_t n_ctx, int64_t pos0, int64_t T, int64_t begin,
                       int64_t end);

// §6 Causal grouped-query attention over the cache, non-flash (KQ, masked soft_max_ext with
// ggml_v_expf in 16-groups and a double sum, then V^T·P), for query heads [h0, h1).
// q: [head_dim, n_head, T]; caches as in kv_store; out: [head_dim * n_head, T] (head-major).
// Query t (position pos0+t) sees cells j <= pos0+t, and if window > 0 only those with
// (pos0+t) - j < window. Scores are scaled by `scale` before the mask.
void attention_f32__ref(const float* q, const float* k_cache, const float* v_cache, float* out,
                        int64_t head_dim, int64_t n_head, int64_t n_head_kv, int64_t n_ctx,
                        int64_t pos0, int64_t T, float scale, int64_t window, int64_t h0,
                        int64_t h1);

// §6b KV store into an F16 cache (fp16 round to nearest even), K and V both cell-major:
// element (channel c, cell j) at cache[j*kv_dim + c] (flash attention reads V rows).
void kv_store_f16__ref(const float* k, const float* v, uint16_t* k_cache, uint16_t* v_cache,
                       int64_t kv_dim, int64_t n_ctx, int64_t pos0, int64_t T, int64_t begin,
                       int64_t end);

// §6b Flash attention over the F16 cache as ggml's FLASH_ATTN_EXT computes it (the one-chunk
// loop with an fp16 value accumulator for T < 64, the 64x64-tiled loop for T >= 64; see
// ops_attention_flash.cpp). Arguments and visibility as attention_f32__ref.
void attention_f16_flash__ref(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                              float* out, int64_t head_dim, int64_t n_head, int64_t n_head_kv,
                              int64_t n_ctx, int64_t pos0, int64_t T, float scale, int64_t window,
                              int64_t h0, int64_t h1);

// §8 Elementwise: y = a + b over elements [begin, end) of n (may alias a or b).
void add_f32__ref(const float* a, const float* b, float* y, int64_t n, int64_t begin, int64_t end);
// §4 Bias add broadcast over tokens: y[t][i] = x[t][i] + b[i]; x, y: [n, T] (may alias).
// Tokens [begin, end) of T.
void add_bias_f32__ref(const float* x, const float* b, float* y, int64_t n, int64_t T,
                       int64_t begin, int64_t end);
// §8 SCALE: y = fl(x * s) over elements [begin, end) of n (may alias).
void scale_f32__ref(const float* x, float* y, int64_t n, float s, int64_t begin, int64_t end);

// Squared ReLU (ggml RELU then SQR): y = fl(r * r), r = x > 0 ? x : 0, over elements
// [begin, end) of n (may alias).
void relu_sqr_f32__ref(const float* x, float* y, int64_t n, int64_t begin, int64_t end);

// §7 Gated FFN activations, per row of n (the FFN width), rows [begin, end) of T; y may
// alias gate or up.
// SwiGLU: y = silu(gate) * up with ggml's silu (ggml_v_expf on 16-groups, libm tail).
void swiglu_f32__ref(const float* gate, const float* up, float* y, int64_t n, int64_t T,
                     int64_t begin, int64_t end);
// SwiGLU of one fused projection: x: [2n, T], row t = gate (n) then up (n); y: [n, T]
// (must not alias x). Same arithmetic as swiglu_f32__ref.
void swiglu_fused_f32__ref(const float* x, float* y, int64_t n, int64_t T, int64_t begin,
                           int64_t end);
// GeGLU (tanh GELU through ggml's FP16 table, ±10 edges): y = gelu(gate) * up.
void geglu_f32__ref(const float* gate, const float* up, float* y, int64_t n, int64_t T,
                    int64_t begin, int64_t end);

// §9 Mixture of experts (llama.cpp's build_moe_ffn, softmax gating, weights normalised).
// Token t's n_used "slots" are its selected experts in descending probability; a "pair"
// is (slot, token). The expert FFN runs on the P = n_used * T pairs grouped by expert
// (moe_group), so each expert's weights are read once per chunk (linear_id, linear.h).
//
// Routing of tokens [t0, t1): logits [n_expert, T] (the router matmul) -> probabilities by
// ggml's soft_max (max, ggml_v_expf on 16-groups into a double sum by reduce_add16, libm
// expf on the tail, p = fl(e * (float)(1 / sum))); ids [n_used, T] = the first n_used of
// ggml's argsort (std::sort, descending, comparator p[a] > p[b], from 0..n_expert-1);
// weights [n_used, T] = p[id] / max(sum, 6.103515625e-5f), sum = (float) of a double sum in
// slot order (ggml's SUM_ROWS, CLAMP, DIV).
void moe_route_softmax_norm_f32__ref(const float* logits, int32_t* ids, float* weights,
                                     int64_t n_expert, int64_t n_used, int64_t T, int64_t t0,
                                     int64_t t1);
// Groups the pairs by expert as ggml's mul_mat_id does (tokens ascending, then slots): sched
// [2 * n_expert] = count then first sorted position of each expert; rows [2 * n_used, T]:
// rows[j], j < P, the token of sorted pair j; rows[P + t * n_used + s] the sorted position of
// (slot s, token t). Integer bookkeeping only. ids outside [0, n_expert) are not counted.
void moe_group__ref(const int32_t* ids, int32_t* sched, int32_t* rows, int64_t n_expert,
                    int64_t n_used, int64_t T);
// y[j] = x[rows[j]] (rows of n floats) for sorted pairs j in [j0, j1): each pair's token
// row, for the gate and up experts. P = n_used * T.
void moe_gather_f32__ref(const float* x, const int32_t* rows, float* y, int64_t n, int64_t P,
                         int64_t j0, int64_t j1);
// Tokens [t0, t1): y[t] = (((x[pos(0,t)] * w[0,t]) + x[pos(1,t)] * w[1,t]) + ...) in slot
// order, every product and sum rounded to float (ggml's MUL by the weights, then the ADDs of
// the slot views); pos(s,t) = rows[n_used * T + t * n_used + s]. x: [n, n_used * T] in
// sorted pair order; y: [n, T].
void moe_combine_f32__ref(const float* x, const float* weights, const int32_t* rows, float* y,
                          int64_t n, int64_t n_used, int64_t T, int64_t t0, int64_t t1);
}
