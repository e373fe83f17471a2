// The generated MoE providers (jit/gen_moe.h) against the reference kernel of their
// contract, and their emitted C against their machine code: every output bit-identical (a
// NaN matches any NaN). moe_gather / moe_combine on random routings (grouped by
// moe_group__ref), rows of every length around the 16-lane groups, special values, split
// ranges; moe_route on router rows of every expert count around the 16-lane groups with
// exact ties (inside, across and outside the top n_used), zeros of both signs, underflowing
// probabilities, infinities and NaN; moe_group on random and out-of-range ids; and calls
// outside the contract (nothing written).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "generated_kernel.h"
#include "jit/gen_moe.h"
#include "kernels/ref/ops.h"

namespace cke::test {
namespace {

using jit::gen::MoeCombineFn;
using jit::gen::MoeGatherFn;
using jit::gen::MoeGroupFn;
using jit::gen::MoeRouteFn;

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
}

std::string diff(const std::vector<float>& jit, const std::vector<float>& ref,
                 const std::vector<float>& c) {
  for (size_t i = 0; i < jit.size(); ++i) {
    if (!same(jit[i], ref[i])) return fmt::format("[{}]: jit {} reference {}", i, jit[i], ref[i]);
    if (!same(jit[i], c[i])) return fmt::format("[{}]: jit {} emitted C {}", i, jit[i], c[i]);
  }
  return "";
}

// ids [n_used, T] (distinct experts per token), grouped: rows [2 * n_used * T].
std::vector<int32_t> grouped_rows(int64_t E, int64_t n_used, int64_t T, std::mt19937& rng) {
  std::vector<int32_t> ids, perm(static_cast<size_t>(E)), sched(static_cast<size_t>(2 * E)),
      rows(static_cast<size_t>(2 * n_used * T));
  for (int64_t t = 0; t < T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    ids.insert(ids.end(), perm.begin(), perm.begin() + n_used);
  }
  moe_group__ref(ids.data(), sched.data(), rows.data(), E, n_used, T);
  return rows;
}

std::vector<float> values(size_t n, std::mt19937& rng, bool specials) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-30.0f, 30.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng) * std::exp2(e(rng));
  if (specials && n > 8) {
    const float inf = std::numeric_limits<float>::infinity();
    v[1] = inf, v[3] = -inf, v[5] = std::numeric_limits<float>::quiet_NaN(), v[7] = 1e-45f;
    v[n - 1] = -0.0f, v[n / 2] = 3e38f;
  }
  return v;
}

