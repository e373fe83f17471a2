// The generated q8_K, q8_K_4x8, f16 and bf16 act_quant providers of kernel_maps/ (suite
// JitActQuant, with the q8_0 harness in test_jit_act_quant.cpp, whose every-provider list
// names them) against the reference kernel of their contract, and their emitted C against
// their machine code: every output byte identical (memcmp), on random rows of several K and
// T with every token range (the 4x8 contract picks its quantizer by T % 4), magnitude ties of
// opposite sign at every pair of positions (the first one decides q8_K's sign), all-equal
// and all-zero blocks, every special value (NaNs with payloads, ±Inf, ±0, subnormals,
// FLT_MAX, magnitudes whose -127 / max overflows) in every position, values at the rounding
// ties of nearest_int / cvtps2dq / f16 / bf16, rows ending at a guard page, and calls
// outside the contract (nothing written).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "generated_kernel.h"
#include "jit/gen_act_quant.h"
#include "jit_test_util.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

using jit::gen::ActQuantFn;
using Loaded = GeneratedKernel<ActQuantFn>;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kSub = std::numeric_limits<float>::denorm_min();

float bits_f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Out {
  DType type;
  int64_t block;  // elements per block of the output type
  size_t row(int64_t K) const { return row_bytes(type, K); }
};

Out out_of(const Loaded& l) {
  const DType t = l.map->port("y")->dtype;
  return {t, int64_t(dtype_info(t).block_size)};
}

// "" when JIT, reference and C write the same bytes for tokens [t0, t1) of x (K x T), and
// nothing outside them; else the first difference.
std::string check(const Loaded& l, const float* x, int64_t K, int64_t T, int64_t t0, int64_t t1) {
  const Out o = out_of(l);
  const size_t rb = o.row(K), bytes = rb * size_t(T);
  std::vector<uint8_t> yr(bytes, 0xA5), yj(bytes, 0xA5), yc(bytes, 0xA5);
  l.ref(x, yr.data(), K, T, t0, t1);
  dirty_stack(uint8_t(__LINE__));
  l.fn(x, yj.data(), K, T, t0, t1);
  dirty_stack(uint8_t(__LINE__));
  l.cfn(x, yc.data(), K, T, t0, t1);
  for (size_t i = 0; i < bytes; ++i) {
    if (yj[i] != yr[i] || yc[i] != yj[i]) {
      const size_t t = i / rb, in_row = i % rb;
      std::string where;
      if (o.type == DType::Q8_K) {
        const size_t blk = in_row / 292, off = in_row % 292;
        where = fmt::format("block {} {}", blk,
                            off < 4     ? "d"
                            : off < 260 ? fmt::format("qs[{}]", off - 4)
                                        : fmt::format("bsums[{}]", (off - 260) / 2));
        std::string in;
        for (int j = 0; j < 256; ++j)
          in += fmt::format(" {:a}", double(x[int64_t(t) * K + int64_t(blk) * 256 + j]));
        where += "; block inputs:" + in;
      } else {
        where = fmt::format("element {} = {:a}", in_row / 2,
                            double(x[int64_t(t) * K + int64_t(in_row / 2)]));
      }
      return fmt::format(
          "K={} T={} t0={} t1={}: token {} byte {}: jit {:02x} reference {:02x} "
          "C {:02x}; {}",
          K, T, t0, t1, t, in_row, yj[i], yr[i], yc[i], where);
    }
  }
  return "";
}

// Special values that reach every branch: NaNs (quiet, signaling, negative, with payloads
// that survive nearest_int's mantissa or the f16 conversion), ±Inf, ±0, subnormals,
// FLT_MAX, magnitudes whose 127 / max overflows, f16 / bf16 rounding ties and overflow.
const std::vector<float>& specials() {
  static const std::vector<float> v = {kNaN,
                                       -kNaN,
                                       bits_f(0x7f800001u),
                                       bits_f(0xffa00000u),
                                       bits_f(0x7fc0007fu),
                                       bits_f(0x7fc02000u),
                                       bits_f(0xffffffffu),
                                       kInf,
                                       -kInf,
                                       0.0f,
                                       -0.0f,
                                       kSub,
                                       -kSub,
                                       bits_f(0x007fffffu),
                                       -std::numeric_limits<float>::min(),
                                       std::numeric_limits<float>::max(),
                                       -std::numeric_limits<float>::max(),
                                       1e-37f,
                                       -2e-38f,
                                       65504.f,
                                       65520.f,
                                       -65520.f,
                                       bits_f(0x3f801000u),  // f16 tie: 1 + 2^-11
                                       bits_f(0x3f808000u),  // bf16 tie, even below
                                       bits_f(0x3f818000u),  // bf16 tie, odd below
                                       bits_f(0x33000000u),  // 2^-25: half the smallest f16
                                       bits_f(0x7f7fffffu),
                                       127.f,
                                       -127.5f,
                                       0.5f};
  return v;
}

