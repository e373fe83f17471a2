// The generated providers of layernorm, relu_sqr and swiglu_fused (jit/gen_families.h)
// against the reference kernel of their contract, and their emitted C against their machine
// code: every output bit-identical (a NaN matches any NaN), on random rows over many
// decades, special values (±0, ±Inf, NaN, subnormals, huge), in place where the map allows
// it, split as the plan's range calls (two halves against one whole reference call), and
// calls outside the contract or their range (nothing written).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "generated_kernel.h"
#include "jit/gen_families.h"

namespace cke::test {
namespace {

using jit::gen::GluFusedFn;
using jit::gen::LayerNormFn;
using jit::gen::ReluSqrFn;

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
}

std::string show(float x) {
  return fmt::format("{:.9g} ({})", double(x), std::bit_cast<uint32_t>(x));
}

// "" when jit == ref and C == jit element by element, else the first difference.
std::string diff(const std::vector<float>& jit, const std::vector<float>& ref,
                 const std::vector<float>& c) {
  for (size_t i = 0; i < jit.size(); ++i) {
    if (!same(jit[i], ref[i]))
      return fmt::format("[{}]: jit {} reference {}", i, show(jit[i]), show(ref[i]));
    if (!same(jit[i], c[i]))
      return fmt::format("[{}]: jit {} emitted C {}", i, show(jit[i]), show(c[i]));
  }
  return "";
}

// Values nd(0,1) · 2^[-mag, mag], with an offset (LayerNorm's mean matters).
std::vector<float> values(size_t n, std::mt19937& rng, float mag, float offset = 0.0f) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-mag, mag);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng) * std::exp2(e(rng)) + offset;
  return v;
}

// ---- layernorm ----

std::string layernorm_case(const GeneratedKernel<LayerNormFn>& l, const std::vector<float>& x,
                           const std::vector<float>& w, const std::vector<float>& b, int64_t n,
                           float eps) {
  const int64_t rows = int64_t(x.size()) / n;
  std::vector<float> yr(x.size(), 7.0f), yj = yr, yc = yr;
  l.ref(x.data(), w.data(), b.data(), yr.data(), n, rows, eps, 0, rows);
  call_split(l.fn, __LINE__, rows, x.data(), w.data(), b.data(), yj.data(), n, rows, eps);
  dirtied(l.cfn, __LINE__)(x.data(), w.data(), b.data(), yc.data(), n, rows, eps, 0, rows);
  if (std::string d = diff(yj, yr, yc); !d.empty())
    return fmt::format("n={} rows={} eps={} {}", n, rows, eps, d);
  std::vector<float> xi = x;  // in place
  dirtied(l.fn, __LINE__)(xi.data(), w.data(), b.data(), xi.data(), n, rows, eps, 0, rows);
  if (std::string d = diff(xi, yr, xi); !d.empty()) return "in place " + d;
  return "";
}