void run_gather(const std::string& id) {
  std::string skip;
  auto l = load_generated<MoeGatherFn>(id, "moe_gather", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(71);
  for (int64_t n : {1, 15, 16, 17, 48, 256, 333})
    for (auto [E, n_used, T] : {std::array<int64_t, 3>{4, 2, 1}, {8, 2, 7}, {16, 4, 33}}) {
      const int64_t P = n_used * T;
      const auto rows = grouped_rows(E, n_used, T, rng);
      const auto x = values(size_t(n * T), rng, n > 8);
      for (auto [j0, j1] : {std::pair<int64_t, int64_t>{0, P}, {1, P}, {P / 2, P}, {0, 1}}) {
        std::vector<float> yr(static_cast<size_t>(n * P), 9.0f), yj = yr, yc = yr;
        moe_gather_f32__ref(x.data(), rows.data(), yr.data(), n, P, j0, j1);
        l.fn(x.data(), rows.data(), yj.data(), n, P, j0, j1);
        l.cfn(x.data(), rows.data(), yc.data(), n, P, j0, j1);
        ASSERT_EQ(diff(yj, yr, yc), "") << fmt::format("n={} P={} [{}, {})", n, P, j0, j1);
        // Bits copied exactly (NaN payloads too).
        ASSERT_EQ(std::memcmp(yj.data(), yr.data(), yr.size() * 4), 0);
      }
    }
  // Outside the contract: nothing written.
  std::vector<int32_t> rows = {0, 1, 0, 1};
  std::vector<float> x(32, 1.0f), y(32, 7.0f);
  for (MoeGatherFn fn : {l.fn, l.cfn}) {
    fn(x.data(), rows.data(), y.data(), 0, 2, 0, 2);
    fn(x.data(), rows.data(), y.data(), 16, 2, -1, 2);
    fn(x.data(), rows.data(), y.data(), 16, 2, 0, 3);
    for (float v : y) ASSERT_EQ(v, 7.0f);
  }
}

void run_combine(const std::string& id) {
  std::string skip;
  auto l = load_generated<MoeCombineFn>(id, "moe_combine", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(72);
  for (int64_t n : {1, 15, 16, 17, 48, 256, 333})
    for (auto [E, n_used, T] :
         {std::array<int64_t, 3>{4, 1, 1}, {4, 2, 3}, {8, 3, 7}, {16, 8, 9}, {128, 8, 2}}) {
      const int64_t P = n_used * T;
      const auto rows = grouped_rows(E, n_used, T, rng);
      const auto x = values(size_t(n * P), rng, n > 8);
      std::uniform_real_distribution<float> wd(0.0f, 1.0f);
      std::vector<float> w(static_cast<size_t>(P));
      for (float& v : w) v = wd(rng);
      for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, T}, {T / 2, T}, {0, 1}}) {
        std::vector<float> yr(static_cast<size_t>(n * T), 9.0f), yj = yr, yc = yr;
        moe_combine_f32__ref(x.data(), w.data(), rows.data(), yr.data(), n, n_used, T, t0, t1);
        l.fn(x.data(), w.data(), rows.data(), yj.data(), n, n_used, T, t0, t1);
        l.cfn(x.data(), w.data(), rows.data(), yc.data(), n, n_used, T, t0, t1);
        ASSERT_EQ(diff(yj, yr, yc), "")
            << fmt::format("n={} n_used={} T={} [{}, {})", n, n_used, T, t0, t1);
      }
    }
  std::vector<int32_t> rows = {0, 1, 0, 1};
  std::vector<float> x(64, 1.0f), w(2, 0.5f), y(32, 7.0f);
  for (MoeCombineFn fn : {l.fn, l.cfn}) {
    fn(x.data(), w.data(), rows.data(), y.data(), 0, 2, 1, 0, 1);
    fn(x.data(), w.data(), rows.data(), y.data(), 16, 0, 1, 0, 1);
    fn(x.data(), w.data(), rows.data(), y.data(), 16, 2, 1, -1, 1);
    fn(x.data(), w.data(), rows.data(), y.data(), 16, 2, 1, 0, 2);
    for (float v : y) ASSERT_EQ(v, 7.0f);
  }
}

// A router row of E logits of kind `kind`: 0 normal, 1 a few distinct values (exact ties
// everywhere), 2 all equal, 3 +-0 only, 4 a huge spread (most probabilities underflow to
// exact zeros), 5 one +inf, 6 one NaN, 7 all -inf, 8 two tied leaders then normal values.
std::vector<float> router_row(int64_t E, int kind, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::uniform_int_distribution<int> few(0, 3);
  std::vector<float> v(static_cast<size_t>(E));
  for (float& x : v) x = nd(rng);
  const float inf = std::numeric_limits<float>::infinity();
  switch (kind) {
    case 1:
      for (float& x : v) x = 0.5f * float(few(rng));
      break;
    case 2:
      for (float& x : v) x = 1.25f;
      break;
    case 3:
      for (float& x : v) x = few(rng) % 2 ? -0.0f : 0.0f;
      break;
    case 4:
      for (float& x : v) x *= 1000.0f;
      break;
    case 5:
      v[size_t(E / 2)] = inf;
      break;
    case 6:
      v[size_t(E - 1)] = std::numeric_limits<float>::quiet_NaN();
      break;
    case 7:
      for (float& x : v) x = -inf;
      break;
    case 8:
      if (E > 2) v[1] = v[size_t(E - 1)] = 40.0f;
      break;
  }
  return v;
}

