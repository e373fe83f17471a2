// ggml_vec_dot_q{2,3,4,5,6}_K_q8_K, __AVX2__ paths of ggml-cpu/arch/x86/quants.c.
//
// All five share one integer layout: a super-block of 256 is processed as eight 32-byte
// vectors (vpmaddubsw, then vpmaddwd with the sub-block scales), so int32 lane l receives
// elements 32c + 4l .. 32c + 4l + 3 of every 32-element group c, each group times its own
// sub-block scale. Integer sums are exact (no int16 saturation is reachable with these
// value ranges), so each kernel below decodes the integer weights and per-element scales
// of a super-block, forms those 8 lane sums, and then does the float part in ggml's order.
// q6_K is the one twist: its -32 offset is subtracted per lane through the bsums, which
// puts it in different lanes than the elements (see there). Checked bit for bit against
// llama.cpp's q6_K matmuls in tests/kernels_linear (synth-llama-Q4_K_M checkpoints).
#include <cmath>
#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/ref/linear_dot.h"
#include "kernels/ref/linear_lanes.h"

namespace cke::ref {
namespace {

// lane l = sum over groups c of scale[c*32 + 4l] * sum_e w[32c+4l+e] * a[32c+4l+e], with
// `scale_of(e)` the scale of element e (constant over 4 consecutive elements).
template <class W, class ScaleOf>
void lane_sums(const W* w, const int8_t* a, ScaleOf scale_of, int32_t out[8]) {
  for (int l = 0; l < 8; ++l) out[l] = 0;
  for (int c = 0; c < 8; ++c)
    for (int l = 0; l < 8; ++l) {
      const int e0 = 32 * c + 4 * l;
      int32_t s = 0;
      for (int e = e0; e < e0 + 4; ++e) s += static_cast<int32_t>(w[e]) * a[e];
      out[l] += scale_of(e0) * s;
    }
}

void fma_lanes(float acc[8], float d, const int32_t isum[8]) {
  for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(isum[l]), acc[l]);
}

// Q8_K bsums of 16 elements, paired into the 32-element sums of sub-block j (vphaddw).
int32_t bsum32(const block_q8_K& a, int j) {
  return a.bsums[2 * j] + a.bsums[2 * j + 1];
}

}  // namespace

float vec_dot_q2_K_q8_K(int64_t n, const block_q2_K* w, const block_q8_K* a) {
  float acc[8] = {};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q2_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = y.d * fp16_to_fp32(x.d);
    const float dmin = -y.d * fp16_to_fp32(x.dmin);
    // Mins first: vpmaddwd(mins, bsums) -> lane l = m[2l]*bsum[2l] + m[2l+1]*bsum[2l+1].
    int32_t prod[8];
    for (int l = 0; l < 8; ++l)
      prod[l] =
          (x.scales[2 * l] >> 4) * y.bsums[2 * l] + (x.scales[2 * l + 1] >> 4) * y.bsums[2 * l + 1];
    fma_lanes(acc, dmin, prod);
    // Element 128h + 32s + m has its 2 bits at 2s of qs[32h + m]; sub-blocks of 16.
    uint8_t q[kQK_K];
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 4; ++s)
        for (int m = 0; m < 32; ++m) q[128 * h + 32 * s + m] = (x.qs[32 * h + m] >> (2 * s)) & 3;
    int32_t isum[8];
    lane_sums(
        q, y.qs, [&x](int e) { return static_cast<int32_t>(x.scales[e / 16] & 0xF); }, isum);
    fma_lanes(acc, d, isum);
  }
  return lanes::hsum8(acc);
}

float vec_dot_q3_K_q8_K(int64_t n, const block_q3_K* w, const block_q8_K* a) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  float acc[8] = {};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q3_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = y.d * fp16_to_fp32(x.d);
    // 16 6-bit scales, low 4 bits from scales[0..7], high 2 bits from scales[8..11].
    uint32_t aux[3];
    std::memcpy(aux, x.scales, 12);
    const uint32_t s4[4] = {
        (aux[0] & kmask2) | (((aux[2] >> 0) & kmask1) << 4),
        (aux[1] & kmask2) | (((aux[2] >> 2) & kmask1) << 4),
        ((aux[0] >> 4) & kmask2) | (((aux[2] >> 4) & kmask1) << 4),
        ((aux[1] >> 4) & kmask2) | (((aux[2] >> 6) & kmask1) << 4),
    };
    uint8_t sc_bytes[16];
    std::memcpy(sc_bytes, s4, 16);
    int32_t sc[16];
    for (int k = 0; k < 16; ++k) sc[k] = static_cast<int8_t>(sc_bytes[k] - 32);
    // Element 128h + 32s + m: low 2 bits as q2_K, minus 4 unless bit (4h + s) of hmask[m].
    int8_t q[kQK_K];
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 4; ++s)
        for (int m = 0; m < 32; ++m) {
          const int lo = (x.qs[32 * h + m] >> (2 * s)) & 3;
          const int hi = (x.hmask[m] >> (4 * h + s)) & 1;
          q[128 * h + 32 * s + m] = static_cast<int8_t>(lo - (hi ? 0 : 4));
        }
    int32_t isum[8];
    lane_sums(
        q, y.qs, [&sc](int e) { return sc[e / 16]; }, isum);
    fma_lanes(acc, d, isum);
  }
  return lanes::hsum8(acc);
}

