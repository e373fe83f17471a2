// Each generated attention provider of kernel_maps/ (op attention with impl.generator)
// against attention_f32__ref, the oracle of contract attention.f32.ggml, and its emitted C
// against its machine code (memcmp): every output bit-identical (a NaN matches any NaN).
// Cases: head dims around the 64-element chunks and the tinyBLAS rule (head_dim % 4),
// GQA groups, decode (T = 1) at positions around the 16- and 64-cell boundaries, prefill
// chunks, sliding windows, head ranges, long caches (the pieces of a token block), caches
// whose unwritten cells hold NaN (a kernel that reads past the visible cells turns them
// into NaN outputs), K and V at the very end of a guard page, huge scores (probabilities
// underflow through the subnormals), NaN and Inf queries, and calls outside the contract
// (nothing written).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "attention_test_util.h"
#include "generated_kernel.h"
#include "jit/gen_attention.h"
#include "jit/kir/kir_c.h"
#include "jit_test_util.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

using AttnFn = jit::gen::AttentionFn;

using Shape = AttnShape;
using Call = AttnCall;

using Loaded = GeneratedKernel<AttnFn>;
Loaded load(const std::string& id, std::string* skip) {
  return load_generated<AttnFn>(id, "attention", skip);
}

// The cache of one layer: K [n_ctx][kv_dim], V^T [kv_dim][n_ctx]. Cells at or after
// `written` hold NaN (never visible to a correct kernel).
struct Cache {
  std::vector<float> k, v;
};
Cache make_cache(const Shape& s, int64_t written, std::mt19937& rng) {
  const int64_t kv = s.hd * s.nhkv;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Cache c;
  c.k.resize(size_t(kv * s.nctx));
  c.v.resize(size_t(kv * s.nctx));
  for (int64_t j = 0; j < s.nctx; ++j)
    for (int64_t d = 0; d < kv; ++d) {
      c.k[size_t(j * kv + d)] = j < written ? nd(rng) : nan;
      c.v[size_t(d * s.nctx + j)] = j < written ? nd(rng) : nan;
    }
  return c;
}

// "" when reference, machine code and emitted C agree bit for bit (attention_test_util.h).
std::string compare(const Loaded& l, const Shape& s, const float* k, const float* v,
                    const std::vector<float>& q, const Call& c) {
  return compare_attention(l, s, k, v, q, c);
}

const Shape kShapes[] = {
    {64, 32, 4, 160},  // TinyLlama: head_dim 64, GQA 8 (AVX-512: heads in fours)
    {64, 12, 2, 70},   // GQA 6: four heads of a group together, then a pair
    {8, 8, 4, 40},     // stories260K-like: tail only (no 64-chunk), n_ctx % 16 != 0
    {128, 4, 4, 70},   // two chunks, no GQA
    {128, 6, 2, 70},   // two chunks, GQA 3: heads pair within a group, the third alone
    {130, 2, 1, 33},   // chunks + 2-element tail
    {6, 3, 1, 21},     // head_dim % 4 != 0: vec_dot KQV in prefill too
};

void sweep(const Loaded& l) {
  std::mt19937 rng(7);
  for (const Shape& s : kShapes) {
    for (int64_t window : {int64_t(0), int64_t(5), int64_t(16)}) {
      // Decode at positions around the 16- and 64-cell boundaries.
      for (int64_t pos : {0, 1, 14, 15, 16, 17, 31, 63, 64, 65, 100, 127, 128, 129, 159}) {
        if (pos >= s.nctx) continue;
        const Cache c = make_cache(s, pos + 1, rng);
        const std::vector<float> q = make_attn_q(s, 1, 1.0f, rng);
        const Call call{pos, 1, window, 0, s.nh, 1.0f / std::sqrt(float(s.hd))};
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, call), "");
      }
      // Prefill chunks.
      for (auto [pos0, T] : {std::pair<int64_t, int64_t>{0, 2},
                             {0, 17},
                             {3, 5},
                             {15, 33},
                             {30, 3},
                             {0, 64},
                             {64, 65}}) {
        if (pos0 + T > s.nctx) continue;
        const Cache c = make_cache(s, pos0 + T, rng);
        const std::vector<float> q = make_attn_q(s, T, 1.0f, rng);
        const Call call{pos0, T, window, 0, s.nh, 1.0f / std::sqrt(float(s.hd))};
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, call), "");
      }
    }
  }
}

