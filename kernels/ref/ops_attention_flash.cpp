// §6b KV store into an F16 cache and flash attention over it, as llama.cpp's CPU backend runs
// its `default` configuration (F16 K and V cache, flash attention auto → on;
// ggml-cpu/ops.cpp ggml_compute_forward_flash_attn_ext_f16 at the reference commit).
//
// The cache is cell-major for K and V alike (no V transpose with flash attention): element
// (channel c, cell j) at cache[j * kv_dim + c], stored as fp16 (round to nearest even).
//
// ggml picks one of three loops per FLASH_ATTN_EXT call, from the batch's token count T:
//
// One-chunk (T < 64, or head_dim % 16 != 0), per query row (token t, head h):
//   Q16   = f16(q)                                   (K's vec_dot type is F16)
//   for each visible cell j, in index order (masked cells are skipped outright):
//     s    = fl(ggml_vec_dot_f16(K16_j, Q16) · scale) (+ 0 for the mask)
//     s > M:  M = s, ms = expf(M_old − M), VKQ16 = f16(VKQ16 · ms), vs = 1
//     else:   vs = expf(s − M)                                        (libm expf)
//     VKQ16 = f16(fma(V16_j, vs, VKQ16))                             (ggml_vec_mad_f16)
//     S     = fma(S, ms, vs)                                          (GCC contracts it)
//   out = fl(f32(VKQ16) · (S == 0 ? 0 : 1/S))
// The value accumulator is rounded to fp16 after every cell: that is llama.cpp's default.
//
// Tiled (T ≥ 64 and head_dim % 16 == 0), per row, over 64-cell tiles from cell 0:
//   kq_j  = fl(sequential FMA chain over d of f32(K16_j[d]) · q[d]) · scale, + mask
//   masked cells score fl(kq · scale) + (−inf) (rows 16 at a time, see flash_row_tiled);
//   a tile whose cells are all −inf for this row changes nothing;
//   Mnew = fmaxf(M, max kq); if Mnew > M: VKQ ·= ms, S ·= ms with ms = expf(M − Mnew)
//   e_j = ggml_expf(kq_j − Mnew) (masked: 0), S = fl((double)S + Σ_16-groups reduce_add16(e))
//   VKQ[d] = sequential FMA chain over the tile's 64 cells of f32(V16_j[d]) · e_j
//   out = fl(VKQ · (S == 0 ? 0 : 1/S))
//
// Split-KV (decode with n_kv ≥ 512, ggml: n_kv is the cache view padded to 256): ggml
// splits the cells into one chunk per thread and merges the chunks, so llama.cpp's result
// there depends on its thread count. With one thread the merge is exact (scale factors 0 and
// 1) and equals the one-chunk loop, which is what this computes: llama.cpp -t 1.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/formats/quant.h"
#include "kernels/ref/linear_dot.h"
#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"

namespace {

constexpr int64_t kFlashTile = 64;  // GGML_FA_TILE_Q and GGML_FA_TILE_KV

// The one-chunk loop for one query row.
void flash_row_one_chunk(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                         float* out, int64_t head_dim, int64_t kv_dim, int64_t hk, int64_t first,
                         int64_t len, float scale, uint16_t* q16, uint16_t* vkq16) {
  for (int64_t d = 0; d < head_dim; ++d) q16[d] = cke::fp32_to_fp16(q[d]);
  std::memset(vkq16, 0, sizeof(uint16_t) * head_dim);
  float S = 0.0f, M = -INFINITY;
  for (int64_t j = first; j < len; ++j) {
    const uint16_t* kj = k_cache + j * kv_dim + hk * head_dim;
    const uint16_t* vj = v_cache + j * kv_dim + hk * head_dim;
    float s = cke::ref::vec_dot_f16(head_dim, kj, q16);
    s = s * scale;
    s += 0.0f;  // the visible cell's mask value
    const float m_old = M;
    float ms = 1.0f, vs = 1.0f;
    if (s > M) {
      M = s;
      ms = std::exp(m_old - M);
      for (int64_t d = 0; d < head_dim; ++d)
        vkq16[d] = cke::fp32_to_fp16(cke::fp16_to_fp32(vkq16[d]) * ms);
    } else {
      vs = std::exp(s - M);
    }
    for (int64_t d = 0; d < head_dim; ++d)
      vkq16[d] =
          cke::fp32_to_fp16(std::fma(cke::fp16_to_fp32(vj[d]), vs, cke::fp16_to_fp32(vkq16[d])));
    S = std::fma(S, ms, vs);
  }
  const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < head_dim; ++d) out[d] = cke::fp16_to_fp32(vkq16[d]) * s_inv;
}

