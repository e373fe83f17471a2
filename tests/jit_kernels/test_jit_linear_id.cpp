// Each generated expert-matmul provider (op linear_id, kernel_maps/linear_id_generated.yaml)
// against the reference kernel of its contract (bit_exact), and its emitted C against its
// machine code (memcmp): random routings of P = n_used * T pairs over E experts (grouped by
// moe_group__ref, as the plan does), experts without pairs, every pair on one expert, row
// splits, edge data, weights/activations/outputs against guard pages, two threads, and calls
// outside the contract (nothing written).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "generated_kernel.h"
#include "jit/gen_moe.h"
#include "kernels/ref/ops.h"
#include "tests/common/generated_linear.h"
#include "tests/common/linear_call.h"

namespace cke::test {
namespace {

using jit::gen::LinearIdFn;

struct Loaded {
  GeneratedKernel<LinearIdFn> k;
  DType wtype = DType::F32, atype = DType::F32;
  ActStepFn act_step = nullptr;
  bool decode_only = false;
  bool admits(int64_t K, int64_t N) const { return k.map->admits({{"K", K}, {"N", N}}); }
};

Loaded load(const std::string& id, std::string* skip) {
  Loaded l;
  l.k = load_generated<LinearIdFn>(id, "linear_id", skip);
  if (!l.k.map || !skip->empty()) return l;
  const Registry& reg = real_registry();
  const Contract* c = reg.find_contract(l.k.map->contract);
  l.wtype = l.k.map->port("w")->dtype;
  l.atype = *c->port("x")->dtype;
  for (const ContractConvert& cv : c->converts) {
    const Contract* via = reg.find_contract(cv.via);
    const KernelSymbol* s = via ? find_kernel_symbol(via->reference) : nullptr;
    if (s) l.act_step = reinterpret_cast<ActStepFn>(s->fn);
  }
  l.decode_only =
      l.k.map->selection.supports(Phase::Decode) && !l.k.map->selection.supports(Phase::Prefill);
  return l;
}

// A routing: ids [n_used, T] (distinct experts per token), grouped by moe_group__ref.
struct Routing {
  std::vector<int32_t> ids, sched, rows;
  int64_t E, n_used, T;
};
Routing route(int64_t E, int64_t n_used, int64_t T, std::mt19937& rng, int64_t only = -1) {
  Routing r{{},
            std::vector<int32_t>(size_t(2 * E)),
            std::vector<int32_t>(size_t(2 * n_used * T)),
            E,
            n_used,
            T};
  std::vector<int32_t> perm(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    if (only >= 0) std::swap(perm[0], perm[size_t(only)]);  // slot 0 always expert `only`
    for (int64_t s = 0; s < n_used; ++s) r.ids.push_back(perm[size_t(s)]);
  }
  moe_group__ref(r.ids.data(), r.sched.data(), r.rows.data(), E, n_used, T);
  return r;
}

bool same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
}

// Reference, JIT and C on the same inputs, outputs prefilled with a sentinel: "" when the JIT
// equals the reference and the C the JIT, output by output.
std::string compare(const Loaded& l, const std::vector<uint8_t>& w, const std::vector<uint8_t>& x,
                    const std::vector<int32_t>& sched, int64_t K, int64_t N, int64_t E, int64_t P,
                    int64_t n0, int64_t n1) {
  std::vector<float> yr(static_cast<size_t>(N * P), 5.0f), yj = yr, yc = yr;
  l.k.ref(x.data(), w.data(), sched.data(), yr.data(), K, N, E, P, n0, n1);
  dirtied(l.k.fn, __LINE__)(x.data(), w.data(), sched.data(), yj.data(), K, N, E, P, n0, n1);
  dirtied(l.k.cfn, __LINE__)(x.data(), w.data(), sched.data(), yc.data(), K, N, E, P, n0, n1);
  for (size_t i = 0; i < yr.size(); ++i) {
    if (!same(yj[i], yr[i]))
      return fmt::format("K={} N={} E={} P={} rows [{}, {}): y[{}] jit {} reference {}", K, N, E, P,
                         n0, n1, i, yj[i], yr[i]);
    if (!same(yc[i], yj[i]))
      return fmt::format("K={} N={} E={} P={}: y[{}] emitted C {} jit {}", K, N, E, P, i, yc[i],
                         yj[i]);
  }
  return "";
}

std::vector<uint8_t> acts(const Loaded& l, int64_t K, int64_t P, ActStyle s, std::mt19937& rng) {
  const std::vector<float> x = make_acts(K, P, s, rng);
  return convert_activations(l.act_step, l.atype, x.data(), K, P);
}

bool float_w(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}
int64_t unit(DType t) {
  return float_w(t) ? 16 : dtype_info(t).block_size;
}

// A decode step reads the selected experts' rows only (and a prefill the experts that have
// pairs): the experts without pairs sit on pages that fault when read (N = 4096 rows makes
// every expert a whole number of pages).
void unused_experts_not_read(const Loaded& l, std::mt19937& rng) {
  const int64_t K = unit(l.wtype), N = 4096, E = 4, n_used = 2, T = l.decode_only ? 1 : 3;
  if (!l.admits(K, N)) return;
  const size_t page = size_t(sysconf(_SC_PAGESIZE)), expert = row_bytes(l.wtype, K) * size_t(N);
  ASSERT_EQ(expert % page, 0u);
  const auto w = make_weights(l.wtype, K, N * E, WeightStyle::Random, rng);
  // Experts 1 and 3 get every pair (slots 0 and 1), 0 and 2 none.
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < T; ++t) ids.insert(ids.end(), {3, 1});
  std::vector<int32_t> sched(size_t(2 * E)), rows(size_t(2 * n_used * T));
  moe_group__ref(ids.data(), sched.data(), rows.data(), E, n_used, T);
  const int64_t P = n_used * T;
  const auto x = acts(l, K, P, ActStyle::Random, rng);
  std::vector<float> yr(size_t(N * P), 0.0f);
  l.k.ref(x.data(), w.data(), sched.data(), yr.data(), K, N, E, P, 0, N);
  void* m =
      mmap(nullptr, expert * size_t(E), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* wb = static_cast<uint8_t*>(m);
  std::memcpy(wb, w.data(), w.size());
  ASSERT_EQ(mprotect(wb, expert, PROT_NONE), 0);               // expert 0
  ASSERT_EQ(mprotect(wb + 2 * expert, expert, PROT_NONE), 0);  // expert 2
  for (LinearIdFn fn : {l.k.fn, l.k.cfn}) {
    std::vector<float> y(size_t(N * P), 0.0f);
    dirtied(fn, __LINE__)(x.data(), wb, sched.data(), y.data(), K, N, E, P, 0, N);
    EXPECT_EQ(std::memcmp(y.data(), yr.data(), y.size() * 4), 0);
  }
  munmap(m, expert * size_t(E));
}

void run_all(const std::string& id) {
  std::string skip;
  Loaded l = load(id, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.k.fn, nullptr);
  ASSERT_NE(l.k.cfn, nullptr);
  ASSERT_NE(l.k.ref, nullptr);
  std::mt19937 rng(4242);
  const int64_t u = unit(l.wtype);
  unused_experts_not_read(l, rng);
  // Random routings: (K, N, E, n_used, T); decode providers see T = 1.
  for (auto [K, N, E, n_used, T] : std::vector<std::array<int64_t, 5>>{{u, 8, 4, 2, 1},
                                                                       {2 * u, 16, 4, 2, 5},
                                                                       {u, 24, 8, 2, 9},
                                                                       {3 * u, 40, 6, 3, 13},
                                                                       {u, 64, 16, 4, 33},
                                                                       {2 * u, 128, 4, 2, 70}}) {
    if (l.decode_only) T = 1;
    if (!l.admits(K, N)) continue;
    SCOPED_TRACE(fmt::format("K={} N={} E={} n_used={} T={}", K, N, E, n_used, T));
    const auto w = make_weights(l.wtype, K, N * E, WeightStyle::Random, rng);
    const Routing r = route(E, n_used, T, rng);
    const int64_t P = n_used * T;
    const auto x = acts(l, K, P, ActStyle::Random, rng);
    ASSERT_EQ(compare(l, w, x, r.sched, K, N, E, P, 0, N), "");
    // Row splits of one call: the same bits as the whole, nothing outside.
    for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, 1}, {3, 9}, {N - 5, N}, {N / 2, N}})
      ASSERT_EQ(compare(l, w, x, r.sched, K, N, E, P, n0, n1), "");
    // Every pair's slot 0 on one expert (many tokens on it), the rest spread.
    const Routing one = route(E, n_used, T, rng, E - 1);
    ASSERT_EQ(compare(l, w, x, one.sched, K, N, E, P, 0, N), "");
  }
  // Edge data: weights and activations of every style.
  {
    const int64_t K = 2 * u, N = 16, E = 4, n_used = 2, T = l.decode_only ? 1 : 3;
    if (l.admits(K, N))
      for (WeightStyle ws : {WeightStyle::Extreme, WeightStyle::Zero, WeightStyle::SpecialScale})
        for (ActStyle as : {ActStyle::Zero, ActStyle::Large, ActStyle::NaNs, ActStyle::Subnormal}) {
          const auto w = make_weights(l.wtype, K, N * E, ws, rng);
          const Routing r = route(E, n_used, T, rng);
          const auto x = acts(l, K, n_used * T, as, rng);
          ASSERT_EQ(compare(l, w, x, r.sched, K, N, E, n_used * T, 0, N), "")
              << "weights style " << int(ws) << ", activations style " << int(as);
        }
  }
  // Guard pages: the last expert's rows, the last pair's activations and outputs end right
  // before an inaccessible page.
  {
    const int64_t K = u * 3, N = 24, E = 3, n_used = 2, T = l.decode_only ? 1 : 4, P = n_used * T;
    if (l.admits(K, N)) {
      const auto w = make_weights(l.wtype, K, N * E, WeightStyle::Random, rng);
      const Routing r = route(E, n_used, T, rng, E - 1);
      const auto x = acts(l, K, P, ActStyle::Random, rng);
      std::vector<float> yr(static_cast<size_t>(N * P), 0.0f);
      l.k.ref(x.data(), w.data(), r.sched.data(), yr.data(), K, N, E, P, 0, N);
      for (LinearIdFn fn : {l.k.fn, l.k.cfn}) {
        GuardedBuffer gw(w.data(), w.size()), gx(x.data(), x.size());
        std::vector<float> zeros(static_cast<size_t>(N * P), 0.0f);
        GuardedBuffer gy(zeros.data(), zeros.size() * 4);
        GuardedBuffer gs(r.sched.data(), r.sched.size() * 4);
        dirtied(fn, __LINE__)(gx.data(), gw.data(), static_cast<const int32_t*>(gs.data()),
                              static_cast<float*>(gy.data()), K, N, E, P, 0, N);
        EXPECT_EQ(std::memcmp(gy.data(), yr.data(), yr.size() * 4), 0);
      }
    }
  }
  // Two threads on disjoint row ranges of one call.
  {
    const int64_t K = 2 * u, N = 48, E = 5, n_used = 2, T = l.decode_only ? 1 : 7, P = n_used * T;
    if (l.admits(K, N)) {
      const auto w = make_weights(l.wtype, K, N * E, WeightStyle::Random, rng);
      const Routing r = route(E, n_used, T, rng);
      const auto x = acts(l, K, P, ActStyle::Random, rng);
      std::vector<float> yr(static_cast<size_t>(N * P)), yj(static_cast<size_t>(N * P));
      l.k.ref(x.data(), w.data(), r.sched.data(), yr.data(), K, N, E, P, 0, N);
      std::thread a(
          [&] { l.k.fn(x.data(), w.data(), r.sched.data(), yj.data(), K, N, E, P, 0, 16); });
      std::thread b(
          [&] { l.k.fn(x.data(), w.data(), r.sched.data(), yj.data(), K, N, E, P, 16, N); });
      a.join();
      b.join();
      EXPECT_EQ(std::memcmp(yr.data(), yj.data(), yr.size() * 4), 0);
    }
  }
  // Outside the contract: nothing written (bad dims, rows, or a schedule past P).
  {
    const int64_t K = u, N = 8, E = 2, P = 2;
    const auto w = make_weights(l.wtype, K, N * E, WeightStyle::Random, rng);
    const auto x = acts(l, K, P, ActStyle::Random, rng);
    const std::vector<int32_t> good = {1, 1, 0, 1}, past = {2, 1, 1, 2}, neg = {1, 1, -1, 5};
    for (LinearIdFn fn : {l.k.fn, l.k.cfn, l.k.ref}) {
      std::vector<float> y(static_cast<size_t>(N * P), 3.0f);
      fn(x.data(), w.data(), good.data(), y.data(), K, N, 0, P, 0, N);      // E = 0
      fn(x.data(), w.data(), good.data(), y.data(), K, N, E, P, 3, 2);      // n0 > n1
      fn(x.data(), w.data(), good.data(), y.data(), K, N, E, P, 0, N + 1);  // n1 > N
      fn(x.data(), w.data(), good.data(), y.data(), -K, N, E, P, 0, N);     // K < 0
      fn(x.data(), w.data(), past.data(), y.data(), K, N, E, P, 0, N);      // first + count > P
      fn(x.data(), w.data(), neg.data(), y.data(), K, N, E, P, 0, N);       // first < 0
      if (!l.admits(K + 1, N)) fn(x.data(), w.data(), good.data(), y.data(), K + 1, N, E, P, 0, N);
      for (float v : y) ASSERT_EQ(v, 3.0f);
    }
  }
}

