// Each generated provider of an elementwise op in kernel_maps/ (glu, add, kv_store) against the
// reference kernel of its contract, and its emitted C against its machine code: every
// output bit-identical (a NaN matches any NaN), on random rows over the whole range of the
// op's arithmetic (exp overflow and underflow, subnormal results), special values (±0,
// ±Inf, NaN), in place (y aliasing an input), and calls outside the contract (nothing
// written).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "generated_kernel.h"
#include "jit/gen_elementwise.h"
#include "jit/gen_glu.h"
#include "jit/gen_rmsnorm.h"
#include "jit/kir/kir_c.h"
#include "jit_test_util.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

using jit::gen::GluFn;

using Loaded = GeneratedKernel<void*>;
Loaded load(const std::string& id, const std::string& op, std::string* skip) {
  return load_generated<void*>(id, op, skip);
}

std::string show(float x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (%a)", double(x), double(x));
  return buf;
}

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
}

// "" when jit == ref and C == jit element by element, else the first difference.
std::string diff(const std::vector<float>& jit, const std::vector<float>& ref,
                 const std::vector<float>& c, const std::vector<float>& in0,
                 const std::vector<float>& in1) {
  for (size_t i = 0; i < jit.size(); ++i) {
    if (!same(jit[i], ref[i]))
      return fmt::format("[{}] inputs {}, {}: jit {} reference {}", i, show(in0[i]), show(in1[i]),
                         show(jit[i]), show(ref[i]));
    if (!same(jit[i], c[i]))
      return fmt::format("[{}]: jit {} emitted C {}", i, show(jit[i]), show(c[i]));
  }
  return "";
}

// ---- glu ----

std::vector<float> glu_inputs(int64_t count, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> ud(lo, hi);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = ud(rng);
  return v;
}

std::string glu_case(const Loaded& l, const std::vector<float>& g, const std::vector<float>& u,
                     int64_t n, int64_t T) {
  const size_t cnt = size_t(n * T);
  std::vector<float> yr(cnt, 7.0f), yj(cnt, 7.0f), yc(cnt, 7.0f);
  reinterpret_cast<GluFn>(l.ref)(g.data(), u.data(), yr.data(), n, T);
  reinterpret_cast<GluFn>(l.fn)(g.data(), u.data(), yj.data(), n, T);
  reinterpret_cast<GluFn>(l.cfn)(g.data(), u.data(), yc.data(), n, T);
  if (std::string d = diff(yj, yr, yc, g, u); !d.empty())
    return fmt::format("n={} T={} {}", n, T, d);
  // In place: y = gate, then y = up.
  std::vector<float> gi = g, ui = u;
  reinterpret_cast<GluFn>(l.fn)(gi.data(), u.data(), gi.data(), n, T);
  reinterpret_cast<GluFn>(l.fn)(g.data(), ui.data(), ui.data(), n, T);
  for (size_t i = 0; i < cnt; ++i)
    if (!same(gi[i], yr[i]) || !same(ui[i], yr[i])) return fmt::format("in place [{}] differs", i);
  return "";
}