float vec_dot_q4_K_q8_K(int64_t n, const block_q4_K* w, const block_q8_K* a) {
  float acc[8] = {};
  float acc_m[4] = {};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q4_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = y.d * fp16_to_fp32(x.d);
    const float dmin = -y.d * fp16_to_fp32(x.dmin);
    uint8_t sc[8], mn[8];
    lanes::unpack_scales_k4(x.scales, sc, mn);
    // 4-lane min accumulator: lane l = m[2l]*bsum32(2l) + m[2l+1]*bsum32(2l+1).
    for (int l = 0; l < 4; ++l) {
      const int32_t p = mn[2 * l] * bsum32(y, 2 * l) + mn[2 * l + 1] * bsum32(y, 2 * l + 1);
      acc_m[l] = std::fma(dmin, static_cast<float>(p), acc_m[l]);
    }
    // Element 64c + m: low nibble of qs[32c + m]; 64c + 32 + m: its high nibble.
    uint8_t q[kQK_K];
    for (int c = 0; c < 4; ++c)
      for (int m = 0; m < 32; ++m) {
        q[64 * c + m] = x.qs[32 * c + m] & 0xF;
        q[64 * c + 32 + m] = x.qs[32 * c + m] >> 4;
      }
    int32_t isum[8];
    lane_sums(
        q, y.qs, [&sc](int e) { return static_cast<int32_t>(sc[e / 32]); }, isum);
    fma_lanes(acc, d, isum);
  }
  return lanes::hsum8(acc) + lanes::hsum4(acc_m);
}

float vec_dot_q5_K_q8_K(int64_t n, const block_q5_K* w, const block_q8_K* a) {
  float acc[8] = {};
  float summs = 0;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q5_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = y.d * fp16_to_fp32(x.d);
    const float dmin = -y.d * fp16_to_fp32(x.dmin);
    uint8_t sc[8], mn[8];
    lanes::unpack_scales_k4(x.scales, sc, mn);
    int32_t mins = 0;
    for (int j = 0; j < 8; ++j) mins += mn[j] * bsum32(y, j);
    // `summs += dmin * int`: scalar, contracted to one FMA by GCC (see q4_1).
    summs = std::fma(dmin, static_cast<float>(mins), summs);
    // As q4_K, plus bit 2c (low half) / 2c + 1 (high half) of qh[m] as bit 4.
    uint8_t q[kQK_K];
    for (int c = 0; c < 4; ++c)
      for (int m = 0; m < 32; ++m) {
        q[64 * c + m] =
            static_cast<uint8_t>((x.qs[32 * c + m] & 0xF) | (((x.qh[m] >> (2 * c)) & 1) << 4));
        q[64 * c + 32 + m] =
            static_cast<uint8_t>((x.qs[32 * c + m] >> 4) | (((x.qh[m] >> (2 * c + 1)) & 1) << 4));
      }
    int32_t isum[8];
    lane_sums(
        q, y.qs, [&sc](int e) { return static_cast<int32_t>(sc[e / 32]); }, isum);
    fma_lanes(acc, d, isum);
  }
  return lanes::hsum8(acc) + summs;
}

float vec_dot_q6_K_q8_K(int64_t n, const block_q6_K* w, const block_q8_K* a) {
  float acc[8] = {};
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q6_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = y.d * fp16_to_fp32(x.d);
    // Element 128h + 32s + m: 4 low bits from ql[64h + m] (s = 0, 2) or ql[64h + 32 + m]
    // (s = 1, 3), low nibble for s < 2; 2 high bits at 2s of qh[32h + m]; q in 0..63.
    uint8_t q[kQK_K];
    for (int h = 0; h < 2; ++h)
      for (int s = 0; s < 4; ++s)
        for (int m = 0; m < 32; ++m) {
          const uint8_t l = x.ql[64 * h + 32 * (s & 1) + m];
          const int lo = s < 2 ? (l & 0xF) : (l >> 4);
          const int hi = (x.qh[32 * h + m] >> (2 * s)) & 3;
          q[128 * h + 32 * s + m] = static_cast<uint8_t>(lo | (hi << 4));
        }
    int32_t isum[8];
    lane_sums(
        q, y.qs, [&x](int e) { return static_cast<int32_t>(x.scales[e / 16]); }, isum);
    // The -32 offset goes through the bsums: q8sclsub = vpmaddwd(bsums, scales) << 5, so
    // lane l loses 32 * (bsum[2l]*sc[2l] + bsum[2l+1]*sc[2l+1]) -- the offset of elements
    // 32l..32l+31, not of the elements the lane dotted.
    for (int l = 0; l < 8; ++l)
      isum[l] -= 32 * (y.bsums[2 * l] * x.scales[2 * l] + y.bsums[2 * l + 1] * x.scales[2 * l + 1]);
    fma_lanes(acc, d, isum);
  }
  return lanes::hsum8(acc);
}

}  // namespace cke::ref
