// q6_K (16 sub-blocks of 16, 8-bit scales) and q8_K (the K-quant activation format:
// float32 d, int8 quants, int16 sums of 16), as in ggml-quants.c.
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

// ---------------------------------------------------------------- q6_K
void quantize_row_q6_K_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  int8_t L[kQK_K];
  float scales[kQK_K / 16];

  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    block_q6_K b;
    std::memset(&b, 0, sizeof b);
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      const float scale = kq::make_qx_quants_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
      scales[ib] = scale;
      const float abs_scale = std::fabs(scale);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scale;
      }
    }
    if (max_abs_scale < kq::kGroupMaxEps) {  // all (near) zero: an all-zero block
      b.d = f2h(0.f);
      store_block(y, i, b);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = f2h(1 / iscale);
    for (int ib = 0; ib < kQK_K / 16; ++ib) {
      const int s = nearest_int(iscale * scales[ib]);
      b.scales[ib] = static_cast<int8_t>(s < 127 ? s : 127);  // ggml: MIN(127, ...)
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float d = h2f(b.d) * static_cast<float>(b.scales[j]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        int l = nearest_int(x[16 * j + ii] / d);
        l = l < -32 ? -32 : (l > 31 ? 31 : l);
        L[16 * j + ii] = static_cast<int8_t>(l + 32);
      }
    }
    uint8_t* ql = b.ql;
    uint8_t* qh = b.qh;
    for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int a0 = L[j + l], a1 = L[j + l + 32], a2 = L[j + l + 64], a3 = L[j + l + 96];
        ql[l] = static_cast<uint8_t>((a0 & 0xF) | ((a2 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((a1 & 0xF) | ((a3 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((a0 >> 4) | ((a1 >> 4) << 2) | ((a2 >> 4) << 4) |
                                     ((a3 >> 4) << 6));
      }
    }
    store_block(y, i, b);
  }
}

void dequantize_row_q6_K(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<block_q6_K>(x, i);
    const float d = h2f(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        // fl(fl(d * sc) * q)
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// ---------------------------------------------------------------- q8_K
void quantize_row_q8_K_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    block_q8_K b;
    float max = 0, amax = 0;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof b);  // ggml leaves bsums as they were; we zero them
      store_block(y, i, b);
      continue;
    }
    // -127 (not -128) so that the largest element maps to exactly -+127.
    const float iscale = -127.f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = nearest_int(iscale * x[j]);
      b.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += b.qs[j * 16 + ii];
      b.bsums[j] = static_cast<int16_t>(sum);
    }
    b.d = 1 / iscale;
    store_block(y, i, b);
  }
}

void dequantize_row_q8_K(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK_K;
  for (int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const auto b = load_block<block_q8_K>(x, i);
    for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace cke
