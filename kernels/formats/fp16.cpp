// IEEE half and bfloat16 <-> float, bit-exact with ggml's scalar conversions
// (ggml_compute_fp16_to_fp32 / fp32_to_fp16: round to nearest even; BF16: RNE, NaN quiet).
#include <cstring>

#include "kernels/formats/quant.h"

namespace cke {
namespace {
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  // Inf / NaN. ggml's scalar conversion rebuilds the value with a float multiply, which
  // quiets a signalling NaN (so does F16C's vcvtph2ps): set the quiet bit likewise.
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0));
  if (exp == 0) {
    if (mant == 0) return float_of(sign);
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = float(mant) * float_of(0x33800000u);  // 2^-24
    return sign ? -v : v;
  }
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
  // Same algorithm as ggml's fp32_to_fp16 (from FP16 library): scale to move the rounding
  // point, let the FPU round to nearest even, then rebuild the bits.
  const float scale_to_inf = float_of(0x77800000u);   // 2^112
  const float scale_to_zero = float_of(0x08800000u);  // 2^-110
  float base = (f < 0 ? -f : f) * scale_to_inf;
  base *= scale_to_zero;
  const uint32_t w = bits_of(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xff000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = float_of((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = bits_of(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007c00u;
  const uint32_t mantissa_bits = bits & 0x00000fffu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return uint16_t((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

float bf16_to_fp32(uint16_t h) {
  return float_of(uint32_t(h) << 16);
}

uint16_t fp32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 64);  // NaN: force quiet
  return uint16_t((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

}  // namespace cke