// Heads [h0, h1): only those are written, and a split gives the same bits as the whole.
void head_ranges(const Loaded& l) {
  std::mt19937 rng(11);
  const Shape s = kShapes[0];
  const Cache c = make_cache(s, 40, rng);
  const std::vector<float> q = make_attn_q(s, 8, 1.0f, rng);
  for (auto [h0, h1] : {std::pair<int64_t, int64_t>{0, 1}, {1, 3}, {7, 9}, {31, 32}, {5, 32}}) {
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{32, 8, 0, h0, h1, 0.125f}), "");
    // Decode: heads of a group together only where the whole group is in the range.
    EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{39, 1, 0, h0, h1, 0.125f}), "");
  }
}

// Big scores (most probabilities underflow, many through the subnormal range), zero and
// NaN/Inf queries.
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
  }
  std::vector<float> q = make_attn_q(s, 2, 1.0f, rng);
  q[3] = std::numeric_limits<float>::quiet_NaN();                    // head 0, token 0
  q[size_t(s.hd * 5 + 1)] = std::numeric_limits<float>::infinity();  // head 5, token 0
  q[size_t(s.hd * (s.nh + 9))] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{90, 2, 0, 0, s.nh, 0.125f}), "");
  // A scale of 0: every score 0, uniform probabilities.
  EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{90, 2, 0, 0, s.nh, 0.0f}), "");
}

// Probabilities one by one, across the whole subnormal range of exp: with q = e0 and
// K cell j = (x_j, 0, ...) the scores are exactly x_j (scale 1); cell 0 scores 0 (the max),
// the others x in [-104, -87] (exp subnormal) or [-89, -80]; V^T = identity makes out[d] =
// p_d, and inv rounds to 1, so out shows each exp bit for bit. This is where vscalefps's
// single rounding differs from two roundings.
void subnormal_probabilities(const Loaded& l) {
  std::mt19937 rng(23);
  const Shape s{64, 1, 1, 64};
  std::vector<float> k(64 * 64, 0.0f), v(64 * 64, 0.0f), q(64 * 2, 0.0f);
  k[0] = 0.0f;  // cell 0: score 0
  for (int d = 0; d < 64; ++d) v[size_t(d * 64 + d)] = 1.0f;
  q[0] = q[64] = 1.0f;
  for (int trial = 0; trial < 60; ++trial) {
    std::uniform_real_distribution<float> ud(trial % 2 ? -104.0f : -89.0f,
                                             trial % 2 ? -87.0f : -80.0f);
    for (int j = 1; j < 64; ++j) k[size_t(j * 64)] = ud(rng);
    EXPECT_EQ(compare(l, s, k.data(), v.data(), q, Call{63, 1, 0, 0, 1, 1.0f}), "");
    EXPECT_EQ(compare(l, s, k.data(), v.data(), q, Call{62, 2, 0, 0, 1, 1.0f}), "");
  }
}

// Prefill over a long cache: token blocks (AVX-512: 8 / H tokens of H heads) whose scores
// go in 64-cell pieces and whose KQV goes in 512-cell pieces with the accumulators kept
// between them; blocks then a remainder, rows of a block ending in different 16-cell
// groups, a window cutting the first pieces off, head_dim 64 with four heads a group, 128
// with two, 256 with one, and a block of eight heads' worth split by a head range.
void long_cache(const Loaded& l) {
  std::mt19937 rng(29);
  for (const Shape& s : {Shape{64, 16, 4, 1300}, Shape{128, 4, 2, 1300}, Shape{256, 2, 2, 1300}}) {
    for (auto [pos0, T] : {std::pair<int64_t, int64_t>{1020, 19}, {1187, 13}, {500, 24}}) {
      const Cache c = make_cache(s, pos0 + T, rng);
      const std::vector<float> q = make_attn_q(s, T, 1.0f, rng);
      const float scale = 1.0f / std::sqrt(float(s.hd));
      for (int64_t window : {int64_t(0), int64_t(700)})
        EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{pos0, T, window, 0, s.nh, scale}),
                  "");
      EXPECT_EQ(compare(l, s, c.k.data(), c.v.data(), q, Call{pos0, T, 0, 1, s.nh - 1, scale}), "");
    }
  }
}

