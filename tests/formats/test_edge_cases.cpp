// Edge inputs: all-zero blocks, constant blocks, one huge value, subnormals, and the
// NaN/Inf behaviour documented in docs/formats.md (deterministic, block-local, ggml's).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/formats/quant.h"

namespace {

using cke::DType;

const DType kQuantTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                             DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                             DType::Q5_K, DType::Q6_K, DType::Q8_K};

struct Result {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

Result run(DType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  Result r{std::vector<uint8_t>(cke::row_bytes(t, n)), std::vector<float>(x.size())};
  EXPECT_TRUE(cke::quantize_row(t, x.data(), r.bytes.data(), n));
  EXPECT_TRUE(cke::dequantize_row(t, r.bytes.data(), r.values.data(), n));
  return r;
}

TEST(EdgeCases, AllZeroBlocksDecodeToZero) {
  const std::vector<float> zeros(512, 0.0f);
  for (DType t : kQuantTypes) {
    const Result r = run(t, zeros);
    for (float v : r.values) ASSERT_EQ(v, 0.0f) << cke::dtype_name(t);
    // Negative zeros too: the result is zero (its sign is not part of the contract).
    std::vector<float> nz(512, -0.0f);
    for (float v : run(t, nz).values) ASSERT_EQ(v, 0.0f) << cke::dtype_name(t);
  }
  // The K-quants and q8_0 store an all-zero block as all-zero bytes.
  for (DType t : {DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                  DType::Q8_K}) {
    for (uint8_t b : run(t, zeros).bytes) ASSERT_EQ(b, 0) << cke::dtype_name(t);
  }
}

TEST(EdgeCases, ConstantBlocks) {
  for (float c : {1.0f, -3.5f, 0.0625f}) {
    const std::vector<float> x(256, c);
    for (DType t : kQuantTypes) {
      const Result r = run(t, x);
      for (float v : r.values)
        ASSERT_NEAR(v, c, std::fabs(c) * 2e-3f) << cke::dtype_name(t) << " c=" << c;
    }
  }
}

// One element much larger than the rest: the block's step follows it, the small ones
// collapse towards zero (or the block minimum), and the huge one survives to fp16 accuracy.
TEST(EdgeCases, OneHugeValue) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1e-3f);
  std::vector<float> x(256);
  for (float& v : x) v = g(rng);
  x[77] = 3000.0f;
  for (DType t : kQuantTypes) {
    const Result r = run(t, x);
    EXPECT_NEAR(r.values[77], 3000.0f, 3000.0f * 3e-3f) << cke::dtype_name(t);
    for (size_t i = 0; i < x.size(); ++i) {
      if (i == 77) continue;
      ASSERT_LE(std::fabs(r.values[i] - x[i]), 3000.0f / 2) << cke::dtype_name(t) << " " << i;
      ASSERT_TRUE(std::isfinite(r.values[i]));
    }
  }
}

// Subnormal inputs give scales that underflow (fp16) or stay tiny (q8_K's float d); the
// results must be finite and within the data's own magnitude.
TEST(EdgeCases, Subnormals) {
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::numeric_limits<float>::denorm_min() * float(int(i % 37) - 18) * 1000.0f;
  for (DType t : kQuantTypes) {
    const Result r = run(t, x);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(r.values[i])) << cke::dtype_name(t);
      ASSERT_LE(std::fabs(r.values[i]), 1e-36f) << cke::dtype_name(t);
    }
  }
  // fp16 has no subnormals this small: they round to (signed) zero. bf16 keeps float's
  // exponent range but only 7 mantissa bits: its subnormal step is 2^-133.
  const Result h = run(DType::F16, x);
  for (float v : h.values) ASSERT_EQ(v, 0.0f);
  const Result b = run(DType::BF16, x);
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(b.values[i], x[i], std::fabs(x[i]) / 256 + std::ldexp(1.0f, -134));
}

// A scale above fp16's range overflows to Inf, exactly as in ggml (no clamping): values
// beyond ~65504*8 in q4_0 decode to Inf/NaN. q8_K (float32 d) is unaffected.
TEST(EdgeCases, ScaleOverflowMatchesGgml) {
  std::vector<float> x(32, 1.0f);
  x[0] = 1e6f;  // d = 1e6 / -8 -> fp16 -Inf
  const Result r = run(DType::Q4_0, x);
  EXPECT_EQ(r.bytes[0] | (r.bytes[1] << 8), 0xFC00);
  std::vector<float> k(256, 1.0f);
  k[0] = 1e30f;
  const Result q8k = run(DType::Q8_K, k);
  EXPECT_NEAR(q8k.values[0], 1e30f, 1e30f * 1e-6f);
}