std::mt19937& gen() {
  static std::mt19937 r(53);
  return r;
}
uint32_t rnd() {
  return gen()();
}

// A random row of n floats over many magnitudes.
std::vector<float> random_row(int64_t n, int spread) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> ex(-spread, spread);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = std::ldexp(u(gen()), ex(gen()));
  return x;
}

void expect_same(const Loaded& l, const std::vector<float>& x, int64_t K, int64_t T) {
  if (std::string d = check(l, x.data(), K, T, 0, T); !d.empty()) FAIL() << d;
}

// Random rows: several K and T, every token range (T % 4 picks the 4x8 quantizer).
void random_rows(const Loaded& l, const std::vector<int64_t>& Ks) {
  for (int64_t K : Ks)
    for (int64_t T : {1, 2, 3, 4, 5, 8, 9}) {
      std::vector<float> x = random_row(K * T, 20);
      for (int64_t t0 = 0; t0 <= T; ++t0)
        for (int64_t t1 = t0; t1 <= T; ++t1)
          if (std::string d = check(l, x.data(), K, T, t0, t1); !d.empty()) FAIL() << d;
      x = random_row(K * T, 140);  // subnormal to huge, mixed within a block
      expect_same(l, x, K, T);
    }
}

// Rows outside the map's shapes (K not a multiple of `B`, the kernel's block; K <= 0; bad
// ranges): nothing written; rows ending at guard pages (reads and writes stay inside).
void bounds(const Loaded& l, int64_t B) {
  const Out o = out_of(l);
  {
    std::vector<float> x(size_t(4 * B * 3), 1.0f);
    for (auto [K, T, t0, t1] : std::vector<std::array<int64_t, 4>>{{B + B / 2, 3, 0, 3},
                                                                   {B / 2, 3, 0, 3},
                                                                   {0, 3, 0, 3},
                                                                   {-B, 3, 0, 3},
                                                                   {B, 3, -1, 2},
                                                                   {B, 3, 2, 1},
                                                                   {B, 3, 0, 4}}) {
      std::vector<uint8_t> yj(o.row(4 * B) * 3, 0xA5), yc(yj);
      dirty_stack(uint8_t(__LINE__));
      l.fn(x.data(), yj.data(), K, T, t0, t1);
      dirty_stack(uint8_t(__LINE__));
      l.cfn(x.data(), yc.data(), K, T, t0, t1);
      EXPECT_TRUE(std::all_of(yj.begin(), yj.end(), [](uint8_t b) { return b == 0xA5; }))
          << "JIT wrote for K=" << K << " t0=" << t0 << " t1=" << t1;
      EXPECT_TRUE(std::all_of(yc.begin(), yc.end(), [](uint8_t b) { return b == 0xA5; }))
          << "C wrote for K=" << K << " t0=" << t0 << " t1=" << t1;
    }
  }
  for (int64_t K : {B, 2 * B, 5 * B}) {
    for (int64_t T : {1, 4, 5}) {
      std::vector<float> x = random_row(K * T, 8);
      const size_t ybytes = o.row(K) * size_t(T);
      GuardedBuffer gx(x.data(), x.size() * 4);
      std::vector<uint8_t> zero(ybytes, 0), yr(ybytes, 0);
      GuardedBuffer gj(zero.data(), ybytes), gc(zero.data(), ybytes);
      const float* xp = static_cast<const float*>(gx.data());
      l.ref(xp, yr.data(), K, T, 0, T);
      dirty_stack(uint8_t(__LINE__));
      l.fn(xp, gj.data(), K, T, 0, T);
      dirty_stack(uint8_t(__LINE__));
      l.cfn(xp, gc.data(), K, T, 0, T);
      EXPECT_EQ(std::memcmp(gj.data(), yr.data(), ybytes), 0) << "guarded K=" << K << " T=" << T;
      EXPECT_EQ(std::memcmp(gc.data(), yr.data(), ybytes), 0) << "guarded C K=" << K;
    }
  }
}

