// Each generated embed provider of kernel_maps/ (embed_generated.yaml) against the reference
// kernel of its contract, and its emitted C against its machine code: JIT and reference
// rows bit-identical (a NaN only matches a NaN: see same_bits), C and JIT identical (memcmp),
// on tables of random bytes (every quant, nibble, high bit and 6-bit scale pattern; every
// f16/bf16/f32 bit pattern incl. NaN payloads and subnormals), zero and all-ones tables,
// fp16 scales set to every special (NaN, sNaN, ±Inf, subnormal, ±0, 65504), several widths
// and token counts, repeated and boundary token ids, negative ids (a zero row), tables and
// outputs ending at a guard page, and widths outside the map (nothing written).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "generated_kernel.h"
#include "jit/gen_embed.h"
#include "jit_test_util.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

using jit::gen::EmbedFn;
using Loaded = GeneratedKernel<EmbedFn>;

struct Table {
  DType type;
  int64_t block;                 // elements per kernel step (a block; 16 for float tables)
  size_t bytes;                  // bytes per dtype block
  int64_t belems;                // elements per dtype block
  std::vector<int> half_fields;  // offsets of the fp16 scales in a block
  size_t row(int64_t E) const { return size_t(E / belems) * bytes; }
};

Table table_of(const Loaded& l) {
  const DType t = l.map->port("table")->dtype;
  const DTypeInfo& i = dtype_info(t);
  Table tb{
      t, i.block_size == 1 ? 16 : int64_t(i.block_size), i.type_size, int64_t(i.block_size), {}};
  switch (t) {
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
      tb.half_fields = {0};
      break;
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K:
      tb.half_fields = {0, 2};
      break;
    case DType::Q6_K:
      tb.half_fields = {208};
      break;
    case DType::Q2_K:
      tb.half_fields = {80, 82};
      break;
    case DType::Q3_K:
      tb.half_fields = {108};
      break;
    default:
      break;
  }
  return tb;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0 || (std::isnan(a) && std::isnan(b));
}

// "" when reference, JIT and C agree on E x T outputs for `tokens`; else the first difference.
std::string check(const Loaded& l, const std::vector<uint8_t>& table, int64_t E,
                  const std::vector<int32_t>& tokens) {
  const int64_t T = int64_t(tokens.size());
  const size_t n = size_t(E * T);
  std::vector<float> yr(n + 16, 1234.5f), yj(yr), yc(yr);
  l.ref(tokens.data(), table.data(), yr.data(), E, T);
  dirty_stack(uint8_t(__LINE__));
  l.fn(tokens.data(), table.data(), yj.data(), E, T);
  dirty_stack(uint8_t(__LINE__));
  l.cfn(tokens.data(), table.data(), yc.data(), E, T);
  for (size_t i = 0; i < n + 16; ++i) {
    if (!same_bits(yj[i], yr[i]) || std::memcmp(&yj[i], &yc[i], 4) != 0) {
      const size_t t = i / size_t(E);
      return fmt::format(
          "E={} T={}: output {} (token {} = id {}, element {}): jit {:a} "
          "reference {:a} C {:a}",
          E, T, i, t, t < tokens.size() ? tokens[t] : -1, i % size_t(E), double(yj[i]),
          double(yr[i]), double(yc[i]));
    }
  }
  return "";
}

std::mt19937& gen() {
  static std::mt19937 r(71);
  return r;
}

std::vector<uint8_t> random_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  for (uint8_t& x : v) x = uint8_t(gen()());
  return v;
}

