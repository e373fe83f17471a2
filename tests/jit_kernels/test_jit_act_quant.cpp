// Each generated act_quant provider of kernel_maps/ against the reference kernel of its
// contract, and its emitted C against its machine code: every output byte identical
// (memcmp), on random rows of several K and T over many magnitudes, token ranges, every
// special value (±0, ±Inf, NaN, subnormals, ±FLT_MAX) in every position of a block,
// all-zero blocks, blocks whose only nonzero is subnormal, rows ending at a guard page,
// and calls outside the contract (nothing written).
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
#include "jit/kir/kir_c.h"
#include "jit_test_util.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

using jit::gen::ActQuantFn;

using Loaded = GeneratedKernel<ActQuantFn>;
Loaded load(const std::string& id, std::string* skip) {
  return load_generated<ActQuantFn>(id, "act_quant", skip);
}

// The block of the provider's output: q8_0 (fp16 d + 32 int8, 34 bytes) or q8_1 (fp16 d,
// fp16 s + 32 int8, 36 bytes).
size_t block_bytes(const Loaded& l) {
  return dtype_info(l.map->port("y")->dtype).type_size;
}

// "" when JIT, reference and C write the same bytes for tokens [t0, t1) of x (K x T), and
// nothing outside them; else the first difference.
std::string check(const Loaded& l, const float* x, int64_t K, int64_t T, int64_t t0, int64_t t1) {
  const size_t kBlockBytes = block_bytes(l), qs = kBlockBytes - 32;
  const size_t bytes = size_t(K / 32 * T) * kBlockBytes;
  std::vector<uint8_t> yr(bytes, 0xA5), yj(bytes, 0xA5), yc(bytes, 0xA5);
  l.ref(x, yr.data(), K, T, t0, t1);
  dirty_stack(uint8_t(__LINE__));
  l.fn(x, yj.data(), K, T, t0, t1);
  dirty_stack(uint8_t(__LINE__));
  l.cfn(x, yc.data(), K, T, t0, t1);
  for (size_t i = 0; i < bytes; ++i) {
    if (yj[i] != yr[i] || yc[i] != yj[i]) {
      const size_t blk = i / kBlockBytes, off = i % kBlockBytes;
      auto field = [qs](size_t o) { return o < 2 ? "d" : o < qs ? "s" : "qs"; };
      const size_t e = blk * 32 + (off >= qs ? off - qs : 0);
      std::string in;
      for (int j = 0; j < 32; ++j) in += fmt::format(" {:a}", double(x[blk * 32 + size_t(j)]));
      return fmt::format(
          "K={} T={} t0={} t1={}: byte {} (block {}, {}): jit {:02x} reference {:02x} C {:02x};"
          " element {} block inputs:{}",
          K, T, t0, t1, i, blk, field(off), yj[i], yr[i], yc[i], e, in);
    }
  }
  return "";
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kSub = std::numeric_limits<float>::denorm_min();

float bits_f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Special values that reach every branch of the arithmetic: NaN (quiet, signaling, negative),
// ±Inf, ±0, subnormals, FLT_MAX, values around the fp16 range of d.
const std::vector<float>& specials() {
  static const std::vector<float> v = {kNaN,
                                       -kNaN,
                                       bits_f(0x7f800001u),
                                       bits_f(0xffa00000u),
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
                                       65504.f * 127.f,
                                       65520.f * 127.f,
                                       1e-8f,
                                       127.f,
                                       -127.5f,
                                       0.5f};
  return v;
}

void run_q8_0(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(47);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::uniform_int_distribution<int> ex(-140, 127);

  // Random rows: several K and T, magnitudes from subnormal to huge, all token ranges.
  for (int64_t K : {32, 64, 96, 256, 4096}) {
    for (int64_t T : {1, 2, 3, 5, 9}) {
      std::vector<float> x(size_t(K * T));
      for (float& v : x) v = std::ldexp(u(rng), ex(rng) / 4 + (rng() % 3 == 0 ? ex(rng) / 2 : 0));
      for (int64_t t0 = 0; t0 <= T; ++t0)
        for (int64_t t1 = t0; t1 <= T; ++t1)
          if (std::string d = check(l, x.data(), K, T, t0, t1); !d.empty()) FAIL() << d;
      // One magnitude per block, from 2^-149 to 2^127.
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(u(rng), ex(rng));
      if (std::string d = check(l, x.data(), K, T, 0, T); !d.empty()) FAIL() << d;
      // Halfway values of x * id (ties to even) on integer-scaled rows.
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(rng() % 255) - 127) * 0.5f;
      if (std::string d = check(l, x.data(), K, T, 0, T); !d.empty()) FAIL() << d;
    }
  }

  // Every special value in every position of a block, over three backgrounds (random,
  // zeros, tiny); and pairs of specials at every pair of the four 8-lane vectors'
  // positions (NaN and the maxps operand order).
  const std::vector<float>& sp = specials();
  for (int bg = 0; bg < 3; ++bg) {
    std::vector<float> row;
    for (float s : sp)
      for (int pos = 0; pos < 32; ++pos) {
        float blk[32];
        for (float& v : blk) v = bg == 0 ? u(rng) * 3.f : bg == 1 ? 0.0f : kSub * float(rng() % 5);
        blk[pos] = s;
        row.insert(row.end(), blk, blk + 32);
      }
    const int64_t K = int64_t(row.size());
    if (std::string d = check(l, row.data(), K, 1, 0, 1); !d.empty()) FAIL() << d;
  }
  for (float s1 : sp)
    for (float s2 : sp) {
      std::vector<float> row;
      for (int p1 = 0; p1 < 32; ++p1)
        for (int v2 = 0; v2 < 4; ++v2) {
          float blk[32];
          for (float& v : blk) v = u(rng) * 0.25f;
          blk[p1] = s1;
          const int p2 = (p1 % 8) + 8 * v2;  // same lane, another vector (or the same element)
          if (p2 != p1) blk[p2] = s2;
          row.insert(row.end(), blk, blk + 32);
          for (float& v : blk) v = u(rng) * 0.25f;
          blk[p1] = s1;
          blk[(p1 + 4 + 8 * v2) % 32] = s2;  // the other 128-bit half, any vector
          row.insert(row.end(), blk, blk + 32);
        }
      if (std::string d = check(l, row.data(), int64_t(row.size()), 1, 0, 1); !d.empty())
        FAIL() << d;
    }
  // NaN somewhere, then a large finite value elsewhere: amax may fold to 0, a NaN or a finite
  // value depending on the order (the folded amax may be smaller than the true one).
  {
    std::vector<float> row;
    for (int i = 0; i < 2000; ++i) {
      float blk[32];
      const int kind = int(rng() % 3);
      for (float& v : blk) v = kind == 0 ? 0.0f : kind == 1 ? kSub : u(rng) * 0.001f;
      const int n = 1 + int(rng() % 4);
      for (int j = 0; j < n; ++j) blk[rng() % 32] = sp[rng() % sp.size()];
      blk[rng() % 32] = std::ldexp(u(rng), ex(rng));
      row.insert(row.end(), blk, blk + 32);
    }
    if (std::string d = check(l, row.data(), int64_t(row.size()), 1, 0, 1); !d.empty()) FAIL() << d;
  }
  // All-zero blocks (+0 and -0) and blocks whose only nonzero is subnormal.
  {
    std::vector<float> row;
    for (int pos = 0; pos < 32; ++pos) {
      float blk[32];
      for (float& v : blk) v = (pos & 1) ? -0.0f : 0.0f;
      row.insert(row.end(), blk, blk + 32);
      for (float s : {kSub, -kSub, bits_f(0x007fffffu), bits_f(0x80400000u)}) {
        for (float& v : blk) v = 0.0f;
        blk[pos] = s;
        row.insert(row.end(), blk, blk + 32);
      }
    }
    if (std::string d = check(l, row.data(), int64_t(row.size()), 1, 0, 1); !d.empty()) FAIL() << d;
  }
  // Rows ending at a guard page: input and output (reads and writes stay inside).
  for (int64_t K : {32, 64, 160}) {
    for (int64_t T : {1, 3}) {
      std::vector<float> x(size_t(K * T));
      for (float& v : x) v = std::ldexp(u(rng), ex(rng) / 8);
      const size_t ybytes = size_t(K / 32 * T) * block_bytes(l);
      GuardedBuffer gx(x.data(), x.size() * 4);
      std::vector<uint8_t> zero(ybytes, 0);
      GuardedBuffer gj(zero.data(), ybytes), gc(zero.data(), ybytes);
      std::vector<uint8_t> yr(ybytes, 0);
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
  // Outside the contract (K % 32 != 0, K <= 0, bad ranges): nothing written.
  {
    std::vector<float> x(64 * 3, 1.0f);
    for (auto [K, T, t0, t1] : std::vector<std::array<int64_t, 4>>{{48, 3, 0, 3},
                                                                   {0, 3, 0, 3},
                                                                   {-32, 3, 0, 3},
                                                                   {32, 3, -1, 2},
                                                                   {32, 3, 2, 1},
                                                                   {32, 3, 0, 4}}) {
      std::vector<uint8_t> yj(64 * 3 * 3, 0xA5), yc(yj);
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
}

}  // namespace

TEST(JitActQuant, act_quant_q8_0_f32_16l__avx512) {
  run_q8_0("act_quant_q8_0_f32_16l__avx512");
}
TEST(JitActQuant, act_quant_q8_0_f32_16l__avx2) {
  run_q8_0("act_quant_q8_0_f32_16l__avx2");
}

// q8_1: the same quantizer and harness; the s field is compared as every other byte.
TEST(JitActQuant, act_quant_q8_1_f32_16l__avx512) {
  run_q8_0("act_quant_q8_1_f32_16l__avx512");
}
TEST(JitActQuant, act_quant_q8_1_f32_16l__avx2) {
  run_q8_0("act_quant_q8_1_f32_16l__avx2");
}

TEST(JitActQuant, EveryGeneratedProviderHasATest) {
  std::vector<std::string> tested = {
      "act_quant_q8_0_f32_16l__avx2", "act_quant_q8_0_f32_16l__avx512",
      "act_quant_q8_1_f32_16l__avx2", "act_quant_q8_1_f32_16l__avx512",
      // test_jit_act_quant_k.cpp
      "act_quant_q8_K_f32_8l__avx2", "act_quant_q8_K_f32_8l__avx512",
      "act_quant_q8_K_4x8_f32_8l__avx2", "act_quant_q8_K_4x8_f32_8l__avx512",
      "act_quant_f16_f32_8l__avx2", "act_quant_f16_f32_8l__avx512", "act_quant_bf16_f32_8l__avx2",
      "act_quant_bf16_f32_8l__avx512"};
  std::vector<std::string> maps;
  for (const KernelMap& m : real_registry().maps())
    if (m.op == "act_quant" && !m.impl.generator.empty()) maps.push_back(m.id);
  std::sort(maps.begin(), maps.end());
  std::sort(tested.begin(), tested.end());
  EXPECT_EQ(maps, tested);
}

}  // namespace cke::test
