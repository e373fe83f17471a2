// q4_K and q5_K: 256-element super-blocks of 8 sub-blocks of 32 with 6-bit scales and mins
// (ggml-quants.c quantize_row_q{4,5}_K_ref / dequantize_row_q{4,5}_K). The two formats
// share everything but the quant width, so one template does both.
#include <cmath>
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/kquant_search.h"
#include "kernels/formats/quant_rows.h"
#include "kernels/formats/quant_util.h"

namespace cke {

using qutil::f2h;
using qutil::get_scale_min_k4;
using qutil::h2f;
using qutil::load_block;
using qutil::nearest_int;
using qutil::store_block;

namespace {

// Search parameters ggml passes to make_qkx2_quants for each width.
struct SubBlockSearch {
  int nmax;
  float rmin, rdelta;
  int nstep;
};
constexpr SubBlockSearch kQ4K{15, -1.f, 0.1f, 20};
constexpr SubBlockSearch kQ5K{31, -0.5f, 0.1f, 15};

// Computes d, dmin, the packed scales and the quant levels L (0..nmax) of one super-block.
template <class B>
void quantize_scales_and_levels(const float* x, const SubBlockSearch& p, B* b, uint8_t* L) {
  uint8_t Laux[32];
  float weights[32];
  float mins[kQK_K / 32];
  float scales[kQK_K / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = kq::make_qkx2_quants(32, p.nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                     p.rmin, p.rdelta, p.nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQK_K / 32; ++j) {
    // ggml: uint8_t ls = nearest_int(...) (wraps mod 256), then MIN(63, ls).
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    ls = ls < 63 ? ls : 63;
    lm = lm < 63 ? lm : 63;
    if (j < 4) {
      b->scales[j] = ls;
      b->scales[j + 4] = lm;
    } else {
      b->scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      b->scales[j - 4] = static_cast<uint8_t>(b->scales[j - 4] | ((ls >> 4) << 6));
      b->scales[j - 0] = static_cast<uint8_t>(b->scales[j - 0] | ((lm >> 4) << 6));
    }
  }
  b->d = f2h(max_scale / 63.f);
  b->dmin = f2h(max_min / 63.f);

  // Re-quantize against the stored (rounded) scales and mins.
  for (int j = 0; j < kQK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, b->scales, &sc, &m);
    const float d = h2f(b->d) * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = h2f(b->dmin) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(l < 0 ? 0 : (l > p.nmax ? p.nmax : l));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- q4_K
void quantize_row_q4_K_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    block_q4_K b;
    std::memset(&b, 0, sizeof b);
    quantize_scales_and_levels(x, kQ4K, &b, L);
    uint8_t* q = b.qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    store_block(y, i, b);
  }
}

void dequantize_row_q4_K(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<block_q4_K>(x, i);
    const float d = h2f(b.d);
    const float min = h2f(b.dmin);
    const uint8_t* q = b.qs;
    for (int j = 0, is = 0; j < kQK_K; j += 64, q += 32, is += 2) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
      get_scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

// ---------------------------------------------------------------- q5_K
void quantize_row_q5_K_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    block_q5_K b;
    std::memset(&b, 0, sizeof b);
    quantize_scales_and_levels(x, kQ5K, &b, L);
    // Low 4 bits into qs as q4_K; bit 4 of chunk c's two halves into qh bits 2c, 2c+1.
    uint8_t* ql = b.qs;
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < kQK_K; n += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j];
        if (l1 > 15) {
          l1 -= 16;
          b.qh[j] = static_cast<uint8_t>(b.qh[j] | m1);
        }
        int l2 = L[n + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          b.qh[j] = static_cast<uint8_t>(b.qh[j] | m2);
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
    store_block(y, i, b);
  }
}

void dequantize_row_q5_K(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<block_q5_K>(x, i);
    const float d = h2f(b.d);
    const float min = h2f(b.dmin);
    const uint8_t* ql = b.qs;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQK_K; j += 64, ql += 32, is += 2) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
      get_scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

}  // namespace cke
