// §6 KV store and non-flash attention, as llama.cpp's build_attn_mha runs on the CPU with an
// F32 cache (the `exact` reference configuration).
//
// Per query token t (position p = pos0 + t) and head h (KV head h / (n_head / n_head_kv)):
//   kq_j  = ggml_vec_dot_f32(K cell j, q) over head_dim                 (KQ mul_mat)
//   w_j   = fl(kq_j · scale) for visible cells, −inf for masked ones    (soft_max_ext)
//   e_j   = ggml_expf(w_j − max w), summed per 16-group (reduce_add16) into a double
//   p_j   = fl(e_j · (float)(1.0 / sum))
//   out_d = Σ_j V[d][j] · p_j                                            (KQV mul_mat)
//
// Row padding. In ggml the softmax row and the KQV reduction run over n_kv cells, where
// n_kv is the whole padded cache view (256 in the references; llama.cpp pads it to a
// multiple of 256). Masked and empty cells contribute exact zeros: e = 0 adds +0 to a
// 16-group, p = 0 leaves an FMA lane unchanged. So ggml's value equals the value on the
// row cut after the last visible cell (p + 1 cells) and zero-padded to the next multiple of
// 16 (softmax groups, tinyBLAS lanes) or 64 (vec_dot lanes); that is what this computes,
// reading only cells 0..p. Consequence: every softmax group is a full 16-group (ggml's libm
// leftover path never runs for a 256-cell row), and the KQV dot has no sequential tail.
//
// KQV kernel choice, as ggml dispatches it: with T ≥ 2 tokens the product goes to
// llamafile's tinyBLAS (n_kv % 16 == 0 always; it needs head_dim % 4 == 0), one 16-lane
// accumulator per output; with T = 1 (decode) llamafile declines and ggml_vec_dot_f32 runs
// (4 × 16 lanes). The two round differently, so prefill and decode of the same token differ
// in the last bits, exactly as in llama.cpp.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"

extern "C" {

void kv_store_f32__ref(const float* k, const float* v, float* k_cache, float* v_cache,
                       int64_t kv_dim, int64_t n_ctx, int64_t pos0, int64_t T, int64_t begin,
                       int64_t end) {
  if (pos0 < 0 || T <= 0 || pos0 + T > n_ctx) return;  // plan proves this; never write OOB
  if (!cke_ref_in_range(T, begin, end)) return;
  std::memcpy(k_cache + (pos0 + begin) * kv_dim, k + begin * kv_dim,
              sizeof(float) * kv_dim * (end - begin));
  for (int64_t t = begin; t < end; ++t)
    for (int64_t c = 0; c < kv_dim; ++c) v_cache[c * n_ctx + pos0 + t] = v[t * kv_dim + c];
}

void attention_f32__ref(const float* q, const float* k_cache, const float* v_cache, float* out,
                        int64_t head_dim, int64_t n_head, int64_t n_head_kv, int64_t n_ctx,
                        int64_t pos0, int64_t T, float scale, int64_t window, int64_t h0,
                        int64_t h1) {
  // Shapes the plan has proved; anything else computes nothing rather than read out of bounds.
  if (head_dim <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0 || pos0 < 0 || T <= 0 ||
      pos0 + T > n_ctx || h0 < 0 || h1 > n_head || h0 >= h1)
    return;
  const int64_t group = n_head / n_head_kv;
  const int64_t kv_dim = n_head_kv * head_dim;
  const bool tinyblas = T >= 2 && head_dim % 4 == 0;
  // Scores, then probabilities, of cells 0..p padded to a multiple of 16.
  std::vector<float> e(static_cast<size_t>((pos0 + T + 15) / 16 * 16));

  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = pos0 + t;
    const int64_t len = p + 1;  // cells 0..p; later cells are masked
    const int64_t first = (window > 0 && p - window + 1 > 0) ? p - window + 1 : 0;
    for (int64_t h = h0; h < h1; ++h) {
      const float* qh = q + (t * n_head + h) * head_dim;
      const int64_t hk = h / group;

      for (int64_t j = first; j < len; ++j)
        e[j] = cke::ref::vec_dot_f32(k_cache + j * kv_dim + hk * head_dim, qh, head_dim) * scale;
      cke::ref::softmax_row(e.data(), len, first);

      float* oh = out + t * n_head * head_dim + h * head_dim;
      for (int64_t d = 0; d < head_dim; ++d) {
        const float* vrow = v_cache + (hk * head_dim + d) * n_ctx;  // V^T row: cells contiguous
        oh[d] = tinyblas ? cke::ref::dot_tinyblas16(vrow, e.data(), len)
                         : cke::ref::vec_dot_f32_pad64(vrow, e.data(), len);
      }
    }
  }
}

}  // extern "C"