// Non-finite inputs are not rejected. They affect only their own block, and the bytes are
// what ggml's x86-64 reference code produces (docs/formats.md). Two cases worked out by hand:
TEST(EdgeCases, InfInQ4_0AndQ8_0) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(64, 0.5f);
  x[3] = inf;
  // q4_0: max = +Inf, d = -Inf, id = 1/d = -0: finite x*id + 8.5 -> q = 8, the Inf element
  // gives NaN -> (int8_t) 0. Decoded: 0 * -Inf = NaN, and (0-8) * -Inf = +Inf.
  Result r = run(DType::Q4_0, x);
  EXPECT_EQ(r.bytes[0] | (r.bytes[1] << 8), 0xFC00);
  EXPECT_EQ(r.bytes[2 + 3], 0x80);  // element 3 low nibble 0, element 19 high nibble 8
  EXPECT_EQ(r.bytes[2 + 4], 0x88);
  EXPECT_EQ(r.values[3], inf);
  EXPECT_TRUE(std::isnan(r.values[4]));
  for (int i = 32; i < 64; ++i) EXPECT_NEAR(r.values[i], 0.5f, 0.07f);  // next block intact
  // q8_0: amax = Inf, d = Inf (0x7c00), id = 1/Inf = 0: every q = 0 (Inf*0 = NaN -> 0).
  r = run(DType::Q8_0, x);
  EXPECT_EQ(r.bytes[0] | (r.bytes[1] << 8), 0x7C00);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(r.bytes[2 + j], 0);
  for (int i = 0; i < 32; ++i) EXPECT_TRUE(std::isnan(r.values[i]));
  for (int i = 32; i < 64; ++i) EXPECT_NEAR(r.values[i], 0.5f, 0.01f);
}

// NaN or Inf anywhere in a block: deterministic, and other blocks are byte-identical to
// the clean quantization. (Run under ASan/UBSan too: no undefined float->int conversion.)
TEST(EdgeCases, NonFiniteStaysInItsBlock) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> clean(768);
  for (float& v : clean) v = g(rng);
  for (DType t : kQuantTypes) {
    const int64_t bs = cke::dtype_info(t).block_size, ts = cke::dtype_info(t).type_size;
    const Result ref = run(t, clean);
    for (float s : specials) {
      for (int64_t pos : {int64_t{0}, bs / 2, bs - 1}) {
        std::vector<float> x = clean;
        x[bs + pos] = s;  // poison block 1 only
        const Result a = run(t, x), b = run(t, x);
        ASSERT_EQ(a.bytes, b.bytes) << cke::dtype_name(t);
        for (int64_t i = 0; i < static_cast<int64_t>(a.bytes.size()); ++i) {
          if (i >= ts && i < 2 * ts) continue;
          ASSERT_EQ(a.bytes[i], ref.bytes[i]) << cke::dtype_name(t) << " byte " << i;
        }
      }
    }
  }
}

TEST(EdgeCases, NonFiniteFloatFormats) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Result h = run(DType::F16, {nan, inf, -inf, -nan});
  EXPECT_EQ(h.bytes[0] | (h.bytes[1] << 8), 0x7E00);
  EXPECT_EQ(h.bytes[2] | (h.bytes[3] << 8), 0x7C00);
  EXPECT_EQ(h.bytes[4] | (h.bytes[5] << 8), 0xFC00);
  EXPECT_EQ(h.bytes[6] | (h.bytes[7] << 8), 0xFE00);
  EXPECT_TRUE(std::isnan(h.values[0]));
  EXPECT_EQ(h.values[1], inf);
  const Result b = run(DType::BF16, {nan, inf, -inf});
  EXPECT_EQ(b.bytes[0] | (b.bytes[1] << 8), 0x7FC0);
  EXPECT_EQ(b.bytes[2] | (b.bytes[3] << 8), 0x7F80);
  EXPECT_EQ(b.bytes[4] | (b.bytes[5] << 8), 0xFF80);
  const Result f = run(DType::F32, {nan, inf});
  EXPECT_TRUE(std::isnan(f.values[0]));
  EXPECT_EQ(f.values[1], inf);
}

}  // namespace