void run_layernorm(const std::string& id) {
  std::string skip;
  auto l = load_generated<LayerNormFn>(id, "layernorm", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(61);
  for (auto [n, rows] : {std::pair<int64_t, int64_t>{16, 1}, {64, 3}, {256, 5}, {3072, 2}})
    for (float mag : {0.0f, 8.0f, 20.0f})
      for (float eps : {1e-5f, 0.0f}) {
        const auto x = values(size_t(n * rows), rng, mag, 3.0f);
        const auto w = values(size_t(n), rng, 0.0f), b = values(size_t(n), rng, 0.0f);
        EXPECT_EQ(layernorm_case(l, x, w, b, n, eps), "") << "mag " << mag;
      }
  {  // specials: a constant row (variance 0), Inf, NaN, subnormals, huge values
    const int64_t n = 32;
    std::vector<float> x;
    for (float c : {0.0f, 1e-45f, 3e38f, -2.5f}) x.insert(x.end(), n, c);
    auto r = values(n, rng, 4.0f);
    r[5] = kInf;
    x.insert(x.end(), r.begin(), r.end());
    r = values(n, rng, 4.0f);
    r[17] = kNan;
    x.insert(x.end(), r.begin(), r.end());
    const auto w = values(n, rng, 1.0f), b = values(n, rng, 1.0f);
    for (float eps : {1e-5f, 0.0f}) EXPECT_EQ(layernorm_case(l, x, w, b, n, eps), "") << "specials";
  }
  {  // outside the contract (n % 16 != 0, n or rows <= 0): nothing written
    std::vector<float> x(40, 1.0f), w(40, 1.0f), y(40, 7.0f);
    for (auto [n, rows] : {std::pair<int64_t, int64_t>{20, 2}, {0, 1}, {16, 0}, {-16, 1}}) {
      dirtied(l.fn, __LINE__)(x.data(), w.data(), w.data(), y.data(), n, rows, 1e-5f, 0, rows);
      dirtied(l.cfn, __LINE__)(x.data(), w.data(), w.data(), y.data(), n, rows, 1e-5f, 0, rows);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "n=" << n << " rows=" << rows;
    }
    for (auto [b, e] : bad_ranges(2)) {  // rows outside the call: nothing written
      dirtied(l.fn, __LINE__)(x.data(), w.data(), w.data(), y.data(), 16, 2, 1e-5f, b, e);
      dirtied(l.cfn, __LINE__)(x.data(), w.data(), w.data(), y.data(), 16, 2, 1e-5f, b, e);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
    }
  }
}

TEST(JitOps, layernorm_f32_f32_16l__avx512) {
  run_layernorm("layernorm_f32_f32_16l__avx512");
}
TEST(JitOps, layernorm_f32_f32_16l__avx2) {
  run_layernorm("layernorm_f32_f32_16l__avx2");
}

// ---- relu_sqr ----

void run_relu_sqr(const std::string& id) {
  std::string skip;
  auto l = load_generated<ReluSqrFn>(id, "unary", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(67);
  const float sp[] = {0.0f, -0.0f, kInf, -kInf, kNan, -kNan, 1e-45f, -1e-45f, 1e-20f, 2e19f, 3e38f};
  for (int64_t n : {1, 15, 16, 17, 33, 512, 2053}) {
    auto x = values(size_t(n), rng, 30.0f);
    for (int64_t i = 2; i < n; i += 5) x[size_t(i)] = sp[size_t(i) % std::size(sp)];
    std::vector<float> yr(size_t(n), 7.0f), yj = yr, yc = yr;
    l.ref(x.data(), yr.data(), n, 0, n);
    call_split(l.fn, __LINE__, n, x.data(), yj.data(), n);
    dirtied(l.cfn, __LINE__)(x.data(), yc.data(), n, 0, n);
    EXPECT_EQ(diff(yj, yr, yc), "") << "n=" << n;
    std::vector<float> xi = x;  // in place
    dirtied(l.fn, __LINE__)(xi.data(), xi.data(), n, 0, n);
    EXPECT_EQ(diff(xi, yr, xi), "") << "in place, n=" << n;
  }
  {  // every special in every lane position (signs of zero included)
    std::vector<float> x(16 * std::size(sp));
    for (size_t i = 0; i < x.size(); ++i) x[i] = sp[(i + i / 16) % std::size(sp)];
    std::vector<float> yr(x.size()), yj(x.size()), yc(x.size());
    const int64_t n = int64_t(x.size());
    l.ref(x.data(), yr.data(), n, 0, n);
    dirtied(l.fn, __LINE__)(x.data(), yj.data(), n, 0, n);
    dirtied(l.cfn, __LINE__)(x.data(), yc.data(), n, 0, n);
    EXPECT_EQ(diff(yj, yr, yc), "") << "specials";
  }
  std::vector<float> x(4, 1.0f), y(4, 7.0f);
  dirtied(l.fn, __LINE__)(x.data(), y.data(), 0, 0, 0);
  dirtied(l.cfn, __LINE__)(x.data(), y.data(), -4, 0, -4);
  for (float v : y) EXPECT_EQ(v, 7.0f) << "n <= 0 writes nothing";
  for (auto [b, e] : bad_ranges(4)) {
    dirtied(l.fn, __LINE__)(x.data(), y.data(), 4, b, e);
    dirtied(l.cfn, __LINE__)(x.data(), y.data(), 4, b, e);
    for (float v : y) EXPECT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
  }
}

TEST(JitOps, relu_sqr_f32_f32_16l__avx512) {
  run_relu_sqr("relu_sqr_f32_f32_16l__avx512");
}
TEST(JitOps, relu_sqr_f32_f32_16l__avx2) {
  run_relu_sqr("relu_sqr_f32_f32_16l__avx2");
}

// ---- swiglu_fused ----

void run_swiglu_fused(const std::string& id) {
  std::string skip;
  auto l = load_generated<GluFusedFn>(id, "glu", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(71);
  // Ranges of the gate (exp overflow and underflow, subnormal products) and up.
  const std::pair<float, float> ranges[] = {{-6, 6}, {-120, 120}, {-95, -80}, {80, 95}};
  for (auto [lo, hi] : ranges)
    for (auto [n, T] : {std::pair<int64_t, int64_t>{16, 1}, {48, 3}, {384, 5}, {13696, 1}}) {
      std::uniform_real_distribution<float> gd(lo, hi), ud(-3, 3);
      std::vector<float> x(size_t(2 * n * T));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < n; ++i) {
          x[size_t(t * 2 * n + i)] = gd(rng);
          x[size_t(t * 2 * n + n + i)] = ud(rng);
        }
      std::vector<float> yr(size_t(n * T), 7.0f), yj = yr, yc = yr;
      l.ref(x.data(), yr.data(), n, T, 0, T);
      call_split(l.fn, __LINE__, T, x.data(), yj.data(), n, T);
      dirtied(l.cfn, __LINE__)(x.data(), yc.data(), n, T, 0, T);
      EXPECT_EQ(diff(yj, yr, yc), "")
          << "n=" << n << " T=" << T << " gate in [" << lo << ", " << hi << "]";
    }
  {  // specials in every position of the gate and up halves
    const float sp[] = {0.0f,   -0.0f,  kInf,    -kInf,  kNan,    1e-45f, -1e-45f, 88.7f,
                        -88.7f, 103.9f, -103.9f, 200.5f, -200.5f, 3e38f,  -3e38f,  1.0f};
    const int64_t n = 16, T = 16;
    std::vector<float> x(size_t(2 * n * T));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i) {
        x[size_t(t * 2 * n + i)] = sp[i];
        x[size_t(t * 2 * n + n + i)] = sp[t];
      }
    std::vector<float> yr(size_t(n * T)), yj(yr.size()), yc(yr.size());
    l.ref(x.data(), yr.data(), n, T, 0, T);
    call_split(l.fn, __LINE__, T, x.data(), yj.data(), n, T);
    dirtied(l.cfn, __LINE__)(x.data(), yc.data(), n, T, 0, T);
    EXPECT_EQ(diff(yj, yr, yc), "") << "specials";
  }
  {  // outside the contract (n % 16 != 0, n or T <= 0): nothing written
    std::vector<float> x(80, 1.0f), y(40, 7.0f);
    for (auto [n, T] : {std::pair<int64_t, int64_t>{20, 2}, {0, 1}, {16, 0}, {-16, 1}}) {
      dirtied(l.fn, __LINE__)(x.data(), y.data(), n, T, 0, T);
      dirtied(l.cfn, __LINE__)(x.data(), y.data(), n, T, 0, T);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "n=" << n << " T=" << T;
    }
    for (auto [b, e] : bad_ranges(2)) {  // tokens outside the call: nothing written
      dirtied(l.fn, __LINE__)(x.data(), y.data(), 16, 2, b, e);
      dirtied(l.cfn, __LINE__)(x.data(), y.data(), 16, 2, b, e);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
    }
  }
}

TEST(JitOps, swiglu_fused_f32_f32_16l__avx512) {
  run_swiglu_fused("swiglu_fused_f32_f32_16l__avx512");
}
TEST(JitOps, swiglu_fused_f32_f32_16l__avx2) {
  run_swiglu_fused("swiglu_fused_f32_f32_16l__avx2");
}

}  // namespace
}  // namespace cke::test