std::string route_diff(const std::vector<int32_t>& ij, const std::vector<int32_t>& ir,
                       const std::vector<int32_t>& ic, const std::vector<float>& wj,
                       const std::vector<float>& wr, const std::vector<float>& wc) {
  for (size_t i = 0; i < ij.size(); ++i) {
    if (ij[i] != ir[i]) return fmt::format("ids[{}]: jit {} reference {}", i, ij[i], ir[i]);
    if (ij[i] != ic[i]) return fmt::format("ids[{}]: jit {} emitted C {}", i, ij[i], ic[i]);
  }
  return diff(wj, wr, wc);
}

void run_route(const std::string& id) {
  std::string skip;
  auto l = load_generated<MoeRouteFn>(id, "moe_route", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(73);
  int rows = 0;
  for (int64_t E : {1, 2, 4, 8, 15, 16, 17, 31, 32, 60, 64, 128, 160, 256, 512})
    for (int64_t n_used : {int64_t(1), int64_t(2), int64_t(4), int64_t(8), E}) {
      if (n_used > E) continue;
      for (int kind = 0; kind <= 8; ++kind) {
        const int64_t T = kind == 0 ? 7 : 3;
        std::vector<float> logits;
        for (int64_t t = 0; t < T; ++t) {
          const auto r = router_row(E, kind, rng);
          logits.insert(logits.end(), r.begin(), r.end());
        }
        for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, T}, {1, T}, {0, 1}}) {
          const size_t P = static_cast<size_t>(n_used * T);
          std::vector<int32_t> ir(P, -7), ij = ir, ic = ir;
          std::vector<float> wr(P, 9.0f), wj = wr, wc = wr;
          moe_route_softmax_norm_f32__ref(logits.data(), ir.data(), wr.data(), E, n_used, T, t0,
                                          t1);
          const uint8_t fill = uint8_t(rows * 37);
          dirty_stack(fill);
          l.fn(logits.data(), ij.data(), wj.data(), E, n_used, T, t0, t1);
          dirty_stack(fill);
          l.cfn(logits.data(), ic.data(), wc.data(), E, n_used, T, t0, t1);
          ASSERT_EQ(route_diff(ij, ir, ic, wj, wr, wc), "")
              << fmt::format("E={} n_used={} kind={} [{}, {})", E, n_used, kind, t0, t1);
          ++rows;
        }
      }
    }
  EXPECT_GT(rows, 1000);
  // Outside the contract (E above the frame row, n_used > E or 0, bad ranges): nothing written.
  std::vector<float> logits(1024 * 2, 0.5f), w(16, 9.0f);
  std::vector<int32_t> ids(16, -7);
  for (MoeRouteFn fn : {l.fn, l.cfn}) {
    fn(logits.data(), ids.data(), w.data(), 513, 2, 1, 0, 1);
    fn(logits.data(), ids.data(), w.data(), 8, 9, 1, 0, 1);
    fn(logits.data(), ids.data(), w.data(), 8, 0, 1, 0, 1);
    fn(logits.data(), ids.data(), w.data(), 8, 2, 1, -1, 1);
    fn(logits.data(), ids.data(), w.data(), 8, 2, 1, 0, 2);
    fn(logits.data(), ids.data(), w.data(), 8, 2, 1, 1, 1);
    for (float v : w) ASSERT_EQ(v, 9.0f);
    for (int32_t v : ids) ASSERT_EQ(v, -7);
  }
}