void run_glu(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "glu", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(31);
  // Ranges: typical, exp overflow (g << 0: 1 + exp(-g) = inf) and underflow, subnormal
  // products.
  const std::pair<float, float> ranges[] = {{-6, 6}, {-120, 120}, {-95, -80}, {80, 95}};
  for (auto [lo, hi] : ranges)
    for (auto [n, T] : {std::pair<int64_t, int64_t>{16, 1}, {32, 3}, {5632, 2}, {176, 5}}) {
      const auto g = glu_inputs(n * T, lo, hi, rng), u = glu_inputs(n * T, -3, 3, rng);
      EXPECT_EQ(glu_case(l, g, u, n, T), "") << "gate in [" << lo << ", " << hi << "]";
    }
  {  // tiny up values: subnormal results
    auto g = glu_inputs(64, -4, 4, rng), u = glu_inputs(64, -1e-38f, 1e-38f, rng);
    EXPECT_EQ(glu_case(l, g, u, 64, 1), "");
  }
  {  // special values in every position of a 16-group
    const float inf = std::numeric_limits<float>::infinity(),
                nan = std::numeric_limits<float>::quiet_NaN();
    const float specials[] = {0.0f,   -0.0f,  inf,     -inf,   nan,     1e-45f, -1e-45f, 88.7f,
                              -88.7f, 103.9f, -103.9f, 200.5f, -200.5f, 3e38f,  -3e38f,  1.0f};
    std::vector<float> g(256), u(256);
    for (int i = 0; i < 256; ++i) {
      g[size_t(i)] = specials[i % 16];
      u[size_t(i)] = specials[(i / 16) % 16];
    }
    EXPECT_EQ(glu_case(l, g, u, 16, 16), "");
  }
  {  // outside the contract (n % 16 != 0, n or T <= 0): nothing written
    std::vector<float> g(40, 1.0f), u(40, 1.0f), y(40, 7.0f);
    for (auto [n, T] : {std::pair<int64_t, int64_t>{20, 2}, {0, 1}, {16, 0}, {-16, 1}}) {
      reinterpret_cast<GluFn>(l.fn)(g.data(), u.data(), y.data(), n, T);
      for (float x : y) ASSERT_EQ(x, 7.0f) << "n=" << n << " T=" << T;
    }
  }
}

// ---- add ----

void run_add(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "add", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(37);
  using jit::gen::AddFn;
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  // Lengths around the 16-lane groups; values with cancellation, specials, subnormals.
  for (int64_t n : {1, 15, 16, 17, 31, 64, 2048, 2053}) {
    auto a = glu_inputs(n, -1e3f, 1e3f, rng), b = glu_inputs(n, -1e3f, 1e3f, rng);
    for (int64_t i = 0; i < n; i += 7) b[size_t(i)] = -a[size_t(i)];
    const float sp[] = {inf, -inf, nan, 0.0f, -0.0f, 1e-45f, -3e38f, 3e38f};
    for (int64_t i = 3; i < n; i += 11) a[size_t(i)] = sp[size_t(i) % 8];
    std::vector<float> yr(size_t(n), 7.0f), yj = yr, yc = yr;
    reinterpret_cast<AddFn>(l.ref)(a.data(), b.data(), yr.data(), n);
    reinterpret_cast<AddFn>(l.fn)(a.data(), b.data(), yj.data(), n);
    reinterpret_cast<AddFn>(l.cfn)(a.data(), b.data(), yc.data(), n);
    EXPECT_EQ(diff(yj, yr, yc, a, b), "") << "n=" << n;
    std::vector<float> ai = a;  // in place on a
    reinterpret_cast<AddFn>(l.fn)(ai.data(), b.data(), ai.data(), n);
    EXPECT_EQ(diff(ai, yr, ai, a, b), "") << "in place, n=" << n;
  }
  std::vector<float> a(4, 1.0f), y(4, 7.0f);
  reinterpret_cast<AddFn>(l.fn)(a.data(), a.data(), y.data(), 0);
  for (float v : y) EXPECT_EQ(v, 7.0f) << "n = 0 writes nothing";
}

// ---- kv_store ----

