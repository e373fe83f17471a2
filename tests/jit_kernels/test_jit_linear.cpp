// Each generated linear kernel against the reference kernel of its contract (the contract
// says `comparison: bit_exact`): every output bit-identical, on random data over a sweep
// of shapes (K block multiples, N around the tile sizes and the q4_0 N % 8 rule, T = 1..9
// across the gemm/gemv split), row splits, and edge data (zeros, huge values, NaN/Inf,
// subnormals, extreme quants and scales). The reference is the independent oracle: it is
// scalar code written from ggml's arithmetic, sharing nothing with the generators.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "jit_test_util.h"

namespace cke::test {
namespace {

struct Loaded {
  std::unique_ptr<jit::KernelModule> module;
  jit::LinearFn fn = nullptr;
  jit::LinearFn ref = nullptr;
  DType wtype = DType::F32;
};

// Generates the kernel, or explains why the test cannot run here.
Loaded load(const std::string& id, std::string* skip) {
  Loaded l;
  const jit::Generator* g = jit::find_generator(id);
  if (!g) {
    ADD_FAILURE() << "no generator " << id;
    return l;
  }
  if (std::string m = missing_isa(*g); !m.empty()) {
    *skip = "host lacks " + m + " needed by " + id;
    return l;
  }
  std::string err;
  l.module = g->generate({}, &err);
  if (!l.module) {
    ADD_FAILURE() << err;
    return l;
  }
  l.fn = l.module->entry_as<jit::LinearFn>();
  const JitCase& c = jit_case(id);
  l.ref = c.reference;
  l.wtype = c.wtype;
  return l;
}

std::vector<int64_t> ks(DType t) {
  if (t == DType::F32) return {1, 7, 8, 15, 16, 63, 64, 65, 100, 128, 172, 200, 256, 1031};
  return {32, 64, 96, 256, 1056};
}

// Random data, every (K, N, T) of the sweep, all rows.
void sweep(const Loaded& l) {
  std::mt19937 rng(1234);
  const std::vector<int64_t> ns = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 24, 64, 67};
  for (int64_t K : ks(l.wtype))
    for (int64_t N : ns) {
      const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
      for (int64_t T = 1; T <= 9; ++T) {
        const auto x = make_acts(K, T, ActStyle::Random, rng);
        const std::string d = compare_kernels(l.fn, l.ref, w, x, K, N, T, 0, N);
        ASSERT_EQ(d, "");
      }
    }
}

// A large K (many blocks per row) and T past one 64-token chunk of the driver.
void big_shapes(const Loaded& l) {
  std::mt19937 rng(99);
  const int64_t K = l.wtype == DType::F32 ? 4133 : 4128;
  for (auto [N, T] : {std::pair<int64_t, int64_t>{64, 1}, {8, 70}, {13, 67}}) {
    const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
    const auto x = make_acts(K, T, ActStyle::Random, rng);
    ASSERT_EQ(compare_kernels(l.fn, l.ref, w, x, K, N, T, 0, N), "");
  }
}

// Row ranges [n0, n1): the same bits as the reference for that range (which equal the
// full call's), nothing written outside.
void row_splits(const Loaded& l) {
  std::mt19937 rng(5);
  const int64_t K = l.wtype == DType::F32 ? 200 : 256;
  for (int64_t N : {9, 16, 64, 67}) {
    const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
    for (int64_t T : {1, 4, 6}) {
      const auto x = make_acts(K, T, ActStyle::Random, rng);
      for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, 1},
                            {1, 2},
                            {2, 5},
                            {3, 8},
                            {5, 9},
                            {7, N},
                            {N - 1, N},
                            {0, N - 3},
                            {4, 4}})
        ASSERT_EQ(compare_kernels(l.fn, l.ref, w, x, K, N, T, n0, n1), "");
    }
  }
}

void edge_data(const Loaded& l) {
  std::mt19937 rng(77);
  const WeightStyle wstyles[] = {WeightStyle::Random, WeightStyle::Extreme, WeightStyle::Zero,
                                 WeightStyle::SpecialScale};
  const ActStyle astyles[] = {ActStyle::Random, ActStyle::Zero, ActStyle::Large, ActStyle::NaNs,
                              ActStyle::Subnormal};
  const int64_t K = l.wtype == DType::F32 ? 137 : 320;
  for (WeightStyle ws : wstyles)
    for (ActStyle as : astyles)
      for (int64_t N : {7, 16}) {
        const auto w = make_weights(l.wtype, K, N, ws, rng);
        for (int64_t T : {1, 5}) {
          const auto x = make_acts(K, T, as, rng);
          ASSERT_EQ(compare_kernels(l.fn, l.ref, w, x, K, N, T, 0, N), "")
              << "weights style " << int(ws) << ", activations style " << int(as);
        }
      }
}

