// fp16 / bf16 scalar conversions against independent oracles:
// - fp16: the CPU's F16C instructions (vcvtph2ps / vcvtps2ph, round to nearest even), over
//   all 65536 halves and a few million floats (every exponent, ties, subnormals, overflow).
// - bf16: a double-precision "pick the nearer neighbour, ties to even" oracle.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kernels/formats/quant.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

__attribute__((target("f16c"))) float f16c_to_f32(uint16_t h) {
  return _cvtsh_ss(h);
}
__attribute__((target("f16c"))) uint16_t f16c_from_f32(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

bool have_f16c() {
  return __builtin_cpu_supports("f16c");
}

bool is_nan_half(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

TEST(Fp16, AllHalvesToFloatMatchF16C) {
  if (!have_f16c()) GTEST_SKIP() << "CPU without F16C";
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t ours = bits(cke::fp16_to_fp32(static_cast<uint16_t>(h)));
    const uint32_t ref = bits(f16c_to_f32(static_cast<uint16_t>(h)));
    if (ours != ref && ++mismatches < 10)
      ADD_FAILURE() << std::hex << "half 0x" << h << ": ours 0x" << ours << " f16c 0x" << ref;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Fp16, AllHalvesRoundTripExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = cke::fp32_to_fp16(cke::fp16_to_fp32(static_cast<uint16_t>(h)));
    if (is_nan_half(static_cast<uint16_t>(h))) {
      // ggml's scalar conversion maps every NaN to the canonical quiet NaN, sign kept.
      EXPECT_EQ(back, (h & 0x8000) | 0x7e00) << std::hex << h;
    } else {
      EXPECT_EQ(back, h) << std::hex << h;
    }
  }
}

// Floats to half: every float whose low 13 mantissa bits are around the rounding point
// (exact ties, one below, one above) for every exponent and sign, plus random bit patterns.
TEST(Fp16, FloatsToHalfMatchF16C) {
  if (!have_f16c()) GTEST_SKIP() << "CPU without F16C";
  int mismatches = 0;
  auto check = [&](uint32_t u) {
    const float f = from_bits(u);
    if (std::isnan(f)) return;  // F16C keeps the payload; ggml's scalar code does not
    const uint16_t ours = cke::fp32_to_fp16(f);
    const uint16_t ref = f16c_from_f32(f);
    if (ours != ref && ++mismatches < 10)
      ADD_FAILURE() << std::hex << "float 0x" << u << ": ours 0x" << ours << " f16c 0x" << ref;
  };
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x17ff, 0x0800};
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t hi = 0; hi < 1024; hi += 7)
        for (uint32_t lo : lows) check((sign << 31) | (e << 23) | (hi << 13) | lo);
  std::mt19937 rng(12345);
  for (int i = 0; i < 2'000'000; ++i) check(rng());
  // Dense sweep of the range where fp16 has subnormals and the overflow boundary.
  for (uint32_t u = bits(1e-8f); u < bits(1e-4f); u += 37) check(u);
  for (uint32_t u = bits(65000.f); u < bits(70000.f); u += 3) check(u);
  EXPECT_EQ(mismatches, 0);
}

TEST(Fp16, NaNHandling) {
  const uint16_t qnan = cke::fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(qnan & 0x7fff, 0x7e00);
  EXPECT_EQ(cke::fp32_to_fp16(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  // Signalling half NaN 0x7c01 widens to a quiet NaN with the payload moved up.
  EXPECT_EQ(bits(cke::fp16_to_fp32(0x7c01)), 0x7fc02000u);
  EXPECT_EQ(bits(cke::fp16_to_fp32(0x7c00)), 0x7f800000u);
  EXPECT_EQ(bits(cke::fp16_to_fp32(0xfc00)), 0xff800000u);
}

// Independent bf16 oracle: the two bf16 neighbours of f, chosen by distance in double.
uint16_t bf16_oracle(float f) {
  const uint32_t u = bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint16_t down = static_cast<uint16_t>(u >> 16);  // truncation (toward zero)
  if ((u & 0xffff) == 0) return down;
  const uint16_t up = static_cast<uint16_t>(down + 1);  // next magnitude (may become Inf)
  const double v = std::fabs(static_cast<double>(f));
  const double vd = std::fabs(static_cast<double>(from_bits(uint32_t(down) << 16)));
  double vu;
  if ((up & 0x7fff) == 0x7f80) {
    vu = std::ldexp(1.0, 128);  // rounding up overflows: treat Inf as 2^128 for distance
  } else {
    vu = std::fabs(static_cast<double>(from_bits(uint32_t(up) << 16)));
  }
  if (v - vd < vu - v) return down;
  if (v - vd > vu - v) return up;
  return (down & 1) ? up : down;
}

TEST(Bf16, FloatsToBf16MatchOracle) {
  int mismatches = 0;
  auto check = [&](uint32_t u) {
    const uint16_t ours = cke::fp32_to_bf16(from_bits(u));
    const uint16_t ref = bf16_oracle(from_bits(u));
    if (ours != ref && ++mismatches < 10)
      ADD_FAILURE() << std::hex << "float 0x" << u << ": ours 0x" << ours << " oracle 0x" << ref;
  };
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t hi = 0; hi < 128; ++hi)
        for (uint32_t lo : lows) check((sign << 31) | (e << 23) | (hi << 16) | lo);
  std::mt19937 rng(777);
  for (int i = 0; i < 2'000'000; ++i) check(rng());
  EXPECT_EQ(mismatches, 0);
}

TEST(Bf16, WidenIsExactShift) {
  for (uint32_t h = 0; h < 65536; ++h)
    EXPECT_EQ(bits(cke::bf16_to_fp32(static_cast<uint16_t>(h))), h << 16);
  // Subnormal floats are rounded, not flushed (ggml's current rule).
  EXPECT_EQ(cke::fp32_to_bf16(from_bits(0x00018000u)), 0x0002);
  EXPECT_EQ(cke::fp32_to_bf16(from_bits(0x00008000u)), 0x0000);  // tie to even
  // Signalling NaN is quieted; overflow rounds to Inf.
  EXPECT_EQ(cke::fp32_to_bf16(from_bits(0x7f800001u)), 0x7fc0);
  EXPECT_EQ(cke::fp32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);
}

}  // namespace
