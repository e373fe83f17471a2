// Activation quantizers on hand-computed vectors (values derived by hand / with Python's
// IEEE float32 and float16 packing, not by the code under test).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/formats/quant.h"
#include "kernels/ref/act_quant.h"

namespace cke {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(ActQuant, f16_round_half_even) {
  const std::vector<float> x = {1.0f,     1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
                                65504.0f, 65519.0f,        65520.0f,
                                -2.0f,    0x1p-24f,        0x1p-25f};
  std::vector<uint16_t> h(x.size());
  act_convert_f16(x.data(), h.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(h[0], 0x3C00);  // 1
  EXPECT_EQ(h[1], 0x3C00);  // tie between 1 and 1+2^-10 -> even (1)
  EXPECT_EQ(h[2], 0x3C02);  // tie between 1+2^-10 and 1+2^-9 -> even (1+2^-9)
  EXPECT_EQ(h[3], 0x7BFF);  // max half
  EXPECT_EQ(h[4], 0x7BFF);  // below the midpoint 65520
  EXPECT_EQ(h[5], 0x7C00);  // the midpoint rounds to even: Inf
  EXPECT_EQ(h[6], 0xC000);
  EXPECT_EQ(h[7], 0x0001);  // smallest subnormal
  EXPECT_EQ(h[8], 0x0000);  // half of it: tie -> even (0)
}

TEST(ActQuant, bf16_round_half_even_and_quiet_nan) {
  const std::vector<float> x = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -3.0f, kNaN};
  std::vector<uint16_t> h(x.size());
  act_convert_bf16(x.data(), h.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(h[0], 0x3F80);
  EXPECT_EQ(h[1], 0x3F80);  // tie -> even
  EXPECT_EQ(h[2], 0x3F82);  // tie -> even (up)
  EXPECT_EQ(h[3], 0xC040);
  EXPECT_EQ(h[4] & 0x7FC0, 0x7FC0);  // NaN, quiet bit set
}

// amax = 127 -> d = 1 and multiplier 1: quants are x rounded half to even.
TEST(ActQuant, q8_0_round_half_even) {
  std::vector<float> x(32, 0.0f);
  const float in[] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f, -126.5f, 100.49f};
  const int expect[] = {127, 0, 2, 2, 0, -2, 4, -126, 100};
  for (int i = 0; i < 9; ++i) x[i] = in[i];
  block_q8_0 b;
  act_quantize_q8_0(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_fp32(b.d), 1.0f);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(b.qs[i], expect[i]) << "x=" << in[i];
  for (int i = 9; i < 32; ++i) EXPECT_EQ(b.qs[i], 0);
}

// The multiplier is 127/amax, not 1/d: amax = 100 stores d = f16(0.7874016) = 0.78759766,
// and x = 47.642 gives x*1.27 = 60.50534 -> 61, whereas x/d = 60.49027 would give 60.
TEST(ActQuant, q8_0_multiplier_is_127_over_amax) {
  std::vector<float> x(32, 0.0f);
  x[3] = -100.0f;
  x[10] = 47.642f;
  block_q8_0 b;
  act_quantize_q8_0(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_fp32(b.d), 0.78759765625f);
  EXPECT_EQ(b.qs[3], -127);
  EXPECT_EQ(b.qs[10], 61);
}

// amax found by the SIMD maxps tree: a NaN survives only at element 27 of a block.
TEST(ActQuant, q8_0_nan_position_rules) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i % 16) - 7.0f;  // amax 8
  x[27] = kNaN;                                                           // block 0
  x[32 + 3] = kNaN;  // block 1, lane 3 of the first vector: dropped by the next maxps
  block_q8_0 b[2];
  act_quantize_q8_0(x.data(), b, 64);
  EXPECT_TRUE(std::isnan(fp16_to_fp32(b[0].d)));
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[0].qs[i], -128);  // NaN multiplier everywhere
  EXPECT_EQ(fp16_to_fp32(b[1].d), fp16_to_fp32(fp32_to_fp16(8.0f / 127.f)));
  EXPECT_EQ(b[1].qs[3], -128);  // the NaN element: vcvtps2dq gives INT_MIN, packs saturate
  EXPECT_EQ(b[1].qs[15], 127);  // x = 8 = amax
  EXPECT_EQ(b[1].qs[0], -111);  // -7 * 127/8 = -111.125
}

