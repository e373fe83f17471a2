// Activation quantizers of ggml's CPU matmul path (see act_quant.h for the rules).
#include "kernels/ref/act_quant.h"

#include <cmath>
#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/ref/linear_lanes.h"

namespace cke {
namespace {

using ref::lanes::maxps;

// amax of a 32-block as the AVX code finds it: |v| of four 8-lane vectors folded with
// vmaxps (lane-wise, in vector order), then the 8 lanes folded hi-onto-lo, movehl,
// movehdup. The operand order matters only for NaN (maxps returns its second operand).
float simd_amax32(const float* x) {
  float m[8];
  for (int l = 0; l < 8; ++l) {
    m[l] = std::fabs(x[l]);
    for (int v = 1; v < 4; ++v) m[l] = maxps(m[l], std::fabs(x[8 * v + l]));
  }
  float n[4];
  for (int i = 0; i < 4; ++i) n[i] = maxps(m[i + 4], m[i]);
  const float p0 = maxps(n[0], n[2]);
  const float p1 = maxps(n[1], n[3]);
  return maxps(p0, p1);
}

// The common part of quantize_row_q8_0 / q8_1 (x86 AVX2 path) for one block: fills q with
// the int32 values vcvtps2dq produced (before the saturating packs) and returns the float d.
float quantize_block_q8(const float* x, int32_t q[32]) {
  const float amax = simd_amax32(x);
  const float d = amax / 127.f;
  const float id = amax != 0.0f ? 127.f / amax : 0.0f;
  // vroundps(_MM_ROUND_NEAREST) = nearbyint in the default rounding mode (half to even).
  for (int e = 0; e < 32; ++e) q[e] = ref::lanes::cvtps_epi32(std::nearbyint(x[e] * id));
  return d;
}

}  // namespace

void act_convert_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void act_convert_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

void act_quantize_q8_0(const float* x, block_q8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
    int32_t q[32];
    const float d = quantize_block_q8(x, q);
    y[b].d = fp32_to_fp16(d);
    for (int e = 0; e < 32; ++e) y[b].qs[e] = ref::lanes::sat_i8(q[e]);
  }
}

void act_quantize_q8_1(const float* x, block_q8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_1; ++b, x += kQK8_1) {
    int32_t q[32];
    const float d = quantize_block_q8(x, q);
    // hsum_i32_8 of the unsaturated int32 lanes (vpaddd wraps).
    uint32_t sum = 0;
    for (int e = 0; e < 32; ++e) sum += static_cast<uint32_t>(q[e]);
    y[b].d = fp32_to_fp16(d);
    y[b].s = fp32_to_fp16(d * static_cast<float>(static_cast<int32_t>(sum)));
    for (int e = 0; e < 32; ++e) y[b].qs[e] = ref::lanes::sat_i8(q[e]);
  }
}

void act_quantize_q8_K(const float* x, block_q8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    block_q8_K& blk = y[b];
    float max = 0, amax = 0;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {  // strict: the first element of largest magnitude wins; NaN never
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      // ggml leaves bsums unwritten here; they only meet d = 0, so zero is equivalent.
      std::memset(&blk, 0, sizeof blk);
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < kQK_K; ++j) {
      // ggml's nearest_int: add 1.5 * 2^23 and read the mantissa (half to even).
      const float v = iscale * x[j] + 12582912.f;
      int32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      const int q = (bits & 0x007fffff) - 0x00400000;
      blk.qs[j] = static_cast<int8_t>(q < 127 ? q : 127);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += blk.qs[16 * g + i];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
    blk.d = 1 / iscale;
  }
}

// ggml_quantize_mat_q8_K_4x8 (x86 AVX2 path), one row. Lane l (0..7) of its running max
// sees elements 32*sb + 8*v + l in order (sb = 0..7, v = 0..3), folded with vmaxps
// (maxAbs first, new value second). Beside it a lane mask tracks "some positive element
// equals this lane's max": cleared when the max grows, set by vcmpps(maxAbs, v, EQ_OQ).
// The 8 lanes fold to the block max as in the Q8_0 quantizer; iscale is negative iff a
// lane holding the block max has its mask set.
void act_quantize_q8_K_4x8(const float* x, block_q8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    block_q8_K& blk = y[b];
    float m[8];
    bool pos[8];
    for (int l = 0; l < 8; ++l) {
      m[l] = std::fabs(x[l]);
      for (int v = 1; v < 4; ++v) m[l] = maxps(m[l], std::fabs(x[8 * v + l]));
      pos[l] = false;
      for (int v = 0; v < 4; ++v) pos[l] = pos[l] || m[l] == x[8 * v + l];
      for (int sb = 1; sb < 8; ++sb) {
        const float prev = m[l];
        for (int v = 0; v < 4; ++v) m[l] = maxps(m[l], std::fabs(x[32 * sb + 8 * v + l]));
        pos[l] = pos[l] && prev == m[l];
        for (int v = 0; v < 4; ++v) pos[l] = pos[l] || m[l] == x[32 * sb + 8 * v + l];
      }
    }
    float h[4];
    for (int i = 0; i < 4; ++i) h[i] = maxps(m[i + 4], m[i]);
    const float amax = maxps(maxps(h[0], h[2]), maxps(h[1], h[3]));
    bool negative = false;
    for (int l = 0; l < 8; ++l) negative = negative || (pos[l] && amax == m[l]);
    // `amax != 0` is true for NaN, as ggml's `maxScalar ? ... : 0` is.
    float iscale = amax != 0.0f ? 127.f / amax : 0.0f;
    if (negative) iscale = amax != 0.0f ? -127.f / amax : 0.0f;
    blk.d = amax != 0.0f ? 1 / iscale : 0.0f;
    for (int j = 0; j < kQK_K; ++j)
      blk.qs[j] = ref::lanes::sat_i8(ref::lanes::cvtps_epi32(std::nearbyint(x[j] * iscale)));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += blk.qs[16 * g + i];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace cke
