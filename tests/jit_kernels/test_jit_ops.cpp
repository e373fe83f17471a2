// Each generated provider of an elementwise op in kernel_maps/ (glu, add, kv_store) against the
// reference kernel of its contract, and its emitted C against its machine code: every
// output bit-identical (a NaN matches any NaN), on random rows over the whole range of the
// op's arithmetic (exp overflow and underflow, subnormal results), special values (±0,
// ±Inf, NaN), in place (y aliasing an input), and calls outside the contract (nothing
// written).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "generated_kernel.h"
#include "jit/gen_elementwise.h"
#include "jit/gen_glu.h"
#include "jit/gen_rmsnorm.h"
#include "jit/gen_rope.h"
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
  reinterpret_cast<GluFn>(l.ref)(g.data(), u.data(), yr.data(), n, T, 0, T);
  call_split(reinterpret_cast<GluFn>(l.fn), __LINE__, T, g.data(), u.data(), yj.data(), n, T);
  dirtied(reinterpret_cast<GluFn>(l.cfn), __LINE__)(g.data(), u.data(), yc.data(), n, T, 0, T);
  if (std::string d = diff(yj, yr, yc, g, u); !d.empty())
    return fmt::format("n={} T={} {}", n, T, d);
  // In place: y = gate, then y = up.
  std::vector<float> gi = g, ui = u;
  dirtied(reinterpret_cast<GluFn>(l.fn), __LINE__)(gi.data(), u.data(), gi.data(), n, T, 0, T);
  dirtied(reinterpret_cast<GluFn>(l.fn), __LINE__)(g.data(), ui.data(), ui.data(), n, T, 0, T);
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
      dirtied(reinterpret_cast<GluFn>(l.fn), __LINE__)(g.data(), u.data(), y.data(), n, T, 0, T);
      for (float x : y) ASSERT_EQ(x, 7.0f) << "n=" << n << " T=" << T;
    }
    for (auto [b, e] : bad_ranges(2)) {
      dirtied(reinterpret_cast<GluFn>(l.fn), __LINE__)(g.data(), u.data(), y.data(), 16, 2, b, e);
      dirtied(reinterpret_cast<GluFn>(l.cfn), __LINE__)(g.data(), u.data(), y.data(), 16, 2, b, e);
      for (float x : y) ASSERT_EQ(x, 7.0f) << "range [" << b << ", " << e << ")";
    }
  }
}

// GEGLU: gates over the table's range and across both thresholds (exactly ±10 and their
// neighbours), f16 subnormal and rounding-tie gates, specials (±0, ±Inf, NaN) in every
// lane, rows longer than one lookup chunk, in place, and calls outside the contract.
void run_geglu(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "glu", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(59);
  const std::pair<float, float> ranges[] = {{-6, 6},         {-12, 12},     {-1e-3f, 1e-3f},
                                            {-1e-6f, 1e-6f}, {9.9f, 10.1f}, {-10.1f, -9.9f},
                                            {-1e4f, 1e4f}};
  for (auto [lo, hi] : ranges)
    for (auto [n, T] : {std::pair<int64_t, int64_t>{16, 1},
                        {32, 3},
                        {jit::gen::kGegluChunk, 1},
                        {jit::gen::kGegluChunk + 16, 2},
                        {6912, 2},
                        {176, 5}}) {
      const auto g = glu_inputs(n * T, lo, hi, rng), u = glu_inputs(n * T, -3, 3, rng);
      EXPECT_EQ(glu_case(l, g, u, n, T), "") << "gate in [" << lo << ", " << hi << "]";
    }
  {  // special values in every position of a 16-group, against special up values
    const float inf = std::numeric_limits<float>::infinity(),
                nan = std::numeric_limits<float>::quiet_NaN();
    const float specials[] = {0.0f,
                              -0.0f,
                              inf,
                              -inf,
                              nan,
                              10.0f,
                              -10.0f,
                              std::nextafter(10.0f, 0.0f),
                              std::nextafter(-10.0f, 0.0f),
                              1e-45f,
                              -2.98023224e-8f,  // 2^-25: an f16 rounding tie to zero
                              1.00048828125f,   // 1 + 2^-11: a tie between two f16 values
                              65520.0f,         // rounds to f16 inf
                              3e38f,
                              -3e38f,
                              1.0f};
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
      dirtied(reinterpret_cast<GluFn>(l.fn), __LINE__)(g.data(), u.data(), y.data(), n, T, 0, T);
      dirtied(reinterpret_cast<GluFn>(l.cfn), __LINE__)(g.data(), u.data(), y.data(), n, T, 0, T);
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
    reinterpret_cast<AddFn>(l.ref)(a.data(), b.data(), yr.data(), n, 0, n);
    call_split(reinterpret_cast<AddFn>(l.fn), __LINE__, n, a.data(), b.data(), yj.data(), n);
    dirtied(reinterpret_cast<AddFn>(l.cfn), __LINE__)(a.data(), b.data(), yc.data(), n, 0, n);
    EXPECT_EQ(diff(yj, yr, yc, a, b), "") << "n=" << n;
    std::vector<float> ai = a;  // in place on a
    dirtied(reinterpret_cast<AddFn>(l.fn), __LINE__)(ai.data(), b.data(), ai.data(), n, 0, n);
    EXPECT_EQ(diff(ai, yr, ai, a, b), "") << "in place, n=" << n;
  }
  std::vector<float> a(4, 1.0f), y(4, 7.0f);
  dirtied(reinterpret_cast<AddFn>(l.fn), __LINE__)(a.data(), a.data(), y.data(), 0, 0, 0);
  for (float v : y) EXPECT_EQ(v, 7.0f) << "n = 0 writes nothing";
  for (auto [b, e] : bad_ranges(4)) {
    dirtied(reinterpret_cast<AddFn>(l.fn), __LINE__)(a.data(), a.data(), y.data(), 4, b, e);
    dirtied(reinterpret_cast<AddFn>(l.cfn), __LINE__)(a.data(), a.data(), y.data(), 4, b, e);
    for (float v : y) EXPECT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
  }
}