// One TEST per provider id (the name cke-audit looks for); EveryGeneratedProviderHasATest
// keeps the list and kernel_maps/ equal.
TEST(JitLinearId, linear_id_bf16_f32_4x1__avx512bf16) {
  run_all("linear_id_bf16_f32_4x1__avx512bf16");
}
TEST(JitLinearId, linear_id_bf16_f32_4x1__avx512) {
  run_all("linear_id_bf16_f32_4x1__avx512");
}
TEST(JitLinearId, linear_id_bf16_f32_2x1__avx2) {
  run_all("linear_id_bf16_f32_2x1__avx2");
}
TEST(JitLinearId, linear_id_f16_f32_1x1__avx2) {
  run_all("linear_id_f16_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_f16_f32_2x3__avx512) {
  run_all("linear_id_f16_f32_2x3__avx512");
}
TEST(JitLinearId, linear_id_f16_f32_4x1__avx512) {
  run_all("linear_id_f16_f32_4x1__avx512");
}
TEST(JitLinearId, linear_id_f32_f32_1x1__avx2) {
  run_all("linear_id_f32_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_f32_f32_2x3__avx512) {
  run_all("linear_id_f32_f32_2x3__avx512");
}
TEST(JitLinearId, linear_id_f32_f32_4x1__avx512) {
  run_all("linear_id_f32_f32_4x1__avx512");
}
TEST(JitLinearId, linear_id_q4_0_f32_4x1__avx2) {
  run_all("linear_id_q4_0_f32_4x1__avx2");
}
TEST(JitLinearId, linear_id_q4_0_f32_4x1__avx512vnni) {
  run_all("linear_id_q4_0_f32_4x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_0_f32_4x2__avx2) {
  run_all("linear_id_q4_0_f32_4x2__avx2");
}
TEST(JitLinearId, linear_id_q4_0_f32_4x4__avx512vnni) {
  run_all("linear_id_q4_0_f32_4x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_0x8_f32_4x1__avx2) {
  run_all("linear_id_q4_0x8_f32_4x1__avx2");
}
TEST(JitLinearId, linear_id_q4_0x8_f32_8x1__avx512vnni) {
  run_all("linear_id_q4_0x8_f32_8x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q8_0_f32_4x1__avx2) {
  run_all("linear_id_q8_0_f32_4x1__avx2");
}
TEST(JitLinearId, linear_id_q8_0_f32_4x1__avx512vnni) {
  run_all("linear_id_q8_0_f32_4x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q8_0_f32_4x2__avx2) {
  run_all("linear_id_q8_0_f32_4x2__avx2");
}
TEST(JitLinearId, linear_id_q8_0_f32_4x4__avx512vnni) {
  run_all("linear_id_q8_0_f32_4x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q8_0_f32_8x4__avx512vnni) {
  run_all("linear_id_q8_0_f32_8x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_Kx8_f32_16x8g__avx512vnni) {
  run_all("linear_id_q4_Kx8_f32_16x8g__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_Kx8_f32_16x1__avx512vnni) {
  run_all("linear_id_q4_Kx8_f32_16x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_Kx8_f32_8x8g__avx2) {
  run_all("linear_id_q4_Kx8_f32_8x8g__avx2");
}
TEST(JitLinearId, linear_id_q4_Kx8_f32_8x1__avx2) {
  run_all("linear_id_q4_Kx8_f32_8x1__avx2");
}
TEST(JitLinearId, linear_id_q6_K_f32_1x4__avx512vnni) {
  run_all("linear_id_q6_K_f32_1x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q6_K_f32_1x1__avx512vnni) {
  run_all("linear_id_q6_K_f32_1x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q6_K_f32_1x1__avx2) {
  run_all("linear_id_q6_K_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_q5_K_f32_1x4__avx512vnni) {
  run_all("linear_id_q5_K_f32_1x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_K_f32_1x1__avx512vnni) {
  run_all("linear_id_q5_K_f32_1x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_K_f32_1x1__avx2) {
  run_all("linear_id_q5_K_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_q3_K_f32_1x4__avx512vnni) {
  run_all("linear_id_q3_K_f32_1x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q3_K_f32_1x1__avx512vnni) {
  run_all("linear_id_q3_K_f32_1x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q3_K_f32_1x1__avx2) {
  run_all("linear_id_q3_K_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_q2_K_f32_1x4__avx512vnni) {
  run_all("linear_id_q2_K_f32_1x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q2_K_f32_1x1__avx512vnni) {
  run_all("linear_id_q2_K_f32_1x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q2_K_f32_1x1__avx2) {
  run_all("linear_id_q2_K_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_q4_K_f32_1x4__avx512vnni) {
  run_all("linear_id_q4_K_f32_1x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_K_f32_1x1__avx512vnni) {
  run_all("linear_id_q4_K_f32_1x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_K_f32_1x1__avx2) {
  run_all("linear_id_q4_K_f32_1x1__avx2");
}
TEST(JitLinearId, linear_id_q2_Kx8_f32_16x8g__avx512vnni) {
  run_all("linear_id_q2_Kx8_f32_16x8g__avx512vnni");
}
TEST(JitLinearId, linear_id_q2_Kx8_f32_16x1__avx512vnni) {
  run_all("linear_id_q2_Kx8_f32_16x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q2_Kx8_f32_8x8g__avx2) {
  run_all("linear_id_q2_Kx8_f32_8x8g__avx2");
}
TEST(JitLinearId, linear_id_q2_Kx8_f32_8x1__avx2) {
  run_all("linear_id_q2_Kx8_f32_8x1__avx2");
}
TEST(JitLinearId, linear_id_q4_1_f32_4x1__avx2) {
  run_all("linear_id_q4_1_f32_4x1__avx2");
}
TEST(JitLinearId, linear_id_q4_1_f32_4x2__avx2) {
  run_all("linear_id_q4_1_f32_4x2__avx2");
}
TEST(JitLinearId, linear_id_q4_1_f32_4x1__avx512vnni) {
  run_all("linear_id_q4_1_f32_4x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_1_f32_4x4__avx512vnni) {
  run_all("linear_id_q4_1_f32_4x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_0_f32_4x1__avx2) {
  run_all("linear_id_q5_0_f32_4x1__avx2");
}
TEST(JitLinearId, linear_id_q5_0_f32_4x2__avx2) {
  run_all("linear_id_q5_0_f32_4x2__avx2");
}
TEST(JitLinearId, linear_id_q5_0_f32_4x1__avx512vnni) {
  run_all("linear_id_q5_0_f32_4x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_0_f32_4x4__avx512vnni) {
  run_all("linear_id_q5_0_f32_4x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_1_f32_4x1__avx2) {
  run_all("linear_id_q5_1_f32_4x1__avx2");
}
TEST(JitLinearId, linear_id_q5_1_f32_4x2__avx2) {
  run_all("linear_id_q5_1_f32_4x2__avx2");
}
TEST(JitLinearId, linear_id_q5_1_f32_4x1__avx512vnni) {
  run_all("linear_id_q5_1_f32_4x1__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_1_f32_4x4__avx512vnni) {
  run_all("linear_id_q5_1_f32_4x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q4_1_f32_8x4__avx512vnni) {
  run_all("linear_id_q4_1_f32_8x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_0_f32_8x4__avx512vnni) {
  run_all("linear_id_q5_0_f32_8x4__avx512vnni");
}
TEST(JitLinearId, linear_id_q5_1_f32_8x4__avx512vnni) {
  run_all("linear_id_q5_1_f32_8x4__avx512vnni");
}

TEST(JitLinearId, EveryGeneratedProviderHasATest) {
  const std::vector<std::string> tested = {"linear_id_bf16_f32_4x1__avx512bf16",
                                           "linear_id_bf16_f32_4x1__avx512",
                                           "linear_id_bf16_f32_2x1__avx2",
                                           "linear_id_f16_f32_1x1__avx2",
                                           "linear_id_f16_f32_2x3__avx512",
                                           "linear_id_f16_f32_4x1__avx512",
                                           "linear_id_f32_f32_1x1__avx2",
                                           "linear_id_f32_f32_2x3__avx512",
                                           "linear_id_f32_f32_4x1__avx512",
                                           "linear_id_q4_0_f32_4x1__avx2",
                                           "linear_id_q4_0_f32_4x1__avx512vnni",
                                           "linear_id_q4_0_f32_4x2__avx2",
                                           "linear_id_q4_0_f32_4x4__avx512vnni",
                                           "linear_id_q4_0x8_f32_4x1__avx2",
                                           "linear_id_q4_0x8_f32_8x1__avx512vnni",
                                           "linear_id_q8_0_f32_4x1__avx2",
                                           "linear_id_q8_0_f32_4x1__avx512vnni",
                                           "linear_id_q8_0_f32_4x2__avx2",
                                           "linear_id_q8_0_f32_4x4__avx512vnni",
                                           "linear_id_q8_0_f32_8x4__avx512vnni",
                                           "linear_id_q4_Kx8_f32_16x8g__avx512vnni",
                                           "linear_id_q4_Kx8_f32_16x1__avx512vnni",
                                           "linear_id_q4_Kx8_f32_8x8g__avx2",
                                           "linear_id_q4_Kx8_f32_8x1__avx2",
                                           "linear_id_q6_K_f32_1x4__avx512vnni",
                                           "linear_id_q6_K_f32_1x1__avx512vnni",
                                           "linear_id_q6_K_f32_1x1__avx2",
                                           "linear_id_q5_K_f32_1x4__avx512vnni",
                                           "linear_id_q5_K_f32_1x1__avx512vnni",
                                           "linear_id_q5_K_f32_1x1__avx2",
                                           "linear_id_q3_K_f32_1x4__avx512vnni",
                                           "linear_id_q3_K_f32_1x1__avx512vnni",
                                           "linear_id_q3_K_f32_1x1__avx2",
                                           "linear_id_q2_K_f32_1x4__avx512vnni",
                                           "linear_id_q2_K_f32_1x1__avx512vnni",
                                           "linear_id_q2_K_f32_1x1__avx2",
                                           "linear_id_q4_K_f32_1x4__avx512vnni",
                                           "linear_id_q4_K_f32_1x1__avx512vnni",
                                           "linear_id_q4_K_f32_1x1__avx2",
                                           "linear_id_q2_Kx8_f32_16x8g__avx512vnni",
                                           "linear_id_q2_Kx8_f32_16x1__avx512vnni",
                                           "linear_id_q2_Kx8_f32_8x8g__avx2",
                                           "linear_id_q2_Kx8_f32_8x1__avx2",
                                           "linear_id_q4_1_f32_4x1__avx2",
                                           "linear_id_q4_1_f32_4x2__avx2",
                                           "linear_id_q4_1_f32_4x1__avx512vnni",
                                           "linear_id_q4_1_f32_4x4__avx512vnni",
                                           "linear_id_q5_0_f32_4x1__avx2",
                                           "linear_id_q5_0_f32_4x2__avx2",
                                           "linear_id_q5_0_f32_4x1__avx512vnni",
                                           "linear_id_q5_0_f32_4x4__avx512vnni",
                                           "linear_id_q5_1_f32_4x1__avx2",
                                           "linear_id_q5_1_f32_4x2__avx2",
                                           "linear_id_q5_1_f32_4x1__avx512vnni",
                                           "linear_id_q5_1_f32_4x4__avx512vnni",
                                           "linear_id_q4_1_f32_8x4__avx512vnni",
                                           "linear_id_q5_0_f32_8x4__avx512vnni",
                                           "linear_id_q5_1_f32_8x4__avx512vnni"};
  std::vector<std::string> ids;
  for (const KernelMap& m : real_registry().maps())
    if (m.op == "linear_id" && !m.impl.generator.empty()) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> want = tested;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ids, want);
}

}  // namespace
}  // namespace cke::test
