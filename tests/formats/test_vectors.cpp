// Hand-checked vectors. Each dequantization test writes one block's bytes by hand, following
// the field layout of ggml-common.h as written in docs/formats.md, and compares with values
// computed by hand (all exactly representable, so the comparison is exact). The
// quantization tests use inputs whose quantized bytes can be worked out on paper.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/formats/quant.h"

namespace {

using cke::DType;

// Little-endian writers into a byte buffer.
void put16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v & 0xff);
  b[off + 1] = static_cast<uint8_t>(v >> 8);
}
void put32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

// fp16 bit patterns used below.
constexpr uint16_t kH1 = 0x3C00;       // 1.0
constexpr uint16_t kH2 = 0x4000;       // 2.0
constexpr uint16_t kHalf = 0x3800;     // 0.5
constexpr uint16_t kQuarter = 0x3400;  // 0.25
constexpr uint16_t kHm1 = 0xBC00;      // -1.0

std::vector<float> deq(DType t, const std::vector<uint8_t>& bytes, int n) {
  std::vector<float> out(n, -12345.f);
  EXPECT_TRUE(cke::dequantize_row(t, bytes.data(), out.data(), n));
  return out;
}

TEST(HandVectors, Q4_0) {
  std::vector<uint8_t> b(18);
  put16(b, 0, kH2);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = deq(DType::Q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * (j - 8)) << j;
    EXPECT_EQ(y[j + 16], 2.0f * (7 - j)) << j;
  }
}

TEST(HandVectors, Q4_1) {
  std::vector<uint8_t> b(20);
  put16(b, 0, kHalf);
  put16(b, 2, kHm1);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = deq(DType::Q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * j - 1.0f) << j;
    EXPECT_EQ(y[j + 16], 0.5f * (15 - j) - 1.0f) << j;
  }
}

TEST(HandVectors, Q5_0) {
  std::vector<uint8_t> b(22);
  put16(b, 0, kH1);
  put32(b, 2, 0xFFFF0008u);  // high bit on elements 3 and 16..31
  for (int j = 0; j < 16; ++j) b[6 + j] = static_cast<uint8_t>(j | (j << 4));
  auto y = deq(DType::Q5_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j == 3 ? 3.0f : float(j - 16)) << j;
    EXPECT_EQ(y[j + 16], float(j)) << j;
  }
}

TEST(HandVectors, Q5_1) {
  std::vector<uint8_t> b(24);
  put16(b, 0, kH2);
  put16(b, 2, kH1);
  put32(b, 4, 0x00010001u);  // high bit on elements 0 and 16
  for (int j = 0; j < 16; ++j) b[8 + j] = static_cast<uint8_t>((15 - j) | (j << 4));
  auto y = deq(DType::Q5_1, b, 32);
  EXPECT_EQ(y[0], 31 * 2.0f + 1.0f);
  EXPECT_EQ(y[16], 16 * 2.0f + 1.0f);
  for (int j = 1; j < 16; ++j) {
    EXPECT_EQ(y[j], (15 - j) * 2.0f + 1.0f) << j;
    EXPECT_EQ(y[j + 16], j * 2.0f + 1.0f) << j;
  }
}

TEST(HandVectors, Q8_0) {
  std::vector<uint8_t> b(34);
  put16(b, 0, kQuarter);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(8 * j - 128));
  auto y = deq(DType::Q8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 2.0f * j - 32.0f) << j;
}

// q2_K: sub-block k has scale k and min 15-k; element e has q = e % 4.
// Value = d*scale*q - dmin*min with d = 1, dmin = 0.5.
TEST(HandVectors, Q2_K) {
  std::vector<uint8_t> b(84, 0);
  for (int k = 0; k < 16; ++k) b[k] = static_cast<uint8_t>(k | ((15 - k) << 4));
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    b[16 + 32 * h + l] |= static_cast<uint8_t>((e % 4) << (2 * s));
  }
  put16(b, 80, kH1);
  put16(b, 82, kHalf);
  auto y = deq(DType::Q2_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 16;
    EXPECT_EQ(y[e], float(k * (e % 4)) - 0.5f * (15 - k)) << e;
  }
}