// The selection path must be the one that runs on ordinary rows: count how often the
// reference's order differs from a stable sort's (ties resolved by index) on tied rows of
// 17+ experts, so the test above is known to reach the std::sort path's own tie order.
TEST(JitMoe, TiedRowsReachAnUnstableTieOrder) {
  std::mt19937 rng(74);
  int unstable = 0;
  for (int rep = 0; rep < 50; ++rep) {
    const auto logits = router_row(64, 1, rng);
    std::vector<int32_t> ids(64);
    std::vector<float> w(64);
    moe_route_softmax_norm_f32__ref(logits.data(), ids.data(), w.data(), 64, 64, 1, 0, 1);
    std::vector<int32_t> stable(64);
    std::iota(stable.begin(), stable.end(), 0);
    std::stable_sort(stable.begin(), stable.end(),
                     [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    unstable += ids != stable;
  }
  EXPECT_GT(unstable, 0);
}

void run_group(const std::string& id) {
  std::string skip;
  auto l = load_generated<MoeGroupFn>(id, "moe_group", &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
  std::mt19937 rng(75);
  for (int64_t E : {1, 4, 8, 60, 128, 512})
    for (int64_t n_used : {1, 2, 8})
      for (int64_t T : {1, 3, 64}) {
        for (bool out_of_range : {false, true}) {
          std::uniform_int_distribution<int32_t> d(out_of_range ? -2 : 0,
                                                   int32_t(E) + (out_of_range ? 1 : -1));
          std::vector<int32_t> ids(static_cast<size_t>(n_used * T));
          for (int32_t& v : ids) v = d(rng);
          std::vector<int32_t> sr(static_cast<size_t>(2 * E), -5),
              sj = sr, sc = sr, rr(static_cast<size_t>(2 * n_used * T), -5), rj = rr, rc = rr;
          moe_group__ref(ids.data(), sr.data(), rr.data(), E, n_used, T);
          dirty_stack(uint8_t(E + T));
          l.fn(ids.data(), sj.data(), rj.data(), E, n_used, T);
          dirty_stack(uint8_t(E + T));
          l.cfn(ids.data(), sc.data(), rc.data(), E, n_used, T);
          const std::string at =
              fmt::format("E={} n_used={} T={} out_of_range={}", E, n_used, T, out_of_range);
          ASSERT_EQ(sj, sr) << at << " (sched, jit vs reference)";
          ASSERT_EQ(sc, sr) << at << " (sched, emitted C vs reference)";
          ASSERT_EQ(rj, rr) << at << " (rows, jit vs reference)";
          ASSERT_EQ(rc, rr) << at << " (rows, emitted C vs reference)";
        }
      }
  std::vector<int32_t> ids = {0, 1}, sched(2000, -5), rows(8, -5);
  for (MoeGroupFn fn : {l.fn, l.cfn}) {
    fn(ids.data(), sched.data(), rows.data(), 513, 1, 2);
    fn(ids.data(), sched.data(), rows.data(), 0, 1, 2);
    fn(ids.data(), sched.data(), rows.data(), 4, 0, 2);
    fn(ids.data(), sched.data(), rows.data(), 4, 1, 0);
    for (int32_t v : sched) ASSERT_EQ(v, -5);
    for (int32_t v : rows) ASSERT_EQ(v, -5);
  }
}

TEST(JitMoe, moe_route_softmax_norm_f32__avx512) {
  run_route("moe_route_softmax_norm_f32__avx512");
}
TEST(JitMoe, moe_route_softmax_norm_f32__avx2) {
  run_route("moe_route_softmax_norm_f32__avx2");
}
TEST(JitMoe, moe_group__avx2) {
  run_group("moe_group__avx2");
}
TEST(JitMoe, moe_gather_f32__avx512) {
  run_gather("moe_gather_f32__avx512");
}
TEST(JitMoe, moe_gather_f32__avx2) {
  run_gather("moe_gather_f32__avx2");
}
TEST(JitMoe, moe_combine_f32__avx512) {
  run_combine("moe_combine_f32__avx512");
}
TEST(JitMoe, moe_combine_f32__avx2) {
  run_combine("moe_combine_f32__avx2");
}

}  // namespace
}  // namespace cke::test