// A NaN in an early vector hides the values before it in its lane: block max 50 at element
// 0, NaN at element 8 (same lane, next vector) -> amax = 8 from the other elements, and
// element 0 saturates at 127.
TEST(ActQuant, q8_0_nan_hides_earlier_lane_values) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 16) - 7.0f;
  x[0] = 50.0f;
  x[8] = kNaN;
  block_q8_0 b;
  act_quantize_q8_0(x.data(), &b, 32);
  EXPECT_EQ(fp16_to_fp32(b.d), fp16_to_fp32(fp32_to_fp16(8.0f / 127.f)));
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[8], -128);
}

// s = f16(d * sum(q)) with the unrounded d: 100 -> 127, -97.64 -> -124 (x*1.27 = -124.003),
// sum 3; d*3 = 2.3622046 -> f16 2.361328125, while f16(d)*3 = 2.3627930 -> 2.36328125.
TEST(ActQuant, q8_1_sum_uses_unrounded_d) {
  std::vector<float> x(32, 0.0f);
  x[0] = 100.0f;
  x[31] = -97.64f;
  block_q8_1 b;
  act_quantize_q8_1(x.data(), &b, 32);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[31], -124);
  EXPECT_EQ(fp16_to_fp32(b.d), 0.78759765625f);
  EXPECT_EQ(fp16_to_fp32(b.s), 2.361328125f);
}

TEST(ActQuant, q8_1_matches_q8_0_quants) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> x(256);
  for (float& v : x) v = nd(rng);
  std::vector<block_q8_0> a(8);
  std::vector<block_q8_1> b(8);
  act_quantize_q8_0(x.data(), a.data(), 256);
  act_quantize_q8_1(x.data(), b.data(), 256);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(a[i].d, b[i].d);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      EXPECT_EQ(a[i].qs[j], b[i].qs[j]);
      sum += b[i].qs[j];
    }
    // s is within f16 rounding of d * sum (d unrounded, so compare loosely here).
    EXPECT_NEAR(fp16_to_fp32(b[i].s), fp16_to_fp32(b[i].d) * sum,
                std::fabs(fp16_to_fp32(b[i].d) * sum) * 2e-3 + 1e-6);
  }
}

// Q8_K: the largest-magnitude element (first on ties) fixes the sign: iscale = -127/max.
TEST(ActQuant, q8_K_sign_rule_and_ties) {
  std::vector<float> x(256, 0.0f);
  // Block max -127 -> iscale = 1 exactly: quants are x rounded half to even, d = 1.
  x[0] = -127.0f;
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -2.5f;
  x[4] = 0.5f;
  x[5] = 126.5f;
  block_q8_K b;
  act_quantize_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  const int expect[] = {-127, 2, 4, -2, 0, 126};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b.qs[i], expect[i]) << i;
  EXPECT_EQ(b.bsums[0], -127 + 2 + 4 - 2 + 0 + 126);

  // Positive max 10: iscale = -12.7, the max itself becomes -127 and d = 1/-12.7 < 0;
  // -5 * -12.7 = 63.5 -> 64 (even).
  std::fill(x.begin(), x.end(), 0.0f);
  x[20] = 10.0f;
  x[21] = -5.0f;
  act_quantize_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.qs[20], -127);
  EXPECT_EQ(b.qs[21], 64);
  EXPECT_EQ(b.d, 1.0f / (-127.0f / 10.0f));
  EXPECT_LT(b.d, 0.0f);
  EXPECT_EQ(b.bsums[1], -127 + 64);

  // Ties on |x|: the first one wins. -10 first -> iscale = +12.7.
  std::fill(x.begin(), x.end(), 0.0f);
  x[40] = -10.0f;
  x[200] = 10.0f;
  act_quantize_q8_K(x.data(), &b, 256);
  EXPECT_GT(b.d, 0.0f);
  EXPECT_EQ(b.qs[40], -127);
  EXPECT_EQ(b.qs[200], 127);
  // +10 first -> iscale = -12.7.
  x[40] = 10.0f;
  x[200] = -10.0f;
  act_quantize_q8_K(x.data(), &b, 256);
  EXPECT_LT(b.d, 0.0f);
  EXPECT_EQ(b.qs[40], -127);
  EXPECT_EQ(b.qs[200], 127);
}