// K and V end exactly at an inaccessible page with the visible cells at the end of the
// cache (n_ctx = pos0 + T, not a multiple of 16): a read past the last cell faults.
void guard_pages(const Loaded& l) {
  std::mt19937 rng(17);
  for (const Shape& s0 : kShapes) {
    const Shape s{s0.hd, s0.nh, s0.nhkv, 37};
    const Cache c = make_cache(s, s.nctx, rng);
    GuardedBuffer gk(c.k.data(), c.k.size() * 4), gv(c.v.data(), c.v.size() * 4);
    const auto* k = static_cast<const float*>(gk.data());
    const auto* v = static_cast<const float*>(gv.data());
    const std::vector<float> q1 = make_attn_q(s, 1, 1.0f, rng), q5 = make_attn_q(s, 5, 1.0f, rng);
    EXPECT_EQ(compare(l, s, k, v, q1, Call{36, 1, 0, 0, s.nh, 0.3f}), "");
    EXPECT_EQ(compare(l, s, k, v, q5, Call{32, 5, 0, 0, s.nh, 0.3f}), "");
  }
}

// Calls the contract excludes write nothing (as the reference).
void bad_calls(const Loaded& l) {
  std::mt19937 rng(19);
  const Shape s = kShapes[0];
  const Cache c = make_cache(s, s.nctx, rng);
  const std::vector<float> q = make_attn_q(s, 4, 1.0f, rng);
  const float sentinel = 7.0f;
  auto untouched = [&](Shape sh, Call cl) {
    std::vector<float> y(size_t(s.hd * s.nh * 4), sentinel);
    l.fn(q.data(), c.k.data(), c.v.data(), y.data(), sh.hd, sh.nh, sh.nhkv, sh.nctx, cl.pos0, cl.T,
         cl.scale, cl.window, cl.h0, cl.h1);
    for (float x : y)
      if (x != sentinel) return false;
    return true;
  };
  EXPECT_TRUE(untouched(s, Call{s.nctx - 2, 4, 0, 0, s.nh, 1.0f})) << "pos0 + T > n_ctx";
  EXPECT_TRUE(untouched(s, Call{-1, 1, 0, 0, s.nh, 1.0f})) << "pos0 < 0";
  EXPECT_TRUE(untouched(s, Call{0, 0, 0, 0, s.nh, 1.0f})) << "T = 0";
  EXPECT_TRUE(untouched(s, Call{0, 1, 0, 3, 3, 1.0f})) << "empty head range";
  EXPECT_TRUE(untouched(s, Call{0, 1, 0, 0, s.nh + 1, 1.0f})) << "h1 > n_head";
  EXPECT_TRUE(untouched({64, 32, 5, 160}, Call{0, 1, 0, 0, 30, 1.0f})) << "n_head % n_head_kv";
  EXPECT_TRUE(untouched({0, 32, 4, 160}, Call{0, 1, 0, 0, 32, 1.0f})) << "head_dim 0";
}

// The frame buffer bound: a cache longer than `cells` is refused (the map requires
// n_ctx <= cells, so the plan never makes this call).
void cells_bound(const Loaded& l) {
  const int64_t cells = std::stoll(l.map->impl.generator_params.at("cells"));
  EXPECT_FALSE(
      l.map->admits({{"n_head", 32}, {"n_head_kv", 4}, {"window", 0}, {"n_ctx", cells + 1}}));
  EXPECT_TRUE(l.map->admits({{"n_head", 32}, {"n_head_kv", 4}, {"window", 0}, {"n_ctx", cells}}));
}

void run_all(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, &skip);
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
    SCOPED_TRACE("edge data");
    edge_data(l);
  }
  {
    SCOPED_TRACE("subnormal probabilities");
    subnormal_probabilities(l);
  }
  {
    SCOPED_TRACE("long cache");
    long_cache(l);
  }
  {
    SCOPED_TRACE("guard pages");
    guard_pages(l);
  }
  {
    SCOPED_TRACE("bad calls");
    bad_calls(l);
  }
  {
    SCOPED_TRACE("cells bound");
    cells_bound(l);
  }
}

}  // namespace

// One TEST per provider id (the name cke-audit looks for); EveryGeneratedProviderHasATest
// keeps the list and kernel_maps/ equal.
TEST(JitAttention, attention_f32_f32_16l__avx512) {
  run_all("attention_f32_f32_16l__avx512");
}
TEST(JitAttention, attention_f32_f32_16l__avx2) {
  run_all("attention_f32_f32_16l__avx2");
}

TEST(JitAttention, EveryGeneratedProviderHasATest) {
  std::vector<std::string> tested = {"attention_f32_f32_16l__avx2",
                                     "attention_f32_f32_16l__avx512"};
  std::vector<std::string> maps;
  for (const KernelMap& m : real_registry().maps())
    if (m.contract == "attention.f32.ggml" && !m.impl.generator.empty()) maps.push_back(m.id);
  std::sort(maps.begin(), maps.end());
  EXPECT_EQ(maps, tested);
}

}  // namespace cke::test