void run_embed(const std::string& id) {
  std::string skip;
  const Loaded l = load_generated<EmbedFn>(id, "embed", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  const Table tb = table_of(l);
  const int64_t V = 37;
  const uint16_t specials[] = {0x7e00, 0x7c01, 0xfe01, 0x7c00, 0xfc00, 0x0001, 0x83ff,
                               0x8000, 0x0000, 0x7bff, 0xfbff, 0x3c00, 0x0400, 0x1234};
  for (int64_t E : {tb.block, 2 * tb.block, 3 * tb.block, tb.block == 16 ? 4096 : 8 * tb.block}) {
    const size_t rb = tb.row(E);
    for (int style = 0; style < 4; ++style) {
      std::vector<uint8_t> table = random_bytes(rb * size_t(V));
      if (style == 1) std::fill(table.begin(), table.end(), 0);
      if (style == 2) std::fill(table.begin(), table.end(), 0xFF);
      if (style == 3) {  // every special fp16 scale
        size_t k = 0;
        for (size_t off = 0; off + tb.bytes <= table.size(); off += tb.bytes)
          for (int f : tb.half_fields) {
            const uint16_t h = specials[k++ % std::size(specials)];
            std::memcpy(&table[off + size_t(f)], &h, 2);
          }
        if (tb.half_fields.empty()) continue;
      }
      for (int64_t T : {1, 2, 5, 17}) {
        std::vector<int32_t> tokens(static_cast<size_t>(T));
        for (int32_t& t : tokens) t = int32_t(gen()() % uint32_t(V));
        tokens[0] = T > 2 ? 0 : int32_t(V - 1);
        if (T > 2) tokens[1] = int32_t(V - 1);
        if (T > 4) tokens[3] = -1;  // no row: zeros
        if (T > 5) tokens[5] = std::numeric_limits<int32_t>::min();
        if (std::string d = check(l, table, E, tokens); !d.empty())
          FAIL() << id << " style " << style << ": " << d;
      }
      // Every row once.
      std::vector<int32_t> all(static_cast<size_t>(V));
      for (int32_t i = 0; i < int32_t(V); ++i) all[size_t(i)] = i;
      if (std::string d = check(l, table, E, all); !d.empty())
        FAIL() << id << " style " << style << ": " << d;
    }
    // The table's last row and the outputs end at a guard page.
    std::vector<uint8_t> table = random_bytes(rb * size_t(V));
    std::vector<int32_t> tokens = {int32_t(V - 1), 2, int32_t(V - 1)};
    const size_t ybytes = size_t(E) * tokens.size() * 4;
    GuardedBuffer gt(table.data(), table.size());
    std::vector<uint8_t> zero(ybytes, 0);
    GuardedBuffer gj(zero.data(), ybytes), gc(zero.data(), ybytes);
    std::vector<float> yr(size_t(E) * tokens.size());
    l.ref(tokens.data(), gt.data(), yr.data(), E, 3);
    dirty_stack(uint8_t(__LINE__));
    l.fn(tokens.data(), gt.data(), static_cast<float*>(gj.data()), E, 3);
    dirty_stack(uint8_t(__LINE__));
    l.cfn(tokens.data(), gt.data(), static_cast<float*>(gc.data()), E, 3);
    EXPECT_EQ(std::memcmp(gj.data(), gc.data(), ybytes), 0) << "guarded E=" << E;
    const float* pj = static_cast<const float*>(gj.data());
    for (size_t i = 0; i < yr.size(); ++i)
      if (!same_bits(pj[i], yr[i])) {
        ADD_FAILURE() << "guarded E=" << E << " output " << i;
        break;
      }
  }
  // Widths the map does not admit, and E <= 0: nothing written.
  for (int64_t E : {tb.block / 2, tb.block + tb.block / 2, int64_t(0), -tb.block}) {
    std::vector<uint8_t> table = random_bytes(tb.row(4 * tb.block) * 4);
    std::vector<int32_t> tokens = {0, 1};
    std::vector<float> yj(size_t(8 * tb.block), 1234.5f), yc(yj);
    dirty_stack(uint8_t(__LINE__));
    l.fn(tokens.data(), table.data(), yj.data(), E, 2);
    dirty_stack(uint8_t(__LINE__));
    l.cfn(tokens.data(), table.data(), yc.data(), E, 2);
    EXPECT_TRUE(std::all_of(yj.begin(), yj.end(), [](float v) { return v == 1234.5f; }))
        << "JIT wrote for E=" << E;
    EXPECT_TRUE(std::all_of(yc.begin(), yc.end(), [](float v) { return v == 1234.5f; }))
        << "C wrote for E=" << E;
  }
}

}  // namespace