// Each row of blocks is run as T = 4 (the 4x8 quantizer) and T = 1 (plain q8_K).
void blocks4(const Loaded& l, const std::vector<float>& blocks) {
  const int64_t n = int64_t(blocks.size()) / 256;
  // Four tokens of n / 4 blocks (the rest of n goes to a T = 1 call).
  const int64_t per = n / 4;
  if (per > 0) {
    std::vector<float> x(blocks.begin(), blocks.begin() + per * 4 * 256);
    expect_same(l, x, per * 256, 4);
  }
  expect_same(l, blocks, n * 256, 1);
}

void run_q8_K(const std::string& id) {
  std::string skip;
  const Loaded l = load_generated<ActQuantFn>(id, "act_quant", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  random_rows(l, {256, 512, 2048});
  if (::testing::Test::HasFatalFailure()) return;

  // Magnitude ties of opposite sign: +A and -A at every pair of positions (same lane in
  // another vector, another lane, another 32-element sub-block), with smaller background.
  {
    std::vector<float> blocks;
    for (int p1 = 0; p1 < 256; p1 += 3)
      for (int p2 :
           {(p1 + 8) % 256, (p1 + 1) % 256, (p1 + 37) % 256, (p1 + 131) % 256, (p1 + 255) % 256}) {
        float blk[256];
        for (float& v : blk) v = u(gen()) * 0.5f;
        const float A = p1 % 2 ? 1.0f : 3.5f;
        blk[p1] = (p2 & 1) ? A : -A;
        blk[p2] = -blk[p1];
        blocks.insert(blocks.end(), blk, blk + 256);
      }
    blocks4(l, blocks);
  }
  // All-equal blocks, all-zero (+0 / -0) blocks, one nonzero (subnormal, tiny) element.
  {
    std::vector<float> blocks;
    for (float c : {1.0f, -1.0f, 3.75f, -0.0f, 0.0f, kSub, -1e-37f, 1e30f, -kInf}) {
      std::vector<float> blk(256, c);
      blocks.insert(blocks.end(), blk.begin(), blk.end());
    }
    for (int pos = 0; pos < 256; pos += 5)
      for (float s : {kSub, -kSub, bits_f(0x80400000u), 2e-37f}) {
        std::vector<float> blk(256, (pos & 1) ? -0.0f : 0.0f);
        blk[size_t(pos)] = s;
        blocks.insert(blocks.end(), blk.begin(), blk.end());
      }
    blocks4(l, blocks);
  }
  // Rounding ties: max = ±127 (iscale = ∓1) and halves k + 0.5 elsewhere; max = 254 with odd
  // integers (iscale * x = ±k.5 after rounding).
  {
    std::vector<float> blocks;
    for (int r = 0; r < 24; ++r) {
      float blk[256];
      const float mx = r % 3 == 0 ? 127.f : r % 3 == 1 ? -127.f : 254.f;
      for (float& v : blk)
        v = r % 3 == 2 ? float(2 * int(rnd() % 254) - 253) : float(int(rnd() % 253) - 126) + 0.5f;
      blk[rnd() % 256] = mx;
      blocks.insert(blocks.end(), blk, blk + 256);
    }
    blocks4(l, blocks);
  }
  // Every special value in every 7th position of a block, over three backgrounds (random,
  // zeros, subnormal); pairs of specials.
  const std::vector<float>& sp = specials();
  for (int bg = 0; bg < 3; ++bg) {
    std::vector<float> blocks;
    for (float s : sp)
      for (int pos = bg; pos < 256; pos += 7) {
        float blk[256];
        for (float& v : blk)
          v = bg == 0 ? u(gen()) * 3.f : bg == 1 ? 0.0f : kSub * float(rnd() % 5);
        blk[pos] = s;
        blocks.insert(blocks.end(), blk, blk + 256);
      }
    blocks4(l, blocks);
    if (::testing::Test::HasFatalFailure()) return;
  }
  {
    std::vector<float> blocks;
    for (float s1 : sp)
      for (float s2 : sp)
        for (int k = 0; k < 2; ++k) {
          float blk[256];
          for (float& v : blk) v = u(gen()) * 0.25f;
          const int p1 = int(rnd() % 256);
          blk[p1] = s1;
          blk[k ? (p1 + 8 * int(rnd() % 31 + 1)) % 256 : int(rnd() % 256)] = s2;
          blocks.insert(blocks.end(), blk, blk + 256);
        }
    blocks4(l, blocks);
  }
  // A NaN somewhere and a large value elsewhere: the 4x8 maxps chains may drop or keep it.
  {
    std::vector<float> blocks;
    std::uniform_int_distribution<int> ex(-140, 127);
    for (int i = 0; i < 800; ++i) {
      float blk[256];
      const int kind = int(rnd() % 3);
      for (float& v : blk) v = kind == 0 ? 0.0f : kind == 1 ? kSub : u(gen()) * 0.001f;
      const int n = 1 + int(rnd() % 4);
      for (int j = 0; j < n; ++j) blk[rnd() % 256] = sp[rnd() % sp.size()];
      blk[rnd() % 256] = std::ldexp(u(gen()), ex(gen()));
      blocks.insert(blocks.end(), blk, blk + 256);
    }
    blocks4(l, blocks);
  }
  bounds(l, 256);
}

void run_convert(const std::string& id) {
  std::string skip;
  const Loaded l = load_generated<ActQuantFn>(id, "act_quant", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  random_rows(l, {8, 16, 64, 2056});
  if (::testing::Test::HasFatalFailure()) return;
  // Every special, and every f16 / bf16 rounding tie around many exponents (both parities
  // of the kept mantissa), subnormal halves, overflow.
  std::vector<float> x;
  for (int rep = 0; rep < 8; ++rep) x.insert(x.end(), specials().begin(), specials().end());
  for (int e = -30; e <= 20; ++e)
    for (uint32_t m : {0x1000u, 0x3000u, 0x0fffu, 0x1001u, 0x8000u, 0x18000u, 0x7fffu, 0x8001u})
      for (uint32_t s : {0u, 0x80000000u}) {
        const uint32_t ex = uint32_t(127 + e) << 23;
        x.push_back(bits_f(s | ex | m));
      }
  for (uint32_t m = 0; m < 0x800000u; m += 0x1fffu) x.push_back(bits_f(m));  // subnormals
  for (uint32_t u = 0x7f800000u; u < 0x80000000u; u += 0x31337u) x.push_back(bits_f(u));
  for (uint32_t u = 0xff800000u; u != 0u && u >= 0xff800000u; u += 0x31337u) x.push_back(bits_f(u));
  while (x.size() % 8) x.push_back(1.0f);
  expect_same(l, x, int64_t(x.size()), 1);
  bounds(l, 8);
}

}  // namespace

TEST(JitActQuant, act_quant_q8_K_f32_8l__avx512) {
  run_q8_K("act_quant_q8_K_f32_8l__avx512");
}
TEST(JitActQuant, act_quant_q8_K_f32_8l__avx2) {
  run_q8_K("act_quant_q8_K_f32_8l__avx2");
}
TEST(JitActQuant, act_quant_q8_K_4x8_f32_8l__avx512) {
  run_q8_K("act_quant_q8_K_4x8_f32_8l__avx512");
}
TEST(JitActQuant, act_quant_q8_K_4x8_f32_8l__avx2) {
  run_q8_K("act_quant_q8_K_4x8_f32_8l__avx2");
}
TEST(JitActQuant, act_quant_f16_f32_8l__avx512) {
  run_convert("act_quant_f16_f32_8l__avx512");
}
TEST(JitActQuant, act_quant_f16_f32_8l__avx2) {
  run_convert("act_quant_f16_f32_8l__avx2");
}
TEST(JitActQuant, act_quant_bf16_f32_8l__avx512) {
  run_convert("act_quant_bf16_f32_8l__avx512");
}
TEST(JitActQuant, act_quant_bf16_f32_8l__avx2) {
  run_convert("act_quant_bf16_f32_8l__avx2");
}

}  // namespace cke::test