// q3_K: sub-block k has 6-bit scale 4k+2 (signed 4k-30); element e has q = e%8 - 4.
TEST(HandVectors, Q3_K) {
  std::vector<uint8_t> b(110, 0);
  for (int e = 0; e < 256; ++e) {
    const int v = e % 8;  // q + 4
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    if (v >= 4) b[e % 32] |= static_cast<uint8_t>(1 << (e / 32));  // hmask
    b[32 + 32 * h + l] |= static_cast<uint8_t>((v & 3) << (2 * s));
  }
  for (int k = 0; k < 16; ++k) {
    const int sc = 4 * k + 2;
    if (k < 8)
      b[96 + k] |= static_cast<uint8_t>(sc & 0xF);
    else
      b[96 + k - 8] |= static_cast<uint8_t>((sc & 0xF) << 4);
    b[96 + 8 + k % 4] |= static_cast<uint8_t>((sc >> 4) << (2 * (k / 4)));
  }
  put16(b, 108, kH1);
  auto y = deq(DType::Q3_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 16;
    EXPECT_EQ(y[e], float((4 * k + 2 - 32) * (e % 8 - 4))) << e;
  }
}

// 6-bit scales/mins of q4_K/q5_K: sub-block j has scale 10+7j and min 63-5j.
void put_k4_scales(std::vector<uint8_t>& b, size_t off) {
  for (int j = 0; j < 8; ++j) {
    const int sc = 10 + 7 * j, m = 63 - 5 * j;
    if (j < 4) {
      b[off + j] |= static_cast<uint8_t>(sc);
      b[off + j + 4] |= static_cast<uint8_t>(m);
    } else {
      b[off + j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
      b[off + j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
      b[off + j] |= static_cast<uint8_t>((m >> 4) << 6);
    }
  }
}

TEST(HandVectors, Q4_K) {
  std::vector<uint8_t> b(144, 0);
  put16(b, 0, kH1);
  put16(b, 2, kQuarter);
  put_k4_scales(b, 4);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64;
    b[16 + 32 * c + r % 32] |= static_cast<uint8_t>((e % 16) << (r < 32 ? 0 : 4));
  }
  auto y = deq(DType::Q4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], float((10 + 7 * j) * (e % 16)) - 0.25f * (63 - 5 * j)) << e;
  }
}

TEST(HandVectors, Q5_K) {
  std::vector<uint8_t> b(176, 0);
  put16(b, 0, kH1);
  put16(b, 2, kQuarter);
  put_k4_scales(b, 4);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64, q = e % 32;
    b[48 + 32 * c + r % 32] |= static_cast<uint8_t>((q & 15) << (r < 32 ? 0 : 4));
    if (q & 16) b[16 + r % 32] |= static_cast<uint8_t>(1 << (2 * c + (r < 32 ? 0 : 1)));
  }
  auto y = deq(DType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], float((10 + 7 * j) * (e % 32)) - 0.25f * (63 - 5 * j)) << e;
  }
}

// q6_K: sub-block k has scale 9k-70, element e has q = e % 64 (value q - 32), d = 0.5.
TEST(HandVectors, Q6_K) {
  std::vector<uint8_t> b(210, 0);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32, q = e % 64;
    const size_t lo = 64 * h + l + (s % 2 ? 32 : 0);
    b[lo] |= static_cast<uint8_t>((q & 15) << (s >= 2 ? 4 : 0));
    b[128 + 32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * s));
  }
  for (int k = 0; k < 16; ++k) b[192 + k] = static_cast<uint8_t>(static_cast<int8_t>(9 * k - 70));
  put16(b, 208, kHalf);
  auto y = deq(DType::Q6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 16;
    EXPECT_EQ(y[e], 0.5f * float((9 * k - 70) * (e % 64 - 32))) << e;
  }
}

TEST(HandVectors, Q8_K) {
  std::vector<uint8_t> b(292, 0);
  const float d = 0.125f;
  std::memcpy(b.data(), &d, 4);
  for (int j = 0; j < 256; ++j) b[4 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 128));
  auto y = deq(DType::Q8_K, b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], 0.125f * (j - 128)) << j;
}

TEST(HandVectors, F16AndBF16Rows) {
  std::vector<uint8_t> b(8);
  put16(b, 0, 0x3C00);  // 1
  put16(b, 2, 0xC000);  // -2
  put16(b, 4, 0x0001);  // 2^-24
  put16(b, 6, 0x7BFF);  // 65504
  auto y = deq(DType::F16, b, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(y[3], 65504.0f);
  put16(b, 0, 0x3F80);  // 1
  put16(b, 2, 0xC040);  // -3
  put16(b, 4, 0x4049);  // 3.140625
  put16(b, 6, 0x0001);  // smallest bf16 subnormal = 2^-133
  y = deq(DType::BF16, b, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[2], 3.140625f);
  EXPECT_EQ(y[3], std::ldexp(1.0f, -133));
}

// ---------------------------------------------------------------- quantization by hand

std::vector<uint8_t> quant(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> out(cke::row_bytes(t, static_cast<int64_t>(x.size())), 0xEE);
  EXPECT_TRUE(cke::quantize_row(t, x.data(), out.data(), static_cast<int64_t>(x.size())));
  return out;
}

// x = -8..7, 7..-8: the first element has the largest magnitude, so d = -8/-8 = 1 and
// q = x + 8 exactly.
TEST(HandQuantize, Q4_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 16; ++j) {
    x[j] = float(j - 8);
    x[j + 16] = float(7 - j);
  }
  auto b = quant(DType::Q4_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kH1);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[2 + j], j | ((15 - j) << 4)) << j;
}

