// Each generated flash-attention provider of kernel_maps/ (contract attention.f16_flash.ggml)
// against attention_f16_flash__ref, its contract's oracle, and its emitted C against its
// machine code (memcmp): every output bit-identical (a NaN matches any NaN). Cases: head
// dims 64/128/256, GQA groups, decode (T = 1) at positions 0..n_ctx-1 with and without a
// sliding window, batches of T < 64 (the one-chunk loop) and T >= 64 (the tiled loop: 16
// rows a unit, tiles of 64 cells, partial tiles and row groups, passes of several heads and
// row groups sharing a tile), head ranges, caches whose
// unwritten cells hold NaN (a kernel that reads past the visible cells turns them into NaN
// outputs), K and V at the very end of a guard page, huge scores (most weights underflow), fp16
// overflow of the value accumulator, NaN and Inf queries, and calls outside the contract or the map
// (nothing written).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "attention_test_util.h"
#include "generated_kernel.h"
#include "jit/gen_attention_flash.h"
#include "jit_test_util.h"
#include "kernels/formats/quant.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

using Fn = jit::gen::AttentionF16Fn;
using Loaded = GeneratedKernel<Fn>;

using Shape = AttnShape;
using Call = AttnCall;

// One layer's cache, K and V cell-major fp16 [n_ctx][kv_dim]; cells at or after `written`
// hold NaN.
struct Cache {
  std::vector<uint16_t> k, v;
};
Cache make_cache(const Shape& s, int64_t written, std::mt19937& rng, float vmag = 1.0f) {
  const int64_t kv = s.hd * s.nhkv;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const uint16_t nan = 0x7e00;
  Cache c;
  c.k.resize(size_t(kv * s.nctx));
  c.v.resize(size_t(kv * s.nctx));
  for (int64_t i = 0; i < kv * s.nctx; ++i) {
    const bool w = i / kv < written;
    c.k[size_t(i)] = w ? fp32_to_fp16(nd(rng)) : nan;
    c.v[size_t(i)] = w ? fp32_to_fp16(vmag * nd(rng)) : nan;
  }
  return c;
}

// "" when reference, machine code and emitted C agree bit for bit (attention_test_util.h).
std::string compare(const Loaded& l, const Shape& s, const uint16_t* k, const uint16_t* v,
                    const std::vector<float>& q, const Call& c) {
  return compare_attention(l, s, k, v, q, c);
}

const Shape kShapes[] = {
    {64, 32, 4, 150},  // TinyLlama: head_dim 64, GQA 8
    {128, 4, 4, 70},   // two chunks, no GQA
    {128, 6, 2, 70},   // two chunks, GQA 3: two heads of a group together, the third alone
    {256, 2, 1, 140},  // four chunks
};

void sweep(const Loaded& l) {
  std::mt19937 rng(7);
  for (const Shape& s : kShapes) {
    for (int64_t window : {int64_t(0), int64_t(5), int64_t(16)}) {
      for (int64_t pos : {0, 1, 2, 15, 16, 63, 64, 65, 100, 128, 149}) {
        if (pos >= s.nctx) continue;
        const Cache c = make_cache(s, pos + 1, rng);
        const std::vector<float> q = make_attn_q(s, 1, 1.0f, rng);
        const Call call{pos, 1, window, 0, s.nh, 1.0f / std::sqrt(float(s.hd))};
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, call), "");
      }
      for (auto [pos0, T] : {std::pair<int64_t, int64_t>{0, 2},
                             {0, 17},
                             {3, 5},
                             {7, 33},
                             {0, 63},
                             {0, 64},
                             {0, 65},
                             {5, 64},
                             {1, 100},
                             {60, 70},
                             {0, 128},
                             {70, 77}}) {
        if (pos0 + T > s.nctx) continue;
        const Cache c = make_cache(s, pos0 + T, rng);
        const std::vector<float> q = make_attn_q(s, T, 1.0f, rng);
        const Call call{pos0, T, window, 0, s.nh, 1.0f / std::sqrt(float(s.hd))};
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, call), "");
      }
    }
  }
}

void head_ranges(const Loaded& l) {
  std::mt19937 rng(11);
  const Shape s = kShapes[0];
  const Cache c = make_cache(s, 40, rng);
  const std::vector<float> q = make_attn_q(s, 8, 1.0f, rng);
  for (auto [h0, h1] : {std::pair<int64_t, int64_t>{0, 1}, {1, 3}, {7, 9}, {31, 32}, {5, 32}})
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{32, 8, 0, h0, h1, 0.125f}), "");
}