void run_kv_store(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "kv_store", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(41);
  using jit::gen::KvStoreFn;
  for (auto [kv, nctx] : {std::pair<int64_t, int64_t>{256, 64}, {8, 37}, {130, 20}})
    for (auto [pos0, T] : {std::pair<int64_t, int64_t>{0, 1},
                           {5, 1},
                           {0, 7},
                           {3, 17},
                           {nctx - 1, 1},
                           {nctx - 4, 4},
                           {nctx - 2, 4},
                           {-1, 1},
                           {0, 0}}) {
      const auto k = glu_inputs(kv * std::max<int64_t>(T, 1), -5, 5, rng),
                 v = glu_inputs(kv * std::max<int64_t>(T, 1), -5, 5, rng);
      const size_t cache = size_t(kv * nctx);
      std::vector<float> kr(cache, 9.0f), vr(cache, 9.0f), kj = kr, vj = vr, kc = kr, vcc = vr;
      reinterpret_cast<KvStoreFn>(l.ref)(k.data(), v.data(), kr.data(), vr.data(), kv, nctx, pos0,
                                         T);
      reinterpret_cast<KvStoreFn>(l.fn)(k.data(), v.data(), kj.data(), vj.data(), kv, nctx, pos0,
                                        T);
      reinterpret_cast<KvStoreFn>(l.cfn)(k.data(), v.data(), kc.data(), vcc.data(), kv, nctx, pos0,
                                         T);
      const std::string where = fmt::format("kv={} n_ctx={} pos0={} T={}", kv, nctx, pos0, T);
      EXPECT_EQ(0, std::memcmp(kj.data(), kr.data(), cache * 4)) << "K cache, " << where;
      EXPECT_EQ(0, std::memcmp(vj.data(), vr.data(), cache * 4)) << "V cache, " << where;
      EXPECT_EQ(0, std::memcmp(kc.data(), kj.data(), cache * 4)) << "K cache (C), " << where;
      EXPECT_EQ(0, std::memcmp(vcc.data(), vj.data(), cache * 4)) << "V cache (C), " << where;
    }
}

}  // namespace

// One TEST per provider id (the name cke-audit looks for).
TEST(JitOps, add_f32_f32_16l__avx512) {
  run_add("add_f32_f32_16l__avx512");
}
TEST(JitOps, add_f32_f32_16l__avx2) {
  run_add("add_f32_f32_16l__avx2");
}
TEST(JitOps, kv_store_f32_f32_16l__avx512) {
  run_kv_store("kv_store_f32_f32_16l__avx512");
}
TEST(JitOps, kv_store_f32_f32_16l__avx2) {
  run_kv_store("kv_store_f32_f32_16l__avx2");
}
TEST(JitOps, swiglu_f32_f32_16l__avx512) {
  run_glu("swiglu_f32_f32_16l__avx512");
}
TEST(JitOps, swiglu_f32_f32_16l__avx2) {
  run_glu("swiglu_f32_f32_16l__avx2");
}

// ---- rmsnorm ----

