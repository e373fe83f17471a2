// ggml_vec_dot_{q8_0,q4_0,q5_0}_q8_0 and ggml_vec_dot_{q4_1,q5_1}_q8_1, __AVX2__ paths of
// ggml-cpu/arch/x86/quants.c (AVX512-VNNI build: the int8 products go through vpdpbusd).
#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/ref/linear_dot.h"
#include "kernels/ref/linear_lanes.h"

namespace cke::ref {
namespace {

// Signed weights (q8_0, q4_0 - 8, q5_0 - 16) times Q8_0 activations: mul_sum_i8_pairs_float,
// i.e. the vpsignb fix-up then vpdpbusd; lane l = elements 4l..4l+3, exact int32. The
// fix-up only differs from plain products when an activation is -128 (lanes::mul_sign_i8),
// so the common case takes the plain (vectorisable) loop.
void lanes_signed(const int8_t w[32], const int8_t a[32], int32_t out[8]) {
  bool has_min = false;
  for (int e = 0; e < 32; ++e) has_min |= a[e] == -128;
  for (int l = 0; l < 8; ++l) {
    int32_t s = 0;
    if (has_min)
      for (int e = 4 * l; e < 4 * l + 4; ++e) s += lanes::mul_sign_i8(w[e], a[e]);
    else
      for (int e = 4 * l; e < 4 * l + 4; ++e) s += static_cast<int32_t>(w[e]) * a[e];
    out[l] = s;
  }
}

// Unsigned weights (q4_1 0..15, q5_1 0..31) times Q8_1 activations: mul_sum_us8_pairs_float,
// vpdpbusd directly.
void lanes_unsigned(const uint8_t w[32], const int8_t a[32], int32_t out[8]) {
  for (int l = 0; l < 8; ++l) {
    int32_t s = 0;
    for (int e = 4 * l; e < 4 * l + 4; ++e) s += static_cast<int32_t>(w[e]) * a[e];
    out[l] = s;
  }
}

// Nibble order of q4/q5 blocks (bytes_from_nibbles_32): element e < 16 is the low nibble
// of qs[e], element e >= 16 the high nibble of qs[e - 16].
void nibbles(const uint8_t qs[16], uint8_t out[32]) {
  for (int j = 0; j < 16; ++j) {
    out[j] = qs[j] & 0x0F;
    out[j + 16] = qs[j] >> 4;
  }
}

// Bit e of the little-endian uint32 qh (bytes_from_bits_32).
uint32_t high_bits(const uint8_t qh[4]) {
  uint32_t v;
  std::memcpy(&v, qh, sizeof v);
  return v;
}

// acc = fma(d, float(isum), acc) per lane, as `_mm256_fmadd_ps(d, q, acc)`.
void accumulate(float acc[8], float d, const int32_t isum[8]) {
  for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, static_cast<float>(isum[l]), acc[l]);
}

}  // namespace

float vec_dot_q8_0_q8_0(int64_t n, const block_q8_0* w, const block_q8_0* a) {
  float acc[8] = {};
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
    int32_t isum[8];
    lanes_signed(w[b].qs, a[b].qs, isum);
    accumulate(acc, d, isum);
  }
  return lanes::hsum8(acc);
}

float vec_dot_q4_0_q8_0(int64_t n, const block_q4_0* w, const block_q8_0* a) {
  float acc[8] = {};
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
    uint8_t u[32];
    nibbles(w[b].qs, u);
    int8_t q[32];
    for (int e = 0; e < 32; ++e) q[e] = static_cast<int8_t>(u[e] - 8);
    int32_t isum[8];
    lanes_signed(q, a[b].qs, isum);
    accumulate(acc, d, isum);
  }
  return lanes::hsum8(acc);
}

float vec_dot_q5_0_q8_0(int64_t n, const block_q5_0* w, const block_q8_0* a) {
  float acc[8] = {};
  for (int64_t b = 0; b < n / kQK5_0; ++b) {
    const float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
    uint8_t u[32];
    nibbles(w[b].qs, u);
    const uint32_t qh = high_bits(w[b].qh);
    int8_t q[32];
    // The AVX code ORs 0xF0 into elements whose high bit is clear: (nibble | h << 4) - 16.
    for (int e = 0; e < 32; ++e) q[e] = static_cast<int8_t>((u[e] | (((qh >> e) & 1) << 4)) - 16);
    int32_t isum[8];
    lanes_signed(q, a[b].qs, isum);
    accumulate(acc, d, isum);
  }
  return lanes::hsum8(acc);
}

// The min term `summs += m * s` is scalar C inside the vector loop; GCC 12 contracts it to
// vfmadd231ss (-ffp-contract=fast), so it is one FMA per block here.
float vec_dot_q4_1_q8_1(int64_t n, const block_q4_1* w, const block_q8_1* a) {
  float acc[8] = {};
  float summs = 0;
  for (int64_t b = 0; b < n / kQK4_1; ++b) {
    summs = std::fma(fp16_to_fp32(w[b].m), fp16_to_fp32(a[b].s), summs);
    const float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
    uint8_t u[32];
    nibbles(w[b].qs, u);
    int32_t isum[8];
    lanes_unsigned(u, a[b].qs, isum);
    accumulate(acc, d, isum);
  }
  return lanes::hsum8(acc) + summs;
}

float vec_dot_q5_1_q8_1(int64_t n, const block_q5_1* w, const block_q8_1* a) {
  float acc[8] = {};
  float summs = 0;
  for (int64_t b = 0; b < n / kQK5_1; ++b) {
    summs = std::fma(fp16_to_fp32(w[b].m), fp16_to_fp32(a[b].s), summs);
    uint8_t u[32];
    nibbles(w[b].qs, u);
    const uint32_t qh = high_bits(w[b].qh);
    for (int e = 0; e < 32; ++e) u[e] = static_cast<uint8_t>(u[e] | (((qh >> e) & 1) << 4));
    const float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
    int32_t isum[8];
    lanes_unsigned(u, a[b].qs, isum);
    accumulate(acc, d, isum);
  }
  return lanes::hsum8(acc) + summs;
}

}  // namespace cke::ref