// The tiled loop's passes: the heads of a KV group and consecutive 16-row groups share each
// widened tile, as many as the unit budget holds (head_dim 64: 15, 128: 7, 256: 3). Head
// ranges that start and end inside a group; a group larger than a pass (head_dim 256, GQA
// 4: three heads, then one); one head a group with several passes of row groups, the last
// partial (head_dim 128: 7 row groups a pass).
void tiled_passes(const Loaded& l) {
  std::mt19937 rng(23);
  {
    const Shape s = kShapes[0];
    const Cache c = make_cache(s, 140, rng);
    const std::vector<float> q = make_attn_q(s, 70, 1.0f, rng);
    for (auto [h0, h1] : {std::pair<int64_t, int64_t>{0, 1}, {1, 3}, {7, 9}, {5, 32}, {3, 29}})
      for (int64_t window : {int64_t(0), int64_t(20)})
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{70, 70, window, h0, h1, 0.125f}),
                  "");
  }
  {
    const Shape s{256, 8, 2, 140};
    const Cache c = make_cache(s, 140, rng);
    const std::vector<float> q = make_attn_q(s, 80, 1.0f, rng);
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{60, 80, 0, 0, s.nh, 0.0625f}), "");
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{60, 80, 0, 2, 7, 0.0625f}), "");
  }
  {
    const Shape s{128, 2, 2, 300};
    const Cache c = make_cache(s, 300, rng);
    for (auto [pos0, T] : {std::pair<int64_t, int64_t>{0, 128}, {3, 200}, {0, 300}, {100, 129}}) {
      const std::vector<float> q = make_attn_q(s, T, 1.0f, rng);
      for (int64_t window : {int64_t(0), int64_t(40)})
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q,
                          Call{pos0, T, window, 0, s.nh, 1.0f / std::sqrt(128.0f)}),
                  "");
    }
  }
}

// Huge scores (weights underflow, the max moves often), a zero scale, values near fp16's
// limit (the accumulator overflows to inf), NaN and Inf queries.
void edge_data(const Loaded& l) {
  std::mt19937 rng(13);
  const Shape s = kShapes[0];
  const Cache c = make_cache(s, 100, rng);
  for (float mag : {0.0f, 3.0f, 8.0f, 20.0f, 60.0f}) {
    const std::vector<float> q = make_attn_q(s, 4, mag, rng);
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{96, 4, 0, 0, s.nh, 0.125f}), "")
        << "query magnitude " << mag;
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{99, 1, 0, 0, s.nh, 0.125f}), "")
        << "query magnitude " << mag;
    const std::vector<float> q70 = make_attn_q(s, 70, mag, rng);
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q70, Call{30, 70, 0, 0, s.nh, 0.125f}), "")
        << "query magnitude " << mag << ", tiled";
  }
  const Cache big = make_cache(s, 100, rng, 20000.0f);
  const std::vector<float> q0 = make_attn_q(s, 1, 0.01f, rng);
  EXPECT_EQ(compare(l, s, big.k.data(), big.v.data(), q0, Call{99, 1, 0, 0, s.nh, 0.125f}), "")
      << "fp16 accumulator overflow";
  std::vector<float> q = make_attn_q(s, 2, 1.0f, rng);
  q[3] = std::numeric_limits<float>::quiet_NaN();
  q[size_t(s.hd * 5 + 1)] = std::numeric_limits<float>::infinity();
  q[size_t(s.hd * (s.nh + 9))] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{90, 2, 0, 0, s.nh, 0.125f}), "");
  EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{90, 2, 0, 0, s.nh, 0.0f}), "");
  std::vector<float> q64 = make_attn_q(s, 64, 1.0f, rng);
  q64[3] = std::numeric_limits<float>::quiet_NaN();
  q64[size_t(s.hd * (s.nh * 20 + 5) + 1)] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q64, Call{30, 64, 0, 0, s.nh, 0.125f}), "")
      << "NaN / Inf queries, tiled";
  EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q64, Call{30, 64, 7, 0, s.nh, 0.0f}), "")
      << "scale 0, window 7, tiled";
}

// K and V end exactly at an inaccessible page with the visible cells at the end.
void guard_pages(const Loaded& l) {
  std::mt19937 rng(17);
  for (const Shape& s0 : kShapes) {
    const Shape s{s0.hd, s0.nh, s0.nhkv, 37};
    const Cache c = make_cache(s, s.nctx, rng);
    GuardedBuffer gk(c.k.data(), c.k.size() * 2), gv(c.v.data(), c.v.size() * 2);
    const auto* k = static_cast<const uint16_t*>(gk.data());
    const auto* v = static_cast<const uint16_t*>(gv.data());
    const std::vector<float> q1 = make_attn_q(s, 1, 1.0f, rng), q5 = make_attn_q(s, 5, 1.0f, rng);
    EXPECT_EQ(compare(l, s, k, v, q1, Call{36, 1, 0, 0, s.nh, 0.3f}), "");
    EXPECT_EQ(compare(l, s, k, v, q5, Call{32, 5, 0, 0, s.nh, 0.3f}), "");
  }
}

