// The reference lane of vdpbf16ps (kernels/ref/linear_lanes.h: dpbf16_lane, fma_ftz) against
// the hardware: the instruction itself where the host has AVX512-BF16, and on any host an
// FMA run with MXCSR's DAZ and FTZ set (x86's own flush, tininess after rounding). The
// cases that matter are the results just below FLT_MIN, where "flush what rounds to a
// subnormal" and x86's rule differ.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "kernels/ref/linear_lanes.h"

namespace cke {
namespace {

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}
uint16_t bf16(float f) {
  return uint16_t(bits(f) >> 16);
}
float widen(uint16_t h) {
  return from_bits(uint32_t(h) << 16);
}

// Both steps of one lane with MXCSR.DAZ|FTZ: what vdpbf16ps computes, by x86's flush.
__attribute__((target("fma"))) float lane_mxcsr(float acc, float we, float wo, float xe, float xo) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);
  __m128 a = _mm_set_ss(acc);
  a = _mm_fmadd_ss(_mm_set_ss(wo), _mm_set_ss(xo), a);
  a = _mm_fmadd_ss(_mm_set_ss(we), _mm_set_ss(xe), a);
  const float r = _mm_cvtss_f32(a);
  _mm_setcsr(saved);
  return r;
}

__attribute__((target("avx512f,avx512bf16"))) float lane_vdpbf16ps(float acc, uint16_t we,
                                                                   uint16_t wo, uint16_t xe,
                                                                   uint16_t xo) {
  const __m512i w = _mm512_set1_epi32(int(we | uint32_t(wo) << 16));
  const __m512i x = _mm512_set1_epi32(int(xe | uint32_t(xo) << 16));
  return _mm512_cvtss_f32(_mm512_dpbf16_ps(_mm512_set1_ps(acc), (__m512bh)w, (__m512bh)x));
}

struct Case {
  const char* what;
  float acc, we, wo, xe, xo;
};

// acc = ±FLT_MIN and products of a few 2^-150: exact results on both sides of the band.
std::vector<Case> band_cases() {
  const float m = std::numeric_limits<float>::min();
  const float t75 = std::ldexp(1.0f, -75), t76 = std::ldexp(1.0f, -76);
  return {
      {"FLT_MIN - 2^-150 (flushed)", m, 0, t75, 0, -t75},
      {"FLT_MIN - 2^-151 (rounds to FLT_MIN)", m, 0, t76, 0, -t75},
      {"FLT_MIN - 1.5 * 2^-151 (flushed)", m, 0, std::ldexp(1.5f, -76), 0, -t75},
      {"-(FLT_MIN - 2^-150), then + 0 * 0", -m, 0, t75, 0, t75},
      {"2 FLT_MIN - 3 * 2^-150 (normal)", 2 * m, 0, t75, 0, -3 * t75},
      {"2^-140 (flushed)", 0, 0, std::ldexp(1.0f, -70), 0, std::ldexp(1.0f, -70)},
      {"2^-120 + 2^-128 (exact, normal)", std::ldexp(1.0f, -120), 0, std::ldexp(1.0f, -64), 0,
       std::ldexp(1.0f, -64)},
      {"subnormal acc in", from_bits(0x00400000), 0, 1, 0, 1},
      {"even pair lands in the band", m, t75, 0, -t75, 0},
      {"odd then even", m, t76, t76, -t75, -t75},
  };
}

// Random lanes whose results fall near FLT_MIN: acc of exponent 2^-126..2^-123, factors
// near 2^-63 so the products are of the same size.
Case random_case(std::mt19937& rng) {
  auto near = [&](int e0, int span) {
    const uint32_t sign = rng() & 0x80000000u, mant = rng() & 0x007f0000u;
    return from_bits(sign | uint32_t(e0 + int(rng() % span)) << 23 | mant);
  };
  Case c{"random", 0, 0, 0, 0, 0};
  c.acc = from_bits((rng() & 0x807fffffu) | uint32_t(1 + rng() % 4) << 23);
  c.wo = near(0x3e, 5);
  c.xo = near(0x3e, 5);
  if (rng() & 1) {
    c.we = near(0x3e, 5);
    c.xe = near(0x3e, 5);
  }
  return c;
}

float ref(const Case& c) {
  return ref::lanes::dpbf16_lane(c.acc, c.we, c.wo, c.xe, c.xo);
}

TEST(Dpbf16Lane, MatchesX86FlushToZeroJustBelowFltMin) {
  if (!__builtin_cpu_supports("fma")) GTEST_SKIP() << "host has no FMA";
  for (const Case& c : band_cases())
    EXPECT_EQ(bits(ref(c)), bits(lane_mxcsr(c.acc, c.we, c.wo, c.xe, c.xo)))
        << c.what << ": reference vs FMA under MXCSR DAZ|FTZ";
  std::mt19937 rng(7);
  int bad = 0;
  for (int i = 0; i < 2000000 && bad < 5; ++i) {
    const Case c = random_case(rng);
    const float r = ref(c), h = lane_mxcsr(c.acc, c.we, c.wo, c.xe, c.xo);
    if (bits(r) != bits(h)) {
      ++bad;
      ADD_FAILURE() << std::hexfloat << "acc " << c.acc << " w " << c.we << "," << c.wo << " x "
                    << c.xe << "," << c.xo << ": reference " << r << ", x86 " << h;
    }
  }
}

TEST(Dpbf16Lane, MatchesTheInstruction) {
  if (!__builtin_cpu_supports("avx512bf16"))
    GTEST_SKIP() << "host has no AVX512-BF16 (the MXCSR test covers x86's flush)";
  std::vector<Case> cases = band_cases();
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) cases.push_back(random_case(rng));
  int bad = 0;
  for (const Case& c : cases) {
    // bf16 inputs: the cases' factors are bf16 values already (8-bit mantissas).
    ASSERT_EQ(widen(bf16(c.wo)), c.wo) << c.what;
    const float r = ref(c),
                h = lane_vdpbf16ps(c.acc, bf16(c.we), bf16(c.wo), bf16(c.xe), bf16(c.xo));
    if (bits(r) != bits(h) && ++bad <= 5)
      ADD_FAILURE() << std::hexfloat << c.what << ": acc " << c.acc << " w " << c.we << "," << c.wo
                    << " x " << c.xe << "," << c.xo << ": reference " << r << ", vdpbf16ps " << h;
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace cke
