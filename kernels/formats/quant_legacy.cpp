// The 32-element formats: q4_0, q4_1, q5_0, q5_1, q8_0 (ggml's "legacy" quants).
//
// Quantizers are ggml's quantize_row_*_ref, which is what llama-quantize runs for these
// types without an imatrix. Their float -> int steps are C casts of a float, which ggml's
// x86 build performs with truncation (cvttss2si); see qutil::cvtt_*. Dequantizers are
// one float multiply (and one add for the _1 types) per element: fl(q*d) or fl(fl(q*d)+m).
#include <cmath>
#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/quant_rows.h"
#include "kernels/formats/quant_util.h"

namespace cke {

using qutil::cvtt_i8;
using qutil::cvtt_u8;
using qutil::f2h;
using qutil::h2f;
using qutil::load_block;
using qutil::store_block;

namespace {

// Signed value of largest magnitude in a block (first one wins; NaN never wins).
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// min/max of a block, NaN ignored (comparisons with NaN are false).
inline void min_max(const float* x, int n, float* mn, float* mx) {
  float lo = 3.402823466e+38f, hi = -3.402823466e+38f;  // FLT_MAX, -FLT_MAX
  for (int j = 0; j < n; ++j) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

}  // namespace

// ---------------------------------------------------------------- q4_0
void quantize_row_q4_0_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK4_0;
  for (int64_t i = 0; i < nb; ++i, x += kQK4_0) {
    const float max = signed_absmax(x, kQK4_0);
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block_q4_0 b;
    b.d = f2h(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      // ggml: MIN(15, (int8_t)(x*id + 8.5f)), i.e. truncation of a value >= 0.
      const int8_t q0 = cvtt_i8(x[j] * id + 8.5f);
      const int8_t q1 = cvtt_i8(x[j + kQK4_0 / 2] * id + 8.5f);
      const uint8_t xi0 = static_cast<uint8_t>(q0 < 15 ? q0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(q1 < 15 ? q1 : 15);
      b.qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
    store_block(y, i, b);
  }
}

void dequantize_row_q4_0(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK4_0;
  for (int64_t i = 0; i < nb; ++i, y += kQK4_0) {
    const auto b = load_block<block_q4_0>(x, i);
    const float d = h2f(b.d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
      y[j + kQK4_0 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

// ---------------------------------------------------------------- q4_1
void quantize_row_q4_1_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK4_1;
  for (int64_t i = 0; i < nb; ++i, x += kQK4_1) {
    float min, max;
    min_max(x, kQK4_1, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block_q4_1 b;
    b.d = f2h(d);
    b.m = f2h(min);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      const int8_t q0 = cvtt_i8((x[j] - min) * id + 0.5f);
      const int8_t q1 = cvtt_i8((x[j + kQK4_1 / 2] - min) * id + 0.5f);
      const uint8_t xi0 = static_cast<uint8_t>(q0 < 15 ? q0 : 15);
      const uint8_t xi1 = static_cast<uint8_t>(q1 < 15 ? q1 : 15);
      b.qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
    store_block(y, i, b);
  }
}

void dequantize_row_q4_1(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK4_1;
  for (int64_t i = 0; i < nb; ++i, y += kQK4_1) {
    const auto b = load_block<block_q4_1>(x, i);
    const float d = h2f(b.d);
    const float m = h2f(b.m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
      y[j + kQK4_1 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

// ---------------------------------------------------------------- q5_0
void quantize_row_q5_0_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK5_0;
  for (int64_t i = 0; i < nb; ++i, x += kQK5_0) {
    const float max = signed_absmax(x, kQK5_0);
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block_q5_0 b;
    b.d = f2h(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const int8_t q0 = cvtt_i8(x[j] * id + 16.5f);
      const int8_t q1 = cvtt_i8(x[j + kQK5_0 / 2] * id + 16.5f);
      const uint8_t xi0 = static_cast<uint8_t>(q0 < 31 ? q0 : 31);
      const uint8_t xi1 = static_cast<uint8_t>(q1 < 31 ? q1 : 31);
      b.qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + kQK5_0 / 2);
    }
    std::memcpy(b.qh, &qh, sizeof qh);  // little-endian host, as GGUF
    store_block(y, i, b);
  }
}

void dequantize_row_q5_0(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK5_0;
  for (int64_t i = 0; i < nb; ++i, y += kQK5_0) {
    const auto b = load_block<block_q5_0>(x, i);
    const float d = h2f(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = static_cast<float>(((b.qs[j] & 0x0F) | hi0) - 16) * d;
      y[j + kQK5_0 / 2] = static_cast<float>(((b.qs[j] >> 4) | hi1) - 16) * d;
    }
  }
}

// ---------------------------------------------------------------- q5_1
void quantize_row_q5_1_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK5_1;
  for (int64_t i = 0; i < nb; ++i, x += kQK5_1) {
    float min, max;
    min_max(x, kQK5_1, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block_q5_1 b;
    b.d = f2h(d);
    b.m = f2h(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      // ggml: (uint8_t)(x + 0.5f) with no clamp; the value is at most 31.5.
      const uint8_t xi0 = cvtt_u8((x[j] - min) * id + 0.5f);
      const uint8_t xi1 = cvtt_u8((x[j + kQK5_1 / 2] - min) * id + 0.5f);
      b.qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + kQK5_1 / 2);
    }
    std::memcpy(b.qh, &qh, sizeof qh);
    store_block(y, i, b);
  }
}

void dequantize_row_q5_1(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK5_1;
  for (int64_t i = 0; i < nb; ++i, y += kQK5_1) {
    const auto b = load_block<block_q5_1>(x, i);
    const float d = h2f(b.d);
    const float m = h2f(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = static_cast<float>((b.qs[j] & 0x0F) | hi0) * d + m;
      y[j + kQK5_1 / 2] = static_cast<float>((b.qs[j] >> 4) | hi1) * d + m;
    }
  }
}

// ---------------------------------------------------------------- q8_0
void quantize_row_q8_0_ref(const float* x, void* y, int64_t k) {
  const int64_t nb = k / kQK8_0;
  for (int64_t i = 0; i < nb; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = qutil::macro_max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    block_q8_0 b;
    b.d = f2h(d);
    // roundf: half away from zero (not the SIMD quantizer's round-half-even).
    for (int j = 0; j < kQK8_0; ++j) b.qs[j] = cvtt_i8(std::round(x[j] * id));
    store_block(y, i, b);
  }
}

void dequantize_row_q8_0(const void* x, float* y, int64_t k) {
  const int64_t nb = k / kQK8_0;
  for (int64_t i = 0; i < nb; ++i, y += kQK8_0) {
    const auto b = load_block<block_q8_0>(x, i);
    const float d = h2f(b.d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

}  // namespace cke