// ---- add_bias, scale ----

// Values with cancellation against the bias, specials (±0, ±Inf, NaN, subnormals, huge) at
// every lane position, widths around the 16-lane groups (row tails), in place.
std::vector<float> with_specials(std::vector<float> v, int64_t first, int64_t step) {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const float sp[] = {inf, -inf, nan, 0.0f, -0.0f, 1e-45f, -3e38f, 3e38f, 1e-40f};
  for (int64_t i = first; i < int64_t(v.size()); i += step) v[size_t(i)] = sp[size_t(i) % 9];
  return v;
}

void run_add_bias(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "add_bias", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(47);
  using jit::gen::AddBiasFn;
  for (auto [n, T] : {std::pair<int64_t, int64_t>{1, 1},
                      {15, 2},
                      {16, 1},
                      {17, 3},
                      {64, 5},
                      {896, 1},
                      {128, 7},
                      {2053, 2}}) {
    const auto b = with_specials(glu_inputs(n, -1e3f, 1e3f, rng), 5, 13);
    auto x = with_specials(glu_inputs(n * T, -1e3f, 1e3f, rng), 3, 11);
    for (int64_t i = 0; i < n * T; i += 7) x[size_t(i)] = -b[size_t(i % n)];
    std::vector<float> br(size_t(n * T));
    for (int64_t i = 0; i < n * T; ++i) br[size_t(i)] = b[size_t(i % n)];
    std::vector<float> yr(size_t(n * T), 7.0f), yj = yr, yc = yr;
    reinterpret_cast<AddBiasFn>(l.ref)(x.data(), b.data(), yr.data(), n, T, 0, T);
    call_split(reinterpret_cast<AddBiasFn>(l.fn), __LINE__, T, x.data(), b.data(), yj.data(), n, T);
    dirtied(reinterpret_cast<AddBiasFn>(l.cfn), __LINE__)(x.data(), b.data(), yc.data(), n, T, 0,
                                                          T);
    EXPECT_EQ(diff(yj, yr, yc, x, br), "") << "n=" << n << " T=" << T;
    std::vector<float> xi = x;  // in place
    dirtied(reinterpret_cast<AddBiasFn>(l.fn), __LINE__)(xi.data(), b.data(), xi.data(), n, T, 0,
                                                         T);
    EXPECT_EQ(diff(xi, yr, xi, x, br), "") << "in place, n=" << n << " T=" << T;
  }
  std::vector<float> x(32, 1.0f), y(32, 7.0f);
  for (auto [n, T] : {std::pair<int64_t, int64_t>{0, 1}, {16, 0}, {-16, 1}, {16, -1}}) {
    dirtied(reinterpret_cast<AddBiasFn>(l.fn), __LINE__)(x.data(), x.data(), y.data(), n, T, 0, T);
    dirtied(reinterpret_cast<AddBiasFn>(l.cfn), __LINE__)(x.data(), x.data(), y.data(), n, T, 0, T);
    for (float v : y) ASSERT_EQ(v, 7.0f) << "n=" << n << " T=" << T << " writes nothing";
  }
  for (auto [b, e] : bad_ranges(2)) {
    dirtied(reinterpret_cast<AddBiasFn>(l.fn), __LINE__)(x.data(), x.data(), y.data(), 16, 2, b, e);
    dirtied(reinterpret_cast<AddBiasFn>(l.cfn), __LINE__)(x.data(), x.data(), y.data(), 16, 2, b,
                                                          e);
    for (float v : y) ASSERT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
  }
}