TEST(JitEmbed, embed_f32_f32__avx512) {
  run_embed("embed_f32_f32__avx512");
}
TEST(JitEmbed, embed_f32_f32__avx2) {
  run_embed("embed_f32_f32__avx2");
}
TEST(JitEmbed, embed_f16_f32__avx512) {
  run_embed("embed_f16_f32__avx512");
}
TEST(JitEmbed, embed_f16_f32__avx2) {
  run_embed("embed_f16_f32__avx2");
}
TEST(JitEmbed, embed_bf16_f32__avx512) {
  run_embed("embed_bf16_f32__avx512");
}
TEST(JitEmbed, embed_bf16_f32__avx2) {
  run_embed("embed_bf16_f32__avx2");
}
TEST(JitEmbed, embed_q8_0_f32__avx512) {
  run_embed("embed_q8_0_f32__avx512");
}
TEST(JitEmbed, embed_q8_0_f32__avx2) {
  run_embed("embed_q8_0_f32__avx2");
}
TEST(JitEmbed, embed_q4_0_f32__avx512) {
  run_embed("embed_q4_0_f32__avx512");
}
TEST(JitEmbed, embed_q4_0_f32__avx2) {
  run_embed("embed_q4_0_f32__avx2");
}
TEST(JitEmbed, embed_q4_1_f32__avx512) {
  run_embed("embed_q4_1_f32__avx512");
}
TEST(JitEmbed, embed_q4_1_f32__avx2) {
  run_embed("embed_q4_1_f32__avx2");
}
TEST(JitEmbed, embed_q5_0_f32__avx512) {
  run_embed("embed_q5_0_f32__avx512");
}
TEST(JitEmbed, embed_q5_0_f32__avx2) {
  run_embed("embed_q5_0_f32__avx2");
}
TEST(JitEmbed, embed_q5_1_f32__avx512) {
  run_embed("embed_q5_1_f32__avx512");
}
TEST(JitEmbed, embed_q5_1_f32__avx2) {
  run_embed("embed_q5_1_f32__avx2");
}
TEST(JitEmbed, embed_q2_K_f32__avx512) {
  run_embed("embed_q2_K_f32__avx512");
}
TEST(JitEmbed, embed_q2_K_f32__avx2) {
  run_embed("embed_q2_K_f32__avx2");
}
TEST(JitEmbed, embed_q3_K_f32__avx512) {
  run_embed("embed_q3_K_f32__avx512");
}
TEST(JitEmbed, embed_q3_K_f32__avx2) {
  run_embed("embed_q3_K_f32__avx2");
}
TEST(JitEmbed, embed_q4_K_f32__avx512) {
  run_embed("embed_q4_K_f32__avx512");
}
TEST(JitEmbed, embed_q4_K_f32__avx2) {
  run_embed("embed_q4_K_f32__avx2");
}
TEST(JitEmbed, embed_q5_K_f32__avx512) {
  run_embed("embed_q5_K_f32__avx512");
}
TEST(JitEmbed, embed_q5_K_f32__avx2) {
  run_embed("embed_q5_K_f32__avx2");
}
TEST(JitEmbed, embed_q6_K_f32__avx512) {
  run_embed("embed_q6_K_f32__avx512");
}
TEST(JitEmbed, embed_q6_K_f32__avx2) {
  run_embed("embed_q6_K_f32__avx2");
}

TEST(JitEmbed, EveryGeneratedProviderHasATest) {
  std::vector<std::string> tested;
  for (const char* t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K",
                        "q3_K", "q4_K", "q5_K", "q6_K"})
    for (const char* isa : {"avx512", "avx2"})
      tested.push_back(fmt::format("embed_{}_f32__{}", t, isa));
  std::vector<std::string> maps;
  for (const KernelMap& m : real_registry().maps())
    if (m.op == "embed" && !m.impl.generator.empty()) maps.push_back(m.id);
  std::sort(maps.begin(), maps.end());
  std::sort(tested.begin(), tested.end());
  EXPECT_EQ(maps, tested);
}

}  // namespace cke::test
