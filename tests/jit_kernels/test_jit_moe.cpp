// The generated moe_gather and moe_combine providers (jit/gen_moe.h) against the reference
// kernel of their contract, and their emitted C against their machine code: every output
// bit-identical (a NaN matches any NaN), on random routings (grouped by moe_group__ref),
// rows of every length around the 16-lane groups, special values, split ranges, and calls
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