void run_scale(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "scale", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(53);
  using jit::gen::ScaleFn;
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  // gemma3's sqrt(n_embd) and 1 / sqrt(head_dim), overflow and underflow, specials.
  const float scales[] = {45.254833f, 0.0625f, 0.088388346f, 1e30f, 1e-30f, -3.0f,
                          0.0f,       -0.0f,   inf,          nan,   1.0f};
  for (int64_t n : {1, 15, 16, 17, 31, 64, 1152, 2053})
    for (float sc : scales) {
      const auto x = with_specials(glu_inputs(n, -1e3f, 1e3f, rng), 2, 9);
      std::vector<float> yr(size_t(n), 7.0f), yj = yr, yc = yr;
      reinterpret_cast<ScaleFn>(l.ref)(x.data(), yr.data(), n, sc, 0, n);
      call_split(reinterpret_cast<ScaleFn>(l.fn), __LINE__, n, x.data(), yj.data(), n, sc);
      dirtied(reinterpret_cast<ScaleFn>(l.cfn), __LINE__)(x.data(), yc.data(), n, sc, 0, n);
      EXPECT_EQ(diff(yj, yr, yc, x, x), "") << "n=" << n << " s=" << sc;
      std::vector<float> xi = x;  // in place
      dirtied(reinterpret_cast<ScaleFn>(l.fn), __LINE__)(xi.data(), xi.data(), n, sc, 0, n);
      EXPECT_EQ(diff(xi, yr, xi, x, x), "") << "in place, n=" << n << " s=" << sc;
    }
  std::vector<float> x(4, 1.0f), y(4, 7.0f);
  dirtied(reinterpret_cast<ScaleFn>(l.fn), __LINE__)(x.data(), y.data(), 0, 2.0f, 0, 0);
  dirtied(reinterpret_cast<ScaleFn>(l.cfn), __LINE__)(x.data(), y.data(), -4, 2.0f, 0, -4);
  for (float v : y) EXPECT_EQ(v, 7.0f) << "n <= 0 writes nothing";
  for (auto [b, e] : bad_ranges(4)) {
    dirtied(reinterpret_cast<ScaleFn>(l.fn), __LINE__)(x.data(), y.data(), 4, 2.0f, b, e);
    dirtied(reinterpret_cast<ScaleFn>(l.cfn), __LINE__)(x.data(), y.data(), 4, 2.0f, b, e);
    for (float v : y) EXPECT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
  }
}

// ---- kv_store ----

// (kv_dim, n_ctx, pos0, T) of the kv_store tests: cache widths (one `odd` one, not a multiple
// of the vector; 130: the transposed V's 8-channel tiles and 2 more), chunks at the first and
// last cells, chunks of 37 and 48 tokens (each half of a split call holds a 16-token tile of
// the V transpose, and 37 a rest), and calls outside the cache.
std::vector<std::array<int64_t, 4>> kv_store_calls(int64_t odd) {
  std::vector<std::array<int64_t, 4>> calls;
  for (auto [kv, nctx] :
       {std::pair<int64_t, int64_t>{256, 64}, {odd, 37}, {130, 20}, {130, 96}, {odd, 64}})
    for (auto [pos0, T] : {std::pair<int64_t, int64_t>{0, 1},
                           {5, 1},
                           {0, 7},
                           {3, 17},
                           {2, 37},
                           {nctx - 48, 48},
                           {nctx - 1, 1},
                           {nctx - 4, 4},
                           {nctx - 2, 4},
                           {-1, 1},
                           {0, 0}})
      calls.push_back({kv, nctx, pos0, T});
  return calls;
}