// The tiled loop for one query row. ggml scores every cell of a tile, masked ones as
// fl(kq · scale) + (−inf), so a NaN or infinite query makes masked cells NaN too; which
// masked cells share a tile with the row then decides its (NaN) result. Rows are taken 16 at
// a time here, as CKE's tiled providers do: cells [0, len_group) are scored (len_group = the
// end of the row's 16-row group), later ones are padding (−inf). For finite queries every
// masked cell is −inf and the grouping changes nothing: ggml's bits.
void flash_row_tiled(const float* q, const uint16_t* k_cache, const uint16_t* v_cache, float* out,
                     int64_t head_dim, int64_t kv_dim, int64_t hk, int64_t first, int64_t len,
                     int64_t len_group, float scale, float* vkq) {
  std::memset(vkq, 0, sizeof(float) * head_dim);
  float S = 0.0f, M = -INFINITY;
  float e[kFlashTile];
  for (int64_t j0 = 0; j0 < len_group; j0 += kFlashTile) {
    const int64_t n = std::min<int64_t>(kFlashTile, len_group - j0);
    float tile_max = -INFINITY;
    for (int64_t u = 0; u < kFlashTile; ++u) {
      const int64_t j = j0 + u;
      if (u >= n) {
        e[u] = -INFINITY;
      } else {
        const uint16_t* kj = k_cache + j * kv_dim + hk * head_dim;
        float acc = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) acc = std::fma(cke::fp16_to_fp32(kj[d]), q[d], acc);
        e[u] = acc * scale + (j >= first && j < len ? 0.0f : -INFINITY);
      }
      tile_max = tile_max > e[u] ? tile_max : e[u];  // ggml_vec_max_f32: MAX(max, x)
    }
    if (tile_max == -INFINITY) continue;
    const float m_new = std::fmax(M, tile_max);
    if (m_new > M) {
      const float ms = std::exp(M - m_new);
      for (int64_t d = 0; d < head_dim; ++d) vkq[d] *= ms;
      S *= ms;
    }
    M = m_new;
    double sum = 0;
    for (int64_t g = 0; g < kFlashTile; g += 16) {
      for (int u = 0; u < 16; ++u) e[g + u] = cke::ref::ggml_expf(e[g + u] - m_new);
      sum += static_cast<double>(cke::ref::reduce_add16(e + g));
    }
    S = static_cast<float>(static_cast<double>(S) + sum);
    for (int64_t d = 0; d < head_dim; ++d) {
      float acc = vkq[d];
      // Padded cells (u >= n) are ggml's zero rows: fma(0, e, acc) = acc.
      for (int64_t u = 0; u < n; ++u)
        acc =
            std::fma(cke::fp16_to_fp32(v_cache[(j0 + u) * kv_dim + hk * head_dim + d]), e[u], acc);
      vkq[d] = acc;
    }
  }
  const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < head_dim; ++d) out[d] = vkq[d] * s_inv;
}

}  // namespace

extern "C" {

void kv_store_f16__ref(const float* k, const float* v, uint16_t* k_cache, uint16_t* v_cache,
                       int64_t kv_dim, int64_t n_ctx, int64_t pos0, int64_t T, int64_t begin,
                       int64_t end) {
  if (pos0 < 0 || T <= 0 || pos0 + T > n_ctx) return;  // plan proves this; never write OOB
  if (!cke_ref_in_range(T, begin, end)) return;
  for (int64_t i = begin * kv_dim; i < end * kv_dim; ++i) {
    k_cache[pos0 * kv_dim + i] = cke::fp32_to_fp16(k[i]);
    v_cache[pos0 * kv_dim + i] = cke::fp32_to_fp16(v[i]);
  }
}

void attention_f16_flash__ref(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                              float* out, int64_t head_dim, int64_t n_head, int64_t n_head_kv,
                              int64_t n_ctx, int64_t pos0, int64_t T, float scale, int64_t window,
                              int64_t h0, int64_t h1) {
  if (head_dim <= 0 || n_head_kv <= 0 || n_head % n_head_kv != 0 || pos0 < 0 || T <= 0 ||
      pos0 + T > n_ctx || h0 < 0 || h1 > n_head || h0 >= h1)
    return;
  const int64_t group = n_head / n_head_kv;
  const int64_t kv_dim = n_head_kv * head_dim;
  const bool tiled = T >= kFlashTile && head_dim % 16 == 0;
  std::vector<uint16_t> q16(static_cast<size_t>(head_dim)), vkq16(static_cast<size_t>(head_dim));
  std::vector<float> vkq(static_cast<size_t>(head_dim));
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = pos0 + t;
    const int64_t first = (window > 0 && p - window + 1 > 0) ? p - window + 1 : 0;
    for (int64_t h = h0; h < h1; ++h) {
      const float* qh = q + (t * n_head + h) * head_dim;
      float* oh = out + (t * n_head + h) * head_dim;
      if (tiled)
        flash_row_tiled(qh, k_cache, v_cache, oh, head_dim, kv_dim, h / group, first, p + 1,
                        std::min(pos0 + T, pos0 + t / 16 * 16 + 16), scale, vkq.data());
      else
        flash_row_one_chunk(qh, k_cache, v_cache, oh, head_dim, kv_dim, h / group, first, p + 1,
                            scale, q16.data(), vkq16.data());
    }
  }
}

}  // extern "C"