// x = 1..16 twice: min 1, d = 15/15 = 1, q = x - 1.
TEST(HandQuantize, Q4_1) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = float(j % 16 + 1);
  auto b = quant(DType::Q4_1, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kH1);
  EXPECT_EQ(b[2] | (b[3] << 8), kH1);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[4 + j], j | (j << 4)) << j;
}

// x = -16..15: d = 1, q = x + 16 = j; bit 4 set exactly on elements 16..31.
TEST(HandQuantize, Q5_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = float(j - 16);
  auto b = quant(DType::Q5_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kH1);
  EXPECT_EQ(b[2], 0x00);
  EXPECT_EQ(b[3], 0x00);
  EXPECT_EQ(b[4], 0xFF);
  EXPECT_EQ(b[5], 0xFF);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[6 + j], j | (j << 4)) << j;
}

// x = 2j - 10: min -10, d = 62/31 = 2, q = trunc((x+10)/2 + 0.5) = j.
TEST(HandQuantize, Q5_1) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = float(2 * j - 10);
  auto b = quant(DType::Q5_1, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kH2);
  EXPECT_EQ(b[2] | (b[3] << 8), 0xC900);  // -10
  EXPECT_EQ(b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24), 0xFFFF0000u);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b[8 + j], j | (j << 4)) << j;
}

// x = 8j - 127 + (j%4)/4: amax 127 (first element), so d = 1 and id = 1; q = x rounded
// half away from zero (roundf), e.g. -118.5 -> -119 and 121.5 -> 122.
TEST(HandQuantize, Q8_0) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = float(8 * j - 127) + 0.25f * float(j % 4);
  auto b = quant(DType::Q8_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kH1);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(static_cast<int8_t>(b[2 + j]), std::lround(double(x[j]))) << j;
}

// A case where roundf and round-half-even differ: x*id = 2.5 exactly.
TEST(HandQuantize, Q8_0RoundsHalfAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1, id = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  auto b = quant(DType::Q8_0, x);
  EXPECT_EQ(b[0] | (b[1] << 8), kH1);
  EXPECT_EQ(static_cast<int8_t>(b[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(b[4]), -3);
  EXPECT_EQ(static_cast<int8_t>(b[5]), 4);
}

// x = j - 100: max = 155 (the last element), iscale = -127/155, q = nearest(-127 x / 155);
// no product is within 0.003 of a .5 tie, so double arithmetic gives the same answer.
TEST(HandQuantize, Q8_K) {
  std::vector<float> x(256);
  for (int j = 0; j < 256; ++j) x[j] = float(j - 100);
  auto b = quant(DType::Q8_K, x);
  float d;
  std::memcpy(&d, b.data(), 4);
  EXPECT_NEAR(d, -155.0 / 127.0, 1e-6);
  for (int j = 0; j < 256; ++j) {
    const long q = std::lround(-127.0 * (j - 100) / 155.0);
    EXPECT_EQ(static_cast<int8_t>(b[4 + j]), q) << j;
  }
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int j = 16 * g; j < 16 * g + 16; ++j)
      sum += static_cast<int>(std::lround(-127.0 * (j - 100) / 155.0));
    const int16_t got = static_cast<int16_t>(b[260 + 2 * g] | (b[261 + 2 * g] << 8));
    EXPECT_EQ(got, sum) << g;
  }
}

TEST(HandQuantize, F16AndBF16) {
  auto b = quant(DType::F16, {1.0f, -2.0f, 65520.0f, 1e-8f});
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3C00);
  EXPECT_EQ(b[2] | (b[3] << 8), 0xC000);
  EXPECT_EQ(b[4] | (b[5] << 8), 0x7C00);  // 65520 rounds up to Inf
  EXPECT_EQ(b[6] | (b[7] << 8), 0x0000);  // below half the smallest subnormal
  b = quant(DType::BF16, {1.0f, 3.14159265f, -0.0f});
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3F80);
  EXPECT_EQ(b[2] | (b[3] << 8), 0x4049);
  EXPECT_EQ(b[4] | (b[5] << 8), 0x8000);
}

}  // namespace