void run_kv_store(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "kv_store", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(41);
  using jit::gen::KvStoreFn;
  for (auto [kv, nctx, pos0, T] : kv_store_calls(8)) {
    const auto k = glu_inputs(kv * std::max<int64_t>(T, 1), -5, 5, rng),
               v = glu_inputs(kv * std::max<int64_t>(T, 1), -5, 5, rng);
    const size_t cache = size_t(kv * nctx);
    std::vector<float> kr(cache, 9.0f), vr(cache, 9.0f), kj = kr, vj = vr, kc = kr, vcc = vr;
    reinterpret_cast<KvStoreFn>(l.ref)(k.data(), v.data(), kr.data(), vr.data(), kv, nctx, pos0, T,
                                       0, T);
    call_split(reinterpret_cast<KvStoreFn>(l.fn), __LINE__, T, k.data(), v.data(), kj.data(),
               vj.data(), kv, nctx, pos0, T);
    dirtied(reinterpret_cast<KvStoreFn>(l.cfn), __LINE__)(k.data(), v.data(), kc.data(), vcc.data(),
                                                          kv, nctx, pos0, T, 0, T);
    const std::string where = fmt::format("kv={} n_ctx={} pos0={} T={}", kv, nctx, pos0, T);
    EXPECT_EQ(0, std::memcmp(kj.data(), kr.data(), cache * 4)) << "K cache, " << where;
    EXPECT_EQ(0, std::memcmp(vj.data(), vr.data(), cache * 4)) << "V cache, " << where;
    EXPECT_EQ(0, std::memcmp(kc.data(), kj.data(), cache * 4)) << "K cache (C), " << where;
    EXPECT_EQ(0, std::memcmp(vcc.data(), vj.data(), cache * 4)) << "V cache (C), " << where;
  }
}

// The F16 cache: random values spanning fp16's normal, subnormal and overflow ranges, with
// exact ties between two halves, +-0, +-Inf and NaNs with payloads and both signs planted
// among them; odd kv_dim so both the 8-lane body and the one-element tail run.
std::vector<float> f16_edge_values(int64_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-30, 20), pick(0, 15);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) {
    x = std::ldexp(mant(rng), expo(rng));
    switch (pick(rng)) {
      case 0:
        x = std::ldexp(float(2 * (pick(rng) + 1) + 1), -11);
        break;  // a tie at 1.x
      case 1:
        x = std::bit_cast<float>(0x7f800001u + uint32_t(pick(rng)) * 0x1000u);
        break;
      case 2:
        x = std::bit_cast<float>(0xffc00000u | uint32_t(pick(rng)));
        break;
      case 3:
        x = pick(rng) < 8 ? INFINITY : -INFINITY;
        break;
      case 4:
        x = pick(rng) < 8 ? 0.0f : -0.0f;
        break;
      case 5:
        x = 65520.0f * (pick(rng) < 8 ? 1.0f : -1.0f);
        break;  // rounds to inf
      default:
        break;
    }
  }
  return v;
}