// Calls that break the contract compute nothing (as the reference), never crash.
void bad_calls(const Loaded& l) {
  const int64_t K = l.wtype == DType::F32 ? 64 : 64;
  std::mt19937 rng(3);
  const auto w = make_weights(l.wtype, K, 4, WeightStyle::Random, rng);
  const auto x = make_acts(K, 2, ActStyle::Random, rng);
  std::vector<float> y(8, 3.0f);
  l.fn(nullptr, w.data(), y.data(), K, 4, 2, 0, 4);
  l.fn(x.data(), w.data(), y.data(), K, 4, 2, 3, 2);                              // n0 > n1
  l.fn(x.data(), w.data(), y.data(), K, 4, 2, 0, 5);                              // n1 > N
  l.fn(x.data(), w.data(), y.data(), -K, 4, 2, 0, 4);                             // K < 0
  l.fn(x.data(), w.data(), y.data(), K, 4, 0, 0, 4);                              // T = 0
  if (l.wtype != DType::F32) l.fn(x.data(), w.data(), y.data(), 33, 4, 2, 0, 4);  // K % 32
  for (float v : y) EXPECT_EQ(v, 3.0f);
}

// Two threads on disjoint row ranges of one call (the plan's row split), concurrently.
void threads(const Loaded& l) {
  std::mt19937 rng(11);
  const int64_t K = l.wtype == DType::F32 ? 300 : 512, N = 40, T = 7;
  const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
  const auto x = make_acts(K, T, ActStyle::Random, rng);
  std::vector<float> yr(N * T), yj(N * T);
  l.ref(x.data(), w.data(), yr.data(), K, N, T, 0, N);
  std::thread a([&] { l.fn(x.data(), w.data(), yj.data(), K, N, T, 0, 16); });
  std::thread b([&] { l.fn(x.data(), w.data(), yj.data(), K, N, T, 16, N); });
  a.join();
  b.join();
  EXPECT_EQ(std::memcmp(yr.data(), yj.data(), yr.size() * sizeof(float)), 0);
}

// Weights, activations and outputs each end right before an inaccessible page: the
// generated loops read and write nothing past the buffers the ABI gives them.
void guard_pages(const Loaded& l) {
  std::mt19937 rng(21);
  for (int64_t K :
       l.wtype == DType::F32 ? std::vector<int64_t>{64, 77, 129} : std::vector<int64_t>{32, 96}) {
    for (auto [N, T] : {std::pair<int64_t, int64_t>{7, 5}, {8, 5}, {16, 4}, {3, 1}}) {
      const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
      const auto x = make_acts(K, T, ActStyle::Random, rng);
      std::vector<float> yr(size_t(N * T));
      l.ref(x.data(), w.data(), yr.data(), K, N, T, 0, N);
      GuardedBuffer gw(w.data(), w.size()), gx(x.data(), x.size() * sizeof(float));
      std::vector<float> zeros(size_t(N * T), 0.0f);
      GuardedBuffer gy(zeros.data(), zeros.size() * sizeof(float));
      l.fn(static_cast<const float*>(gx.data()), gw.data(), static_cast<float*>(gy.data()), K, N, T,
           0, N);
      EXPECT_EQ(std::memcmp(gy.data(), yr.data(), yr.size() * sizeof(float)), 0)
          << "K=" << K << " N=" << N << " T=" << T;
    }
  }
}

void run_all(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  {
    SCOPED_TRACE("random sweep");
    sweep(l);
  }
  {
    SCOPED_TRACE("big shapes");
    big_shapes(l);
  }
  {
    SCOPED_TRACE("row splits");
    row_splits(l);
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
  {
    SCOPED_TRACE("threads");
    threads(l);
  }
}

}  // namespace

TEST(JitLinear, linear_q8_0_f32__avx512vnni) {
  run_all("linear_q8_0_f32__avx512vnni");
}
TEST(JitLinear, linear_q4_0_f32__avx512vnni) {
  run_all("linear_q4_0_f32__avx512vnni");
}
TEST(JitLinear, linear_f32_f32__avx512) {
  run_all("linear_f32_f32__avx512");
}
TEST(JitLinear, linear_q8_0_f32__avx2) {
  run_all("linear_q8_0_f32__avx2");
}
TEST(JitLinear, linear_q4_0_f32__avx2) {
  run_all("linear_q4_0_f32__avx2");
}

}  // namespace cke::test