// iscale = -127/max, not 1/d: max = -100 gives iscale 1.27 and d = 1/1.27f; an element
// at 50.2 -> 63.754 -> 64.
TEST(ActQuant, q8_K_float_scale_and_bsums) {
  std::vector<float> x(512, 0.0f);
  x[0] = -100.0f;
  x[17] = 50.2f;
  x[256 + 255] = 1.0f;  // second block: max 1 -> iscale -127
  std::vector<block_q8_K> b(2);
  act_quantize_q8_K(x.data(), b.data(), 512);
  EXPECT_EQ(b[0].d, 1.0f / (-127.0f / -100.0f));
  EXPECT_EQ(b[0].qs[0], -127);
  EXPECT_EQ(b[0].qs[17], 64);
  EXPECT_EQ(b[0].bsums[0], -127);
  EXPECT_EQ(b[0].bsums[1], 64);
  EXPECT_EQ(b[1].qs[255], -127);
  EXPECT_EQ(b[1].d, 1.0f / -127.0f);
  EXPECT_EQ(b[1].bsums[15], -127);
}

TEST(ActQuant, q8_K_nan_is_zero_and_zero_block) {
  std::vector<float> x(512, 0.0f);
  x[0] = kNaN;
  x[1] = -4.0f;
  x[2] = 1.0f;
  // Block 1 stays all zero.
  std::vector<block_q8_K> b(2);
  act_quantize_q8_K(x.data(), b.data(), 512);
  EXPECT_EQ(b[0].qs[0], 0);
  EXPECT_EQ(b[0].qs[1], -127);
  EXPECT_EQ(b[0].qs[2], 32);  // 1 * 127/4 = 31.75
  EXPECT_EQ(b[0].d, 1.0f / (-127.0f / -4.0f));
  EXPECT_EQ(b[1].d, 0.0f);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(b[1].qs[i], 0);
  for (int i = 0; i < 16; ++i) ASSERT_EQ(b[1].bsums[i], 0);
}

// Property: every quantizer reconstructs its input within half a step (plus the f16
// rounding of d for Q8_0).
TEST(ActQuant, reconstruction_within_half_step) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(1024);
  for (float& v : x) v = nd(rng) * 3.0f;
  std::vector<block_q8_0> a(32);
  std::vector<block_q8_K> k(4);
  act_quantize_q8_0(x.data(), a.data(), 1024);
  act_quantize_q8_K(x.data(), k.data(), 1024);
  for (int i = 0; i < 1024; ++i) {
    const float d0 = fp16_to_fp32(a[i / 32].d);
    EXPECT_LE(std::fabs(d0 * a[i / 32].qs[i % 32] - x[i]), 0.5f * d0 + 128 * d0 * 0x1p-11f);
    const float dk = std::fabs(k[i / 256].d);
    EXPECT_LE(std::fabs(k[i / 256].d * k[i / 256].qs[i % 256] - x[i]), 0.5001f * dk);
  }
}

// --- Q8_K 4x8 (the repacked gemm's quantizer) ---------------------------------------------

// Both +amax and -amax present: the plain quantizer takes the first (-2 -> iscale = 63.5),
// the 4x8 one takes the sign of ANY element equal to +amax (iscale = -63.5). x[2] = 1:
// 63.5 -> 64 (half to even), x[3] = -0.25: -15.875 -> -16; mirrored for 4x8.
TEST(ActQuant, q8_K_4x8_sign_takes_any_positive_amax) {
  std::vector<float> x(256, 0.0f);
  x[0] = -2.0f;
  x[1] = 2.0f;
  x[2] = 1.0f;
  x[3] = -0.25f;
  block_q8_K p, q;
  act_quantize_q8_K(x.data(), &p, 256);
  act_quantize_q8_K_4x8(x.data(), &q, 256);
  EXPECT_EQ(p.d, 1.0f / 63.5f);
  EXPECT_EQ(q.d, 1.0f / -63.5f);
  const int plain[] = {-127, 127, 64, -16};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p.qs[i], plain[i]) << i;
    EXPECT_EQ(q.qs[i], -plain[i]) << i;
  }
  EXPECT_EQ(p.bsums[0], 48);
  EXPECT_EQ(q.bsums[0], -48);
  // +amax first: both negative. The tie in different lanes (3 and 4) counts too.
  std::fill(x.begin(), x.end(), 0.0f);
  x[3] = -2.0f;
  x[12] = 2.0f;
  act_quantize_q8_K_4x8(x.data(), &q, 256);
  EXPECT_EQ(q.d, 1.0f / -63.5f);
  EXPECT_EQ(q.qs[3], 127);
  EXPECT_EQ(q.qs[12], -127);
}