void run_kv_store_f16(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "kv_store", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(43);
  using jit::gen::KvStoreF16Fn;
  for (auto [kv, nctx, pos0, T] : kv_store_calls(7)) {
    const auto k = f16_edge_values(kv * std::max<int64_t>(T, 1), rng),
               v = f16_edge_values(kv * std::max<int64_t>(T, 1), rng);
    const size_t cache = size_t(kv * nctx);
    std::vector<uint16_t> kr(cache, 0x5555), vr(cache, 0x5555), kj = kr, vj = vr, kc = kr, vcc = vr;
    reinterpret_cast<KvStoreF16Fn>(l.ref)(k.data(), v.data(), kr.data(), vr.data(), kv, nctx, pos0,
                                          T, 0, T);
    call_split(reinterpret_cast<KvStoreF16Fn>(l.fn), __LINE__, T, k.data(), v.data(), kj.data(),
               vj.data(), kv, nctx, pos0, T);
    dirtied(reinterpret_cast<KvStoreF16Fn>(l.cfn), __LINE__)(k.data(), v.data(), kc.data(),
                                                             vcc.data(), kv, nctx, pos0, T, 0, T);
    const std::string where = fmt::format("kv={} n_ctx={} pos0={} T={}", kv, nctx, pos0, T);
    for (size_t i = 0; i < cache; ++i) {
      ASSERT_EQ(kj[i], kr[i]) << "K cache cell value " << i << ", " << where;
      ASSERT_EQ(vj[i], vr[i]) << "V cache cell value " << i << ", " << where;
      ASSERT_EQ(kc[i], kj[i]) << "K cache (C) " << i << ", " << where;
      ASSERT_EQ(vcc[i], vj[i]) << "V cache (C) " << i << ", " << where;
    }
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
TEST(JitOps, add_bias_f32_f32_16l__avx512) {
  run_add_bias("add_bias_f32_f32_16l__avx512");
}
TEST(JitOps, add_bias_f32_f32_16l__avx2) {
  run_add_bias("add_bias_f32_f32_16l__avx2");
}
TEST(JitOps, scale_f32_f32_16l__avx512) {
  run_scale("scale_f32_f32_16l__avx512");
}
TEST(JitOps, scale_f32_f32_16l__avx2) {
  run_scale("scale_f32_f32_16l__avx2");
}
TEST(JitOps, kv_store_f32_f32_16l__avx512) {
  run_kv_store("kv_store_f32_f32_16l__avx512");
}
TEST(JitOps, kv_store_f32_f32_16l__avx2) {
  run_kv_store("kv_store_f32_f32_16l__avx2");
}
TEST(JitOps, kv_store_f16_f32_8l__avx512) {
  run_kv_store_f16("kv_store_f16_f32_8l__avx512");
}
TEST(JitOps, kv_store_f16_f32_8l__avx2) {
  run_kv_store_f16("kv_store_f16_f32_8l__avx2");
}
TEST(JitOps, geglu_f32_f32_16l__avx512) {
  run_geglu("geglu_f32_f32_16l__avx512");
}
TEST(JitOps, geglu_f32_f32_16l__avx2) {
  run_geglu("geglu_f32_f32_16l__avx2");
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
       {std::pair<int64_t, int64_t>{16, 1}, {64, 3}, {64, 7}, {128, 8}, {2048, 2}, {5120, 1}}) {
    for (float eps : {1e-5f, 1e-6f, 0.0f}) {
      std::vector<float> x(static_cast<size_t>(n * rows)), w(static_cast<size_t>(n));
      for (float& v : x) v = nd(rng) * std::exp2(mag(rng));
      for (float& v : w) v = nd(rng);
      std::vector<float> yr(x.size(), 7.0f), yj = yr, yc = yr;
      reinterpret_cast<RmsNormFn>(l.ref)(x.data(), w.data(), yr.data(), n, rows, eps, 0, rows);
      call_split(reinterpret_cast<RmsNormFn>(l.fn), __LINE__, rows, x.data(), w.data(), yj.data(),
                 n, rows, eps);
      dirtied(reinterpret_cast<RmsNormFn>(l.cfn), __LINE__)(x.data(), w.data(), yc.data(), n, rows,
                                                            eps, 0, rows);
      std::vector<float> wr(x.size());
      for (size_t i = 0; i < x.size(); ++i) wr[i] = w[i % size_t(n)];
      EXPECT_EQ(diff(yj, yr, yc, x, wr), "") << "n=" << n << " rows=" << rows << " eps=" << eps;
      std::vector<float> xi = x;  // in place
      dirtied(reinterpret_cast<RmsNormFn>(l.fn), __LINE__)(xi.data(), w.data(), xi.data(), n, rows,
                                                           eps, 0, rows);
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
      reinterpret_cast<RmsNormFn>(l.ref)(x.data(), w.data(), yr.data(), n, rows, eps, 0, rows);
      call_split(reinterpret_cast<RmsNormFn>(l.fn), __LINE__, rows, x.data(), w.data(), yj.data(),
                 n, rows, eps);
      dirtied(reinterpret_cast<RmsNormFn>(l.cfn), __LINE__)(x.data(), w.data(), yc.data(), n, rows,
                                                            eps, 0, rows);
      EXPECT_EQ(diff(yj, yr, yc, x, wr), "") << "specials, eps=" << eps;
    }
  }
  {  // outside the contract (n % 16 != 0, n or rows <= 0): nothing written
    std::vector<float> x(40, 1.0f), w(40, 1.0f), y(40, 7.0f);
    for (auto [n, rows] : {std::pair<int64_t, int64_t>{20, 2}, {0, 1}, {16, 0}, {-16, 1}}) {
      dirtied(reinterpret_cast<RmsNormFn>(l.fn), __LINE__)(x.data(), w.data(), y.data(), n, rows,
                                                           1e-5f, 0, rows);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "n=" << n << " rows=" << rows;
    }
    for (auto [b, e] : bad_ranges(2)) {
      dirtied(reinterpret_cast<RmsNormFn>(l.fn), __LINE__)(x.data(), w.data(), y.data(), 16, 2,
                                                           1e-5f, b, e);
      dirtied(reinterpret_cast<RmsNormFn>(l.cfn), __LINE__)(x.data(), w.data(), y.data(), 16, 2,
                                                            1e-5f, b, e);
      for (float v : y) ASSERT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
    }
  }
}

TEST(JitOps, rmsnorm_f32_f32_16l__avx512) {
  run_rmsnorm("rmsnorm_f32_f32_16l__avx512");
}
TEST(JitOps, rmsnorm_f32_f32_16l__avx2) {
  run_rmsnorm("rmsnorm_f32_f32_16l__avx2");
}

// ---- rmsnorm_act_quant (a fused contract) ----

// The generated provider (split in two ranges) and its emitted C against the fused contract's
// reference (itself tested against the two stages' references: RefOps, in test_norm.cpp):
// xn and the q8_0 blocks byte for byte. Widths of one to many
// blocks, 1 to 9 rows (the 4-row groups and the rest), magnitudes over many decades,
// specials, in place (xn = x), and calls outside the contract (nothing written).
void run_rmsnorm_act_quant(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, "rmsnorm_act_quant", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  using jit::gen::RmsNormActQuantFn;
  const auto ref = reinterpret_cast<RmsNormActQuantFn>(l.ref);
  const auto fn = reinterpret_cast<RmsNormActQuantFn>(l.fn);
  const auto cfn = reinterpret_cast<RmsNormActQuantFn>(l.cfn);
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> mag(-20.0f, 20.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  auto bytes_eq = [](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return fmt::format("byte {} of y: {} vs {}", i, a[i], b[i]);
    return std::string();
  };
  for (auto [n, rows] :
       {std::pair<int64_t, int64_t>{32, 1}, {64, 3}, {128, 4}, {256, 9}, {2048, 5}, {5632, 2}}) {
    for (int special = 0; special < 2; ++special) {
      std::vector<float> x(static_cast<size_t>(n * rows)), w(static_cast<size_t>(n));
      for (float& v : x) v = nd(rng) * std::exp2(mag(rng));
      for (float& v : w) v = nd(rng);
      if (special) {  // a zero row, Inf, NaN, subnormals
        std::fill(x.begin(), x.begin() + n, 0.0f);
        if (rows > 1) x[size_t(n + 3)] = inf;
        if (rows > 2) x[size_t(2 * n + 40 % n)] = nan;
        for (int64_t i = 0; i < n; i += 7) x[size_t((rows - 1) * n + i)] = 1e-45f;
      }
      const size_t yb = size_t(n / 32 * 34 * rows);
      const float eps = special ? 0.0f : 1e-5f;
      std::vector<float> xr(x.size(), 7.0f), xj = xr, xc = xr;
      std::vector<uint8_t> yr(yb, 0xAB), yj = yr, yc = yr;
      ref(x.data(), w.data(), xr.data(), yr.data(), n, rows, eps, 0, rows);
      const std::string at = fmt::format("n={} rows={} special={}", n, rows, special);
      call_split(fn, __LINE__, rows, x.data(), w.data(), xj.data(), static_cast<void*>(yj.data()),
                 n, rows, eps);
      dirtied(cfn, __LINE__)(x.data(), w.data(), xc.data(), yc.data(), n, rows, eps, 0, rows);
      EXPECT_EQ(diff(xj, xr, xc, x, x), "") << at;
      EXPECT_EQ(bytes_eq(yj, yr), "") << "jit vs reference, " << at;
      EXPECT_EQ(bytes_eq(yc, yr), "") << "emitted C vs reference, " << at;
      std::vector<float> xi = x;  // in place: xn = x
      std::vector<uint8_t> yi(yb, 0xAB);
      dirtied(fn, __LINE__)(xi.data(), w.data(), xi.data(), yi.data(), n, rows, eps, 0, rows);
      EXPECT_EQ(diff(xi, xr, xi, x, x), "") << "in place, " << at;
      EXPECT_EQ(bytes_eq(yi, yr), "") << "in place, " << at;
    }
  }
  {  // outside the contract (n % 32 != 0, n or rows <= 0, bad ranges): nothing written
    std::vector<float> x(96, 1.0f), w(96, 1.0f), xn(96, 7.0f);
    std::vector<uint8_t> y(204, 0xAB);
    auto untouched = [&] {
      for (float v : xn)
        if (v != 7.0f) return false;
      for (uint8_t v : y)
        if (v != 0xAB) return false;
      return true;
    };
    for (auto [n, rows] : {std::pair<int64_t, int64_t>{16, 2}, {48, 2}, {0, 1}, {32, 0}, {-32, 1}})
      for (auto f : {fn, cfn, ref}) {
        dirtied(f, __LINE__)(x.data(), w.data(), xn.data(), y.data(), n, rows, 1e-5f, 0, rows);
        ASSERT_TRUE(untouched()) << "n=" << n << " rows=" << rows;
      }
    for (auto [b, e] : bad_ranges(3))
      for (auto f : {fn, cfn, ref}) {
        dirtied(f, __LINE__)(x.data(), w.data(), xn.data(), y.data(), 32, 3, 1e-5f, b, e);
        ASSERT_TRUE(untouched()) << "range [" << b << ", " << e << ")";
      }
  }
}

TEST(JitOps, rmsnorm_act_quant_q8_0_f32_16l__avx512) {
  run_rmsnorm_act_quant("rmsnorm_act_quant_q8_0_f32_16l__avx512");
}
TEST(JitOps, rmsnorm_act_quant_q8_0_f32_16l__avx2) {
  run_rmsnorm_act_quant("rmsnorm_act_quant_q8_0_f32_16l__avx2");
}

// ---- rope ----

// Heads of several widths and counts, full and partial rotary, positions from 0 to past 2^24
// (where (float)pos rounds), bases and scales of every model family, values over many
// decades with specials (±0, ±Inf, NaN, subnormals, huge) in every lane position, the tensor
// ending at a guard page; and calls outside the contract (nothing written).
struct RopeCase {
  int64_t head_dim, n_heads, T, pos0, n_rot;
  float base, scale;
};

std::string rope_case(const Loaded& l, const RopeCase& c, const std::vector<float>& x) {
  using jit::gen::RopeFn;
  const size_t bytes = x.size() * 4;
  std::vector<float> yr = x, yj(x.size()), yc(x.size());
  reinterpret_cast<RopeFn>(l.ref)(yr.data(), c.head_dim, c.n_heads, c.T, c.pos0, c.n_rot, c.base,
                                  c.scale, 0, c.T);
  GuardedBuffer gj(x.data(), bytes), gc(x.data(), bytes);
  call_split(reinterpret_cast<RopeFn>(l.fn), __LINE__, c.T, static_cast<float*>(gj.data()),
             c.head_dim, c.n_heads, c.T, c.pos0, c.n_rot, c.base, c.scale);
  dirtied(reinterpret_cast<RopeFn>(l.cfn), __LINE__)(static_cast<float*>(gc.data()), c.head_dim,
                                                     c.n_heads, c.T, c.pos0, c.n_rot, c.base,
                                                     c.scale, int64_t(0), c.T);
  std::memcpy(yj.data(), gj.data(), bytes);
  std::memcpy(yc.data(), gc.data(), bytes);
  if (std::string d = diff(yj, yr, yc, x, x); !d.empty())
    return fmt::format("head_dim={} n_heads={} T={} pos0={} n_rot={} base={} scale={} {}",
                       c.head_dim, c.n_heads, c.T, c.pos0, c.n_rot, c.base, c.scale, d);
  return "";
}

void run_rope(const std::string& id, bool neox) {
  std::string skip;
  const Loaded l = load(id, "rope", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> mag(-12.0f, 12.0f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t g = neox ? 32 : 16;  // the smallest n_rot step the map admits
  const std::vector<RopeCase> cases = {
      {64, 4, 1, 0, 64, 10000.0f, 1.0f},
      {128, 32, 1, 1000, 128, 10000.0f, 1.0f},
      {128, 8, 5, 12345, 128, 1000000.0f, 0.25f},
      {256, 4, 2, 31, 256, 10000.0f, 1.0f},  // gemma3 head
      {64, 3, 3, (int64_t(1) << 24) + 3, 64, 10000.0f, 1.0f},
      {128, 2, 2, 1000000007, 128, 500000.0f, 0.125f},
      {512, 1, 2, 77, 512, 10000.0f, 1.0f},  // the largest cache
      {128, 4, 3, 77, 64, 10000.0f, 1.0f},   // partial rotary
      {96, 5, 2, 3, 2 * g, 10000.0f, 1.0f},
      {80, 2, 4, 9, g, 1000000.0f, 1.0f},
      {g, 7, 9, 0, g, 10000.0f, 1.0f},
  };
  for (const RopeCase& c : cases) {
    std::vector<float> x(size_t(c.head_dim * c.n_heads * c.T));
    for (float& v : x) v = nd(rng) * std::exp2(mag(rng));
    EXPECT_EQ(rope_case(l, c, x), "");
  }
  {  // specials in every lane of a group, in both elements of a pair
    const float sp[] = {0.0f,   -0.0f, inf,    -inf,  nan,   1e-45f, -1e-45f, 3e38f,
                        -3e38f, 1.0f,  1e-40f, 65504, -2.5f, 1e30f,  -1e-30f, 7.0f};
    for (const RopeCase& c :
         {RopeCase{64, 8, 3, 5, 64, 10000.0f, 1.0f}, RopeCase{128, 4, 2, 99999, 96, 1e6f, 1.0f}}) {
      std::vector<float> x(size_t(c.head_dim * c.n_heads * c.T));
      for (size_t i = 0; i < x.size(); ++i) x[i] = sp[(i * 7 + i / 16) % 16];
      EXPECT_EQ(rope_case(l, c, x), "") << "specials";
    }
  }
  {  // outside the contract: nothing valid to rotate, or a shape the map does not admit
    using jit::gen::RopeFn;
    std::vector<float> x(2048, 7.0f);
    for (auto [head_dim, n_rot, T] : {std::tuple<int64_t, int64_t, int64_t>{64, 0, 1},
                                      {64, -16, 1},
                                      {64, 128, 1},
                                      {64, 63, 1},
                                      {64, g / 2, 1},
                                      {64, g + 2, 1},
                                      {1024, 1024, 1},
                                      {64, 64, 0},
                                      {64, 64, -1}}) {
      dirtied(reinterpret_cast<RopeFn>(l.fn), __LINE__)(x.data(), head_dim, 1, T, 3, n_rot,
                                                        10000.0f, 1.0f, 0, T);
      dirtied(reinterpret_cast<RopeFn>(l.cfn), __LINE__)(x.data(), head_dim, 1, T, 3, n_rot,
                                                         10000.0f, 1.0f, 0, T);
      for (float v : x) ASSERT_EQ(v, 7.0f) << "head_dim=" << head_dim << " n_rot=" << n_rot;
    }
    for (auto [b, e] : bad_ranges(2)) {
      dirtied(reinterpret_cast<RopeFn>(l.fn), __LINE__)(x.data(), 64, 1, 2, 3, 64, 10000.0f, 1.0f,
                                                        b, e);
      dirtied(reinterpret_cast<RopeFn>(l.cfn), __LINE__)(x.data(), 64, 1, 2, 3, 64, 10000.0f, 1.0f,
                                                         b, e);
      for (float v : x) ASSERT_EQ(v, 7.0f) << "range [" << b << ", " << e << ")";
    }
  }
}

TEST(JitOps, rope_normal_f32_f32_16l__avx512) {
  run_rope("rope_normal_f32_f32_16l__avx512", false);
}
TEST(JitOps, rope_normal_f32_f32_16l__avx2) {
  run_rope("rope_normal_f32_f32_16l__avx2", false);
}
TEST(JitOps, rope_neox_f32_f32_16l__avx512) {
  run_rope("rope_neox_f32_f32_16l__avx512", true);
}
TEST(JitOps, rope_neox_f32_f32_16l__avx2) {
  run_rope("rope_neox_f32_f32_16l__avx2", true);
}

// Every generated provider of ops other than linear and attention has a TEST above (or in
// test_jit_families.cpp).
TEST(JitOps, EveryGeneratedProviderHasATest) {
  std::vector<std::string> tested = {
      "add_f32_f32_16l__avx2", "add_f32_f32_16l__avx512", "kv_store_f32_f32_16l__avx2",
      "kv_store_f32_f32_16l__avx512", "kv_store_f16_f32_8l__avx2", "kv_store_f16_f32_8l__avx512",
      "swiglu_f32_f32_16l__avx2", "swiglu_f32_f32_16l__avx512", "rmsnorm_f32_f32_16l__avx2",
      "rmsnorm_f32_f32_16l__avx512", "rmsnorm_act_quant_q8_0_f32_16l__avx2",
      "rmsnorm_act_quant_q8_0_f32_16l__avx512", "rope_normal_f32_f32_16l__avx2",
      "rope_normal_f32_f32_16l__avx512", "rope_neox_f32_f32_16l__avx2",
      "rope_neox_f32_f32_16l__avx512", "add_bias_f32_f32_16l__avx2", "add_bias_f32_f32_16l__avx512",
      "scale_f32_f32_16l__avx2", "scale_f32_f32_16l__avx512", "geglu_f32_f32_16l__avx2",
      "geglu_f32_f32_16l__avx512",
      // test_jit_families.cpp
      "layernorm_f32_f32_16l__avx2", "layernorm_f32_f32_16l__avx512", "relu_sqr_f32_f32_16l__avx2",
      "relu_sqr_f32_f32_16l__avx512", "swiglu_fused_f32_f32_16l__avx2",
      "swiglu_fused_f32_f32_16l__avx512",
      // test_jit_moe.cpp (the expert matmuls, linear_id: test_jit_linear_id.cpp)
      "moe_gather_f32__avx2", "moe_gather_f32__avx512", "moe_combine_f32__avx2",
      "moe_combine_f32__avx512", "moe_route_softmax_norm_f32__avx2",
      "moe_route_softmax_norm_f32__avx512", "moe_group__avx2"};
  std::vector<std::string> maps;
  for (const KernelMap& m : real_registry().maps())
    if (m.op != "linear" && m.op != "linear_id" && m.op != "attention" && m.op != "act_quant" &&
        m.op != "embed" && !m.impl.generator.empty())
      maps.push_back(m.id);
  std::sort(maps.begin(), maps.end());
  std::sort(tested.begin(), tested.end());
  EXPECT_EQ(maps, tested);
}

}  // namespace cke::test