// Rows with magnitudes over many decades (the double sum's rounding matters), per-head widths
// and model widths, in place, specials, and calls outside the contract.
void run_rmsnorm(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "rmsnorm", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  using jit::gen::RmsNormFn;
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> mag(-20.0f, 20.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto [n, rows] :
       {std::pair<int64_t, int64_t>{16, 1}, {64, 3}, {128, 8}, {2048, 2}, {5120, 1}}) {
    for (float eps : {1e-5f, 1e-6f, 0.0f}) {
      std::vector<float> x(static_cast<size_t>(n * rows)), w(static_cast<size_t>(n));
      for (float& v : x) v = nd(rng) * std::exp2(mag(rng));
      for (float& v : w) v = nd(rng);
      std::vector<float> yr(x.size(), 7.0f), yj = yr, yc = yr;
      reinterpret_cast<RmsNormFn>(l.ref)(x.data(), w.data(), yr.data(), n, rows, eps);
      reinterpret_cast<RmsNormFn>(l.fn)(x.data(), w.data(), yj.data(), n, rows, eps);
      reinterpret_cast<RmsNormFn>(l.cfn)(x.data(), w.data(), yc.data(), n, rows, eps);
      std::vector<float> wr(x.size());
      for (size_t i = 0; i < x.size(); ++i) wr[i] = w[i % size_t(n)];
      EXPECT_EQ(diff(yj, yr, yc, x, wr), "") << "n=" << n << " rows=" << rows << " eps=" << eps;
      std::vector<float> xi = x;  // in place
      reinterpret_cast<RmsNormFn>(l.fn)(xi.data(), w.data(), xi.data(), n, rows, eps);
      EXPECT_EQ(diff(xi, yr, xi, x, wr), "") << "in place, n=" << n;
    }
  }
  {  // specials: a zero row (0 / sqrt(eps)), Inf, NaN, subnormals, huge values
    const float inf = std::numeric_limits<float>::infinity(),
                nan = std::numeric_limits<float>::quiet_NaN();
    const int64_t n = 32;
    std::vector<std::vector<float>> rows_in = {
        std::vector<float>(n, 0.0f), std::vector<float>(n, 1e-45f), std::vector<float>(n, 3e38f)};
    rows_in.push_back(glu_inputs(n, -1, 1, rng));
    rows_in.back()[5] = inf;
    rows_in.push_back(glu_inputs(n, -1, 1, rng));
    rows_in.back()[17] = nan;
    std::vector<float> x, w = glu_inputs(n, -2, 2, rng);
    for (const auto& r : rows_in) x.insert(x.end(), r.begin(), r.end());
    const int64_t rows = int64_t(rows_in.size());
    std::vector<float> yr(x.size()), yj(x.size()), yc(x.size()), wr(x.size());
    for (size_t i = 0; i < x.size(); ++i) wr[i] = w[i % size_t(n)];
    for (float eps : {1e-5f, 0.0f}) {
      reinterpret_cast<RmsNormFn>(l.ref)(x.data(), w.data(), yr.data(), n, rows, eps);
      reinterpret_cast<RmsNormFn>(l.fn)(x.data(), w.data(), yj.data(), n, rows, eps);
      reinterpret_cast<RmsNormFn>(l.cfn)(x.data(), w.data(), yc.data(), n, rows, eps);
      EXPECT_EQ(diff(yj, yr, yc, x, wr), "") << "specials, eps=" << eps;
    }
  }
  {  // outside the contract (n % 16 != 0, n or rows <= 0): nothing written
    std::vector<float> x(40, 1.0f), w(40, 1.0f), y(40, 7.0f);
    for (auto [n, rows] : {std::pair<int64_t, int64_t>{20, 2}, {0, 1}, {16, 0}, {-16, 1}}) {
      reinterpret_cast<RmsNormFn>(l.fn)(x.data(), w.data(), y.data(), n, rows, 1e-5f);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "n=" << n << " rows=" << rows;
    }
  }
}

TEST(JitOps, rmsnorm_f32_f32_16l__avx512) {
  run_rmsnorm("rmsnorm_f32_f32_16l__avx512");
}
TEST(JitOps, rmsnorm_f32_f32_16l__avx2) {
  run_rmsnorm("rmsnorm_f32_f32_16l__avx2");
}

// Every generated provider of ops other than linear and attention has a TEST above.
TEST(JitOps, EveryGeneratedProviderHasATest) {
  std::vector<std::string> tested = {"add_f32_f32_16l__avx2",      "add_f32_f32_16l__avx512",
                                     "kv_store_f32_f32_16l__avx2", "kv_store_f32_f32_16l__avx512",
                                     "swiglu_f32_f32_16l__avx2",   "swiglu_f32_f32_16l__avx512",
                                     "rmsnorm_f32_f32_16l__avx2",  "rmsnorm_f32_f32_16l__avx512"};
  std::vector<std::string> maps;
  for (const KernelMap& m : real_registry().maps())
    if (m.op != "linear" && m.op != "attention" && m.op != "act_quant" && !m.impl.generator.empty())
      maps.push_back(m.id);
  std::sort(maps.begin(), maps.end());
  std::sort(tested.begin(), tested.end());
  EXPECT_EQ(maps, tested);
}

}  // namespace cke::test