// A positive element equal to its lane's running max no longer counts once a larger
// (negative) value enters that lane: lane 0 sees +1 (element 0), then -2 (element 32).
TEST(ActQuant, q8_K_4x8_lane_mask_cleared_when_max_grows) {
  std::vector<float> x(256, 0.0f);
  x[0] = 1.0f;
  x[32] = -2.0f;
  block_q8_K q;
  act_quantize_q8_K_4x8(x.data(), &q, 256);
  EXPECT_EQ(q.d, 1.0f / 63.5f);
  EXPECT_EQ(q.qs[0], 64);  // 63.5 -> 64
  EXPECT_EQ(q.qs[32], -127);
  // ... and counts again when a later positive equals the grown max (element 64, lane 0).
  x[64] = 2.0f;
  act_quantize_q8_K_4x8(x.data(), &q, 256);
  EXPECT_EQ(q.d, 1.0f / -63.5f);
  EXPECT_EQ(q.qs[64], -127);
}

// vmaxps keeps a NaN only when it is the last value of its lane and lane 3 of the final
// fold: element 251 (= 32*7 + 8*3 + 3). Then d = NaN and every quant is -128. Elsewhere
// the NaN is dropped from amax and quantizes to -128 (vcvtps2dq + saturating packs), not
// to 0 as in the plain Q8_K.
TEST(ActQuant, q8_K_4x8_nan_rules_and_zero_block) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 9) - 4.0f;  // amax 4 (-4 first)
  x[8] = 4.0f;
  std::vector<float> xn = x;
  xn[251] = kNaN;
  block_q8_K q;
  act_quantize_q8_K_4x8(xn.data(), &q, 256);
  EXPECT_TRUE(std::isnan(q.d));
  for (int i = 0; i < 256; ++i) ASSERT_EQ(q.qs[i], -128) << i;
  for (int pos : {3, 250, 255}) {
    xn = x;
    xn[pos] = kNaN;
    act_quantize_q8_K_4x8(xn.data(), &q, 256);
    EXPECT_EQ(q.d, 1.0f / (-127.0f / 4.0f)) << pos;  // +4 present -> iscale = -31.75
    EXPECT_EQ(q.qs[pos], -128) << pos;
    EXPECT_EQ(q.qs[8], -127) << pos;
  }
  std::fill(x.begin(), x.end(), 0.0f);
  act_quantize_q8_K_4x8(x.data(), &q, 256);
  EXPECT_EQ(q.d, 0.0f);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(q.qs[i], 0);
  for (int i = 0; i < 16; ++i) ASSERT_EQ(q.bsums[i], 0);
}

// Without a +-amax tie or NaN, the 4x8 quantizer and the plain one agree byte for byte
// (ggml computes the same iscale and the same rounding; only the layout differs).
TEST(ActQuant, q8_K_4x8_matches_plain_without_ties) {
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(256 * 8);
  for (float& v : x) v = nd(rng) * 4.0f;
  std::vector<block_q8_K> p(8), q(8);
  act_quantize_q8_K(x.data(), p.data(), 256 * 8);
  act_quantize_q8_K_4x8(x.data(), q.data(), 256 * 8);
  for (int b = 0; b < 8; ++b) {
    EXPECT_EQ(p[b].d, q[b].d) << b;
    for (int i = 0; i < 256; ++i) ASSERT_EQ(p[b].qs[i], q[b].qs[i]) << b << "/" << i;
    for (int i = 0; i < 16; ++i) ASSERT_EQ(p[b].bsums[i], q[b].bsums[i]) << b << "/" << i;
  }
}

}  // namespace
}  // namespace cke
