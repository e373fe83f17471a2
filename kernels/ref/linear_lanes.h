// Scalar models of the few SIMD idioms whose exact semantics decide ggml's bits.
// Private to kernels/ref/linear*.cpp and act_quant.cpp.
//
// Every helper reproduces one x86 instruction sequence of ggml's AVX2/AVX-512 build
// element for element; the comment names it. Float expressions are written in the order
// the instructions execute (the project builds with -ffp-contract=off, so a*b + c here is
// two roundings and std::fma is one, as in the vector code).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace cke::ref::lanes {

// hsum_float_8 (quants.c): 128-bit halves added, then movehl, then movehdup.
inline float hsum8(const float a[8]) {
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

// The 4-lane tail of the q4_K min accumulator: movehl then movehdup.
inline float hsum4(const float a[4]) {
  return (a[0] + a[2]) + (a[1] + a[3]);
}

// GCC 12's _mm512_reduce_add_ps: upper 256 onto lower, upper 128 onto lower, then lanes
// {2,3} onto {0,1}, then lane 1 + lane 0.
inline float reduce16(const float v[16]) {
  float t[8], u[4];
  for (int i = 0; i < 8; ++i) t[i] = v[i + 8] + v[i];
  for (int i = 0; i < 4; ++i) u[i] = t[i + 4] + t[i];
  return (u[0] + u[2]) + (u[1] + u[3]);
}

// (v)maxps a, b: returns b unless a > b, so a NaN in either operand yields b.
inline float maxps(float a, float b) {
  return a > b ? a : b;
}

// vcvtps2dq on an already rounded value: out of int32 range or NaN gives INT32_MIN.
inline int32_t cvtps_epi32(float r) {
  if (!(r >= -2147483648.0f && r < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(r);
}

// vpacksswb(vpackssdw(.)): signed saturation of an int32 to int8.
inline int8_t sat_i8(int32_t v) {
  return static_cast<int8_t>(v < -128 ? -128 : (v > 127 ? 127 : v));
}

// One byte pair of mul_sum_i8_pairs_float: vpsignb makes x unsigned (|x|, read as u8 so
// -128 -> 128) and moves its sign onto y, wrapping -(-128) to -128; vpdpbusd then
// multiplies u8 by s8 exactly. The result is x*y except for y == -128 with x < 0, where
// the wrapped sign gives -(x*y). (Activations hold -128 only after a NaN/Inf input.)
inline int32_t mul_sign_i8(int8_t x, int8_t y) {
  const int32_t p = static_cast<int32_t>(x) * y;
  return (y == -128 && x < 0) ? -p : p;
}

// Denormals are zero / flush to zero (vdpbf16ps ignores MXCSR and always does both).
inline float flush_denormal(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

// fma(a, b, c) of normal (or zero) a, b, c with x86's flush to zero: a result that is tiny
// is ±0, and x86 detects tininess *after rounding*, as if the exponent were unbounded
// (Intel SDM vol. 1, 4.9.1.5). That differs from "the rounded result is subnormal" just
// below FLT_MIN: an exact x in [FLT_MIN - 2^-150, FLT_MIN - 2^-151) rounds up to FLT_MIN
// in the subnormal grid (spacing 2^-149) but stays under FLT_MIN on the unbounded one
// (spacing 2^-150), so it is flushed. Computed exactly: where the rounded result is ±FLT_MIN,
// the same fma with the smaller factor and c scaled by 2^24 rounds on the unbounded grid
// (its result is normal; the scaling is exact and cannot overflow for a result that small).
inline float fma_ftz(float a, float b, float c) {
  const float r = std::fma(a, b, c);
  const float fmin = std::numeric_limits<float>::min();
  if (!(std::fabs(r) <= fmin)) return r;  // not tiny (or NaN)
  if (std::fabs(r) < fmin) return std::copysign(0.0f, r);
  const bool a_small = std::fabs(a) <= std::fabs(b);
  const float s = std::fma(a_small ? a * 0x1p24f : a, a_small ? b : b * 0x1p24f, c * 0x1p24f);
  return std::fabs(s) < fmin * 0x1p24f ? std::copysign(0.0f, s) : r;
}

// One fp32 lane of vdpbf16ps: the odd pair is added first, then the even pair, each as an
// FMA with denormal inputs read as zero and a tiny result flushed to zero (fma_ftz).
// Checked against the instruction on an AVX512-BF16 CPU (AMD Zen 5), including the results
// just below FLT_MIN: tests/kernels_linear/test_dpbf16_lane.cpp.
inline float dpbf16_lane(float acc, float x_even, float x_odd, float y_even, float y_odd) {
  acc = flush_denormal(acc);
  acc = fma_ftz(flush_denormal(x_odd), flush_denormal(y_odd), acc);
  return fma_ftz(flush_denormal(x_even), flush_denormal(y_even), acc);
}

inline float bf16_bits_to_f32(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// q4_K / q5_K: the 6-bit scales and mins of the 8 sub-blocks, unpacked from the 12-byte
// `scales` field with ggml's utmp trick (kmask1..3) into sc[0..7] and mn[0..7]. The
// repacked q4_K_8x8 kernels apply the same trick to their re-laid-out copy of these bytes.
inline void unpack_scales_k4(const uint8_t packed[12], uint8_t sc[8], uint8_t mn[8]) {
  constexpr uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
  uint32_t utmp[4];
  std::memcpy(utmp, packed, 12);
  utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
  const uint32_t uaux = utmp[1] & kmask1;
  utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
  utmp[2] = uaux;
  utmp[0] &= kmask1;
  uint8_t bytes[16];
  std::memcpy(bytes, utmp, 16);
  std::memcpy(sc, bytes, 8);
  std::memcpy(mn, bytes + 8, 8);
}

}  // namespace cke::ref::lanes