// Calls the contract or the map excludes write nothing.
void bad_calls(const Loaded& l) {
  std::mt19937 rng(19);
  const Shape s = kShapes[0];
  const Cache c = make_cache(s, s.nctx, rng);
  const std::vector<float> q = make_attn_q(s, 64, 1.0f, rng);
  const float sentinel = 7.0f;
  auto untouched = [&](Shape sh, Call cl) {
    std::vector<float> y(size_t(s.hd * s.nh * 64), sentinel);
    l.fn(q.data(), c.k.data(), c.v.data(), y.data(), sh.hd, sh.nh, sh.nhkv, sh.nctx, cl.pos0, cl.T,
         cl.scale, cl.window, cl.h0, cl.h1);
    return std::all_of(y.begin(), y.end(), [&](float x) { return x == sentinel; });
  };
  EXPECT_TRUE(untouched(s, Call{s.nctx - 2, 4, 0, 0, s.nh, 1.0f})) << "pos0 + T > n_ctx";
  EXPECT_TRUE(untouched(s, Call{-1, 1, 0, 0, s.nh, 1.0f})) << "pos0 < 0";
  EXPECT_TRUE(untouched(s, Call{0, 0, 0, 0, s.nh, 1.0f})) << "T = 0";
  EXPECT_TRUE(untouched(s, Call{0, 1, 0, 3, 3, 1.0f})) << "empty head range";
  EXPECT_TRUE(untouched(s, Call{0, 1, 0, 0, s.nh + 1, 1.0f})) << "h1 > n_head";
  EXPECT_TRUE(untouched({64, 32, 5, 150}, Call{0, 1, 0, 0, 30, 1.0f})) << "n_head % n_head_kv";
  EXPECT_TRUE(untouched({32, 32, 4, 150}, Call{0, 1, 0, 0, 32, 1.0f})) << "head_dim 32";
  EXPECT_TRUE(untouched({0, 32, 4, 150}, Call{0, 1, 0, 0, 32, 1.0f})) << "head_dim 0";
  // The map keeps those shapes away from the kernel.
  EXPECT_FALSE(l.map->admits({{"n_head", 32}, {"n_head_kv", 4}, {"window", 0}, {"head_dim", 96}}));
  EXPECT_FALSE(l.map->admits({{"n_head", 1}, {"n_head_kv", 1}, {"window", 0}, {"head_dim", 320}}));
  EXPECT_TRUE(l.map->admits({{"n_head", 32}, {"n_head_kv", 4}, {"window", 0}, {"head_dim", 128}}));
}

void run_all(const std::string& id) {
  std::string skip;
  const Loaded l = load_generated<Fn>(id, "attention", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  {
    SCOPED_TRACE("sweep");
    sweep(l);
  }
  {
    SCOPED_TRACE("head ranges");
    head_ranges(l);
  }
  {
    SCOPED_TRACE("tiled passes");
    tiled_passes(l);
  }
  {
    SCOPED_TRACE("edge data");
    edge_data(l);
  }
  {
    SCOPED_TRACE("guard pages");
    guard_pages(l);
  }
  {
    SCOPED_TRACE("bad calls");
    bad_calls(l);
  }
}

}  // namespace

// One TEST per provider id (the name cke-audit looks for).
TEST(JitAttentionFlash, attention_f16_flash_f32_16l__avx512) {
  run_all("attention_f16_flash_f32_16l__avx512");
}
TEST(JitAttentionFlash, attention_f16_flash_f32_16l__avx2) {
  run_all("attention_f16_flash_f32_16l__avx2");
}

TEST(JitAttentionFlash, EveryGeneratedProviderHasATest) {
  std::vector<std::string> tested = {"attention_f16_flash_f32_16l__avx2",
                                     "attention_f16_flash_f32_16l__avx512"};
  std::vector<std::string> maps;
  for (const KernelMap& m : real_registry().maps())
    if (m.contract == "attention.f16_flash.ggml" && !m.impl.generator.empty()) maps.push_back(m.id);
  std::sort(maps.begin(), maps.end());
  EXPECT_EQ(maps, tested);
}

}  // namespace cke::test
