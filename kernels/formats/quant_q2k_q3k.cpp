// q2_K and q3_K: 256-element super-blocks of 16 sub-blocks of 16 (ggml-quants.c
// quantize_row_q{2,3}_K_ref / dequantize_row_q{2,3}_K).
#include <cmath>
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/kquant_search.h"
#include "kernels/formats/quant_rows.h"
#include "kernels/formats/quant_util.h"

namespace cke {

using qutil::f2h;
using qutil::h2f;
using qutil::load_block;
using qutil::nearest_int;
using qutil::store_block;

namespace {
inline int clamp_int(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// 2-bit packing shared by q2_K and q3_K: per 128-element half, byte l holds elements
// l, l+32, l+64, l+96 in bit pairs 0, 2, 4, 6.
inline void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
}

// 6-bit signed scale (stored + 32) of sub-block j of a q3_K block, back to -32..31.
inline int q3k_scale(const uint8_t* scales, int j) {
  const int lo = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
  const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}
}  // namespace

// ---------------------------------------------------------------- q2_K
void quantize_row_q2_K_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  uint8_t L[kQK_K];
  uint8_t Laux[16];
  float weights[16];
  float mins[kQK_K / 16];
  float scales[kQK_K / 16];
  const float q4scale = 15.f;

  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    block_q2_K b;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = kq::make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                       -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j)
        b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      b.d = f2h(max_scale / q4scale);
    } else {
      for (int j = 0; j < kQK_K / 16; ++j) b.scales[j] = 0;
      b.d = f2h(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < kQK_K / 16; ++j)
        b.scales[j] = static_cast<uint8_t>(b.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      b.dmin = f2h(max_min / q4scale);
    } else {
      b.dmin = f2h(0.f);
    }
    // Re-quantize against the rounded (fp16 and 4-bit) scales actually stored.
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = h2f(b.d) * static_cast<float>(b.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = h2f(b.dmin) * static_cast<float>(b.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = static_cast<uint8_t>(clamp_int(l, 0, 3));
      }
    }
    pack_2bit(L, b.qs);
    store_block(y, i, b);
  }
}

void dequantize_row_q2_K(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<block_q2_K>(x, i);
    const float d = h2f(b.d);
    const float min = h2f(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int n = 0; n < kQK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half) {  // elements l and l+16 of the 32-byte group
          const uint8_t sc = b.scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = min * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l)
            *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- q3_K
void quantize_row_q3_K_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  int8_t L[kQK_K];
  float scales[kQK_K / 16];

  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    block_q3_K b;
    float max_scale = 0, amax = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      scales[j] = kq::make_q3_quants_rmse(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    std::memset(b.scales, 0, sizeof b.scales);
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < kQK_K / 16; ++j) {
        // ggml: int8_t l = nearest_int(...); l = MAX(-32, MIN(31, l)) + 32;
        int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = static_cast<int8_t>(clamp_int(l, -32, 31) + 32);
        if (j < 8)
          b.scales[j] = static_cast<uint8_t>(l & 0xF);
        else
          b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0xF) << 4));
        l = static_cast<int8_t>(l >> 4);
        b.scales[j % 4 + 8] = static_cast<uint8_t>(b.scales[j % 4 + 8] | (l << (2 * (j / 4))));
      }
      b.d = f2h(1 / iscale);
    } else {
      b.d = f2h(0.f);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      // ggml keeps the signed scale in an int8_t; -32..31 fits.
      const float d = h2f(b.d) * static_cast<float>(q3k_scale(b.scales, j));
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3);
        L[16 * j + ii] = static_cast<int8_t>(l + 4);
      }
    }
    // High bit of element e goes to bit e/32 of hmask[e % 32]; the rest is 2-bit packed.
    std::memset(b.hmask, 0, sizeof b.hmask);
    uint8_t L2[kQK_K];
    for (int e = 0; e < kQK_K; ++e) {
      int v = L[e];
      if (v > 3) {
        b.hmask[e % 32] = static_cast<uint8_t>(b.hmask[e % 32] | (1u << (e / 32)));
        v -= 4;
      }
      L2[e] = static_cast<uint8_t>(v);
    }
    pack_2bit(L2, b.qs);
    store_block(y, i, b);
  }
}

void dequantize_row_q3_K(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<block_q3_K>(x, i);
    const float d_all = h2f(b.d);
    const uint8_t* q = b.qs;
    int is = 0;
    int bit = 0;  // hmask bit = index of the 32-element group
    for (int n = 0; n < kQK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, ++bit) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * static_cast<float>(q3k_scale(b.scales, is++));
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int lo = (q[l] >> shift) & 3;
            const int v = lo - (((b.hmask[l] >> bit) & 1) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

}  // namespace cke
