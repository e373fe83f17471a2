// Small helpers shared by the reference quantizers, each matching one ggml idiom exactly.
//
// Byte identity with llama-quantize depends on reproducing ggml's *expressions*, not only
// its math: the same operand order, float vs int promotions, and the exact behaviour of
// its MIN/MAX macros and float->int conversions on NaN. Those idioms live here.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/formats/quant.h"

namespace cke::qutil {

// ggml's nearest_int: round to nearest even by adding 1.5 * 2^23 and reading the mantissa.
// Only meaningful for |f| <= 2^22 (ggml asserts that in debug builds); outside that range
// and for NaN/Inf the result is whatever the bits say, exactly as in ggml (the default
// quiet NaN -> 0, other NaNs -> their payload bits, +-Inf -> -2^22).
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// ggml's MAX(a, b) / MIN(a, b) macros on floats: `a > b ? a : b`, `a < b ? a : b`. With a
// NaN operand they return b, unlike std::max/std::min; the quantizers rely on that.
inline float macro_max(float a, float b) {
  return a > b ? a : b;
}
inline float macro_min(float a, float b) {
  return a < b ? a : b;
}

// C float -> integer conversion as x86-64 performs it (cvttss2si): truncation toward zero,
// and the "integer indefinite" INT32_MIN for NaN and out-of-range values (undefined
// behaviour in C, but this is what ggml's x86 build computes). ggml converts floats to
// int8_t/uint8_t through this and keeps the low byte.
inline int32_t cvtt_i32(float f) {
  if (!(f > -2147483904.f && f < 2147483648.f)) return INT32_MIN;
  return static_cast<int32_t>(f);
}
inline int8_t cvtt_i8(float f) {
  return static_cast<int8_t>(cvtt_i32(f));
}
inline uint8_t cvtt_u8(float f) {
  return static_cast<uint8_t>(cvtt_i32(f));
}

inline float h2f(uint16_t h) {
  return fp16_to_fp32(h);
}
inline uint16_t f2h(float f) {
  return fp32_to_fp16(f);
}

// Blocks are copied in and out with memcpy so rows need no particular alignment.
template <class B>
inline B load_block(const void* row, int64_t i) {
  B b;
  std::memcpy(&b, static_cast<const uint8_t*>(row) + i * sizeof(B), sizeof(B));
  return b;
}
template <class B>
inline void store_block(void* row, int64_t i, const B& b) {
  std::memcpy(static_cast<uint8_t*>(row) + i * sizeof(B), &b, sizeof(B));
}

// 6-bit scale and min of sub-block j (0..7) from the 12-byte `scales` field of q4_K/q5_K:
// j < 4: low 6 bits of bytes j and j+4; j >= 4: a nibble of byte j+4 plus the top 2 bits of
// bytes j-4 (scale) and j (min).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

}  // namespace cke::qutil
