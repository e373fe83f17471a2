// Each generated linear provider of kernel_maps/ against the reference kernel of its
// contract (`comparison: bit_exact`), and its emitted C against its machine code (memcmp):
// every output bit-identical, on random data over a sweep of shapes (K block multiples, N
// around the tile sizes, T = 1..9 across token groups; only shapes the map's predicates
// admit, T = 1 for decode providers), row splits, and edge data (zeros, huge values,
// NaN/Inf, subnormals, extreme quants and scales). The reference is the independent oracle:
// scalar code written from ggml's arithmetic, sharing nothing with the generators.
// The providers and their parameters come from the maps (tests/common/generated_linear.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "jit/kir/kir_c.h"
#include "jit_test_util.h"
#include "resolver/host_caps.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

struct Loaded {
  const KernelMap* map = nullptr;
  std::unique_ptr<jit::KernelModule> module;
  std::unique_ptr<CompiledC> c;
  jit::LinearFn fn = nullptr, cfn = nullptr, ref = nullptr;
  DType wtype = DType::F32;
  bool decode_only = false;
  std::optional<GeneratedLinear> g;
  bool admits(int64_t K, int64_t N) const { return map->admits({{"K", K}, {"N", N}}); }
  // f32 activations as the kernels read them (the contract's conversion).
  std::vector<uint8_t> act(const std::vector<float>& x, int64_t K, int64_t T) const {
    return g->convert(x, K, T);
  }
  int64_t max_t(int64_t t) const { return decode_only ? 1 : t; }
  // The weights as the provider reads them (a repacked copy where its map says so).
  std::vector<uint8_t> kw(const std::vector<uint8_t>& w, int64_t K, int64_t N) const {
    return g->kernel_weights(w, K, N);
  }
};

// compare_kernels with the weights in the provider's layout.
std::string compare(const Loaded& l, const std::vector<uint8_t>& w, const std::vector<uint8_t>& x,
                    int64_t K, int64_t N, int64_t T, int64_t n0, int64_t n1) {
  const std::vector<uint8_t> kw = l.kw(w, K, N);
  return compare_kernels(l.fn, l.ref, w, x, K, N, T, n0, n1, l.cfn, &kw);
}

// Generates the kernel (machine code and C), or explains why the test cannot run here; with
// the parameters of a plan that batches decode tokens, or (single_sequence) of one that
// never does (jit::plan_params).
Loaded load(const std::string& id, std::string* skip, bool single_sequence = false) {
  Loaded l;
  const std::optional<GeneratedLinear> g = find_generated_linear(id);
  if (!g) {
    ADD_FAILURE() << "no generated provider " << id << " in kernel_maps/";
    return l;
  }
  l.map = g->map;
  const jit::Generator* gen = jit::find_generator(l.map->impl.generator);
  if (!gen) {
    ADD_FAILURE() << "no generator " << l.map->impl.generator;
    return l;
  }
  if (std::string m = missing_isa(*gen); !m.empty()) {
    *skip = "host lacks " + m + " needed by " + id;
    return l;
  }
  std::string err, c;
  // The host's decode prefetch choice, as its plans make the kernel (same bits either way:
  // test_decode_prefetch.cpp).
  const jit::GeneratorParams params =
      jit::plan_params(gen->name, l.map->impl.generator_params, l.map->selection.decode_batch,
                       !single_sequence, HostCaps::probe().decode_stream_prefetch);
  l.module = jit::generate_kernel(gen->name, params, id, &err);
  if (!l.module) {
    ADD_FAILURE() << err;
    return l;
  }
  l.fn = l.module->entry_as<jit::LinearFn>();
  if (!jit::kernel_c_source(gen->name, params, id, &c, &err)) {
    ADD_FAILURE() << err;
    return l;
  }
  std::vector<std::string> isa;
  for (Feature f : l.map->isa) isa.emplace_back(feature_name(f));
  l.c = std::make_unique<CompiledC>(c, id, jit::kir::c_isa_flags(isa, nullptr));
  if (!l.c->error().empty()) {
    ADD_FAILURE() << l.c->error();
    return l;
  }
  l.cfn = l.c->fn();
  l.ref = g->reference;
  l.wtype = g->wtype;
  l.decode_only = g->decode_only;
  l.g = g;
  return l;
}

// Float weights take any K.
bool float_w(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

std::vector<int64_t> ks(DType t) {
  if (float_w(t)) return {1, 7, 8, 15, 16, 48, 63, 64, 65, 100, 128, 172, 200, 256, 1024, 1031};
  if (dtype_info(t).block_size == 256) return {256, 512, 768, 1280};
  return {32, 64, 96, 256, 1056};
}

// A float K the provider's predicates admit: K itself, or (tinyBLAS tiles, K % 16 == 0)
// K rounded down to a multiple of 32.
int64_t fit_k(const Loaded& l, int64_t K) {
  return l.admits(K, 16) ? K : K - K % 32;
}

// K-quants need whole super-blocks: the shapes below in units of 256.
bool k_quant(DType t) {
  return dtype_info(t).block_size == 256;
}

// Random data, every (K, N, T) of the sweep, all rows.
void sweep(const Loaded& l) {
  std::mt19937 rng(1234);
  const std::vector<int64_t> ns = {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 24, 64, 67, 72};
  for (int64_t K : ks(l.wtype))
    for (int64_t N : ns) {
      if (!l.admits(K, N)) continue;
      const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
      for (int64_t T = 1; T <= l.max_t(9); ++T) {
        const auto x = make_acts(K, T, ActStyle::Random, rng);
        const std::string d = compare(l, w, l.act(x, K, T), K, N, T, 0, N);
        ASSERT_EQ(d, "");
      }
    }
}

// A large K (many blocks per row) and T past one 64-token chunk of the driver.
void big_shapes(const Loaded& l) {
  std::mt19937 rng(99);
  const int64_t K = float_w(l.wtype) ? fit_k(l, 4133) : k_quant(l.wtype) ? 4352 : 4128;
  for (auto [N, T] : {std::pair<int64_t, int64_t>{64, 1}, {8, 70}, {13, 67}, {24, 133}}) {
    if (!l.admits(K, N)) continue;
    T = l.max_t(T);
    const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
    const auto x = make_acts(K, T, ActStyle::Random, rng);
    ASSERT_EQ(compare(l, w, l.act(x, K, T), K, N, T, 0, N), "");
    // A row range starting inside a 16-row group, over every chunk of token groups.
    if (N > 6) {
      ASSERT_EQ(compare(l, w, l.act(x, K, T), K, N, T, 5, N - 1), "");
    }
  }
  // A K past the 65536-element scratch limit the kernels once had: no size limit now.
  const int64_t big_k = float_w(l.wtype) ? fit_k(l, 70001) : k_quant(l.wtype) ? 70144 : 70016;
  const int64_t big_n = l.admits(big_k, 16) ? 16 : 9, big_t = l.max_t(5);
  if (!l.admits(big_k, big_n)) return;  // a provider with a K limit (its frame buffer)
  const auto w = make_weights(l.wtype, big_k, big_n, WeightStyle::Random, rng);
  const auto x = make_acts(big_k, big_t, ActStyle::Random, rng);
  ASSERT_EQ(compare(l, w, l.act(x, big_k, big_t), big_k, big_n, big_t, 0, big_n), "");
}

// Row ranges [n0, n1): the same bits as the reference for that range (which equal the
// full call's), nothing written outside.
void row_splits(const Loaded& l) {
  std::mt19937 rng(5);
  const int64_t K = float_w(l.wtype) ? fit_k(l, 200) : 256;
  for (int64_t N : {9, 16, 64, 67}) {
    if (!l.admits(K, N)) continue;
    const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
    for (int64_t T : {1, 4, 6, 21}) {
      if (T > l.max_t(T)) continue;
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
        ASSERT_EQ(compare(l, w, l.act(x, K, T), K, N, T, n0, n1), "");
    }
  }
}

void edge_data(const Loaded& l) {
  std::mt19937 rng(77);
  const WeightStyle wstyles[] = {WeightStyle::Random, WeightStyle::Extreme, WeightStyle::Zero,
                                 WeightStyle::SpecialScale};
  const ActStyle astyles[] = {ActStyle::Random, ActStyle::Zero,      ActStyle::Large,
                              ActStyle::NaNs,   ActStyle::Subnormal, ActStyle::Tiny};
  const int64_t K = float_w(l.wtype) ? fit_k(l, 137) : k_quant(l.wtype) ? 512 : 320;
  for (WeightStyle ws : wstyles)
    for (ActStyle as : astyles)
      for (int64_t N : {7, 16}) {
        if (!l.admits(K, N)) continue;
        const auto w = make_weights(l.wtype, K, N, ws, rng);
        for (int64_t T : {1, 5}) {
          if (T > l.max_t(T)) continue;
          const auto x = make_acts(K, T, as, rng);
          ASSERT_EQ(compare(l, w, l.act(x, K, T), K, N, T, 0, N), "")
              << "weights style " << int(ws) << ", activations style " << int(as);
        }
      }
}

// BF16 weights: sums that land just below FLT_MIN, where vdpbf16ps's flush to zero decides
// (tininess after rounding: kernels/ref/linear_lanes.h fma_ftz), and lane sums whose
// reduction is subnormal, which ggml's reduction (outside vdpbf16ps) keeps. Sparse values
// from a palette around 2^-63 and 2^-75 make products of 2^-126 and of a few 2^-150.
void flush_band(const Loaded& l) {
  if (l.wtype != DType::BF16) return;
  std::mt19937 rng(91);
  const float palette[] = {0x1p-63f, 0x1.8p-63f, 0x1p-75f, 0x1p-76f, 0x1.8p-76f, 0x1p-64f};
  auto pick = [&](int density) {
    if (int(rng() % 8) >= density) return 0.0f;
    const float v = palette[rng() % std::size(palette)];
    return rng() & 1 ? -v : v;
  };
  for (int64_t K : {fit_k(l, 128), fit_k(l, 197), fit_k(l, 256)}) {
    const int64_t N = l.admits(K, 16) ? 16 : 8;
    if (!l.admits(K, N)) continue;
    for (int round = 0; round < 40; ++round) {
      std::vector<uint8_t> w(size_t(K * N) * 2);
      for (size_t i = 0; i < size_t(K * N); ++i) {
        const float v = pick(3);
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint16_t h = uint16_t(u >> 16);  // exact: the palette is bf16
        std::memcpy(&w[2 * i], &h, 2);
      }
      for (int64_t T : {1, 3}) {
        if (T > l.max_t(T)) continue;
        std::vector<float> x(size_t(K * T));
        for (float& v : x) v = pick(4);
        ASSERT_EQ(compare(l, w, l.act(x, K, T), K, N, T, 0, N), "")
            << "K=" << K << " T=" << T << " round " << round;
      }
    }
  }
}

// Calls that break the contract's dims compute nothing (as the reference), never crash.
// (Null pointers are not checked by generated code: the plan binds arena and weights.)
void bad_calls(const Loaded& l) {
  const int64_t K = 64;
  std::mt19937 rng(3);
  const auto w = make_weights(l.wtype, K, 8, WeightStyle::Random, rng);
  const auto x = l.act(make_acts(K, 2, ActStyle::Random, rng), K, 2);
  for (jit::LinearFn fn : {l.fn, l.cfn}) {
    std::vector<float> y(16, 3.0f);
    fn(x.data(), w.data(), y.data(), K, 8, 2, 3, 2);                         // n0 > n1
    fn(x.data(), w.data(), y.data(), K, 8, 2, 0, 9);                         // n1 > N
    fn(x.data(), w.data(), y.data(), K, 8, 2, -1, 8);                        // n0 < 0
    fn(x.data(), w.data(), y.data(), -K, 8, 2, 0, 8);                        // K < 0
    fn(x.data(), w.data(), y.data(), K, 8, 0, 0, 8);                         // T = 0
    if (!l.admits(33, 8)) fn(x.data(), w.data(), y.data(), 33, 8, 2, 0, 8);  // K % 32 (16)
    for (float v : y) EXPECT_EQ(v, 3.0f);
  }
}

// Two threads on disjoint row ranges of one call (the plan's row split), concurrently.
void threads(const Loaded& l) {
  std::mt19937 rng(11);
  const int64_t K = float_w(l.wtype) ? fit_k(l, 300) : 512, T = l.max_t(7);
  const int64_t N = l.admits(K, 40) ? 40 : 43;
  const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
  const auto x = l.act(make_acts(K, T, ActStyle::Random, rng), K, T);
  std::vector<float> yr(N * T), yj(N * T);
  l.ref(x.data(), w.data(), yr.data(), K, N, T, 0, N);
  const auto kw = l.kw(w, K, N);
  std::thread a([&] { l.fn(x.data(), kw.data(), yj.data(), K, N, T, 0, 16); });
  std::thread b([&] { l.fn(x.data(), kw.data(), yj.data(), K, N, T, 16, N); });
  a.join();
  b.join();
  EXPECT_EQ(std::memcmp(yr.data(), yj.data(), yr.size() * sizeof(float)), 0);
}

// Weights, activations and outputs each end right before an inaccessible page: the
// generated loops read and write nothing past the buffers the ABI gives them.
void guard_pages(const Loaded& l) {
  std::mt19937 rng(21);
  for (int64_t K : float_w(l.wtype)   ? std::vector<int64_t>{64, 77, 129}
                   : k_quant(l.wtype) ? std::vector<int64_t>{256, 768}
                                      : std::vector<int64_t>{32, 96}) {
    for (auto [N, T] : {std::pair<int64_t, int64_t>{7, 5}, {8, 5}, {16, 4}, {3, 1}}) {
      if (!l.admits(K, N)) continue;
      T = l.max_t(T);
      const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
      const auto x = l.act(make_acts(K, T, ActStyle::Random, rng), K, T);
      std::vector<float> yr(size_t(N * T));
      l.ref(x.data(), w.data(), yr.data(), K, N, T, 0, N);
      const auto kw = l.kw(w, K, N);
      GuardedBuffer gw(kw.data(), kw.size()), gx(x.data(), x.size());
      std::vector<float> zeros(size_t(N * T), 0.0f);
      GuardedBuffer gy(zeros.data(), zeros.size() * sizeof(float));
      dirty_stack(uint8_t(K + N + T));
      l.fn(gx.data(), gw.data(), static_cast<float*>(gy.data()), K, N, T, 0, N);
      EXPECT_EQ(std::memcmp(gy.data(), yr.data(), yr.size() * sizeof(float)), 0)
          << "K=" << K << " N=" << N << " T=" << T;
      std::memcpy(gy.data(), zeros.data(), zeros.size() * sizeof(float));
      dirty_stack(uint8_t(K + N + T));
      l.cfn(gx.data(), gw.data(), static_cast<float*>(gy.data()), K, N, T, 0, N);
      EXPECT_EQ(std::memcmp(gy.data(), yr.data(), yr.size() * sizeof(float)), 0)
          << "emitted C: K=" << K << " N=" << N << " T=" << T;
    }
  }
}

// The reference called once per token (T = 1): what a batch of decode tokens must give.
struct PerTokenRef {
  static inline jit::LinearFn ref = nullptr;
  static inline size_t act_row = 0;  // bytes of one converted activation row
  static void call(const void* x, const void* w, float* y, int64_t K, int64_t N, int64_t T,
                   int64_t n0, int64_t n1) {
    for (int64_t t = 0; t < T; ++t)
      ref(static_cast<const uint8_t*>(x) + size_t(t) * act_row, w, y + t * N, K, N, 1, n0, n1);
  }
};

// selection.decode_batch: a call with T tokens of different sequences computes each token
// as a decode call of that token alone. Each token is converted alone (the batch plan runs
// the conversion per token when its contract depends on T), and the reference runs per
// token; NaN rows give activations of -128, where the repacked gemm's and gemv's bits differ.
// The first difference, or "".
std::string decode_batch(const Loaded& l) {
  std::mt19937 rng(31);
  const int64_t K = float_w(l.wtype) ? fit_k(l, 200) : k_quant(l.wtype) ? 512 : 256;
  for (int64_t N : {16, 40})
    for (ActStyle as : {ActStyle::Random, ActStyle::NaNs, ActStyle::Large}) {
      if (!l.admits(K, N)) continue;
      const auto w = make_weights(l.wtype, K, N, WeightStyle::Random, rng);
      for (int64_t T : {2, 3, 4, 5, 7, 8, 9, 12, 17}) {
        const auto x = make_acts(K, T, as, rng);
        std::vector<uint8_t> xa;
        for (int64_t t = 0; t < T; ++t) {
          const std::vector<float> row(x.begin() + t * K, x.begin() + (t + 1) * K);
          const std::vector<uint8_t> a = l.act(row, K, 1);
          PerTokenRef::act_row = a.size();
          xa.insert(xa.end(), a.begin(), a.end());
        }
        PerTokenRef::ref = l.ref;
        const std::vector<uint8_t> kw = l.kw(w, K, N);
        for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, N}, {5, N - 1}}) {
          const std::string d =
              compare_kernels(l.fn, &PerTokenRef::call, w, xa, K, N, T, n0, n1, l.cfn, &kw);
          if (!d.empty()) return d + " (activations style " + std::to_string(int(as)) + ")";
        }
      }
    }
  return "";
}

void run_all(const std::string& id) {
  std::string skip;
  const Loaded l = load(id, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_NE(l.fn, nullptr);
  ASSERT_NE(l.cfn, nullptr);
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
    SCOPED_TRACE("flush band");
    flush_band(l);
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
  if (l.map->selection.decode_batch) {
    SCOPED_TRACE("decode batch");
    ASSERT_EQ(decode_batch(l), "");
  }
  // The kernel a one-sequence plan generates (decode_group 1 where the generator takes it):
  // the same bits, for any T too.
  if (l.map->selection.decode_batch && jit::find_generator(l.map->impl.generator)->decode_group) {
    SCOPED_TRACE("one-sequence plan (decode_group 1)");
    const Loaded l1 = load(id, &skip, true);
    ASSERT_NE(l1.fn, nullptr);
    EXPECT_LT(l1.module->code_size(), l.module->code_size());
    sweep(l1);
    ASSERT_EQ(decode_batch(l1), "");
  }
}

}  // namespace

// One TEST per provider id (the name cke-audit looks for); EveryGeneratedProviderHasATest
// keeps the list and kernel_maps/ equal.
TEST(JitLinear, linear_q8_0_f32_4x4__avx512vnni) {
  run_all("linear_q8_0_f32_4x4__avx512vnni");
}
TEST(JitLinear, linear_q8_0_f32_8x4__avx512vnni) {
  run_all("linear_q8_0_f32_8x4__avx512vnni");
}
TEST(JitLinear, linear_q8_0_f32_4x1__avx512vnni) {
  run_all("linear_q8_0_f32_4x1__avx512vnni");
}
TEST(JitLinear, linear_q4_0_f32_4x4__avx512vnni) {
  run_all("linear_q4_0_f32_4x4__avx512vnni");
}
TEST(JitLinear, linear_q4_0_f32_4x1__avx512vnni) {
  run_all("linear_q4_0_f32_4x1__avx512vnni");
}
TEST(JitLinear, linear_q4_0x8_f32_16x8__avx512vnni) {
  run_all("linear_q4_0x8_f32_16x8__avx512vnni");
}
TEST(JitLinear, linear_q4_0x8_f32_8x4__avx512vnni) {
  run_all("linear_q4_0x8_f32_8x4__avx512vnni");
}
TEST(JitLinear, linear_q4_0x8_f32_8x1__avx512vnni) {
  run_all("linear_q4_0x8_f32_8x1__avx512vnni");
}
TEST(JitLinear, linear_f32_f32_2x3__avx512) {
  run_all("linear_f32_f32_2x3__avx512");
}
TEST(JitLinear, linear_f32_f32_4x1__avx512) {
  run_all("linear_f32_f32_4x1__avx512");
}
TEST(JitLinear, linear_q4_Kx8_f32_16x8__avx512vnni) {
  run_all("linear_q4_Kx8_f32_16x8__avx512vnni");
}
TEST(JitLinear, linear_q4_Kx8_f32_16x1__avx512vnni) {
  run_all("linear_q4_Kx8_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q4_Kx8_f32_8x8__avx2) {
  run_all("linear_q4_Kx8_f32_8x8__avx2");
}
TEST(JitLinear, linear_q4_Kx8_f32_8x1__avx2) {
  run_all("linear_q4_Kx8_f32_8x1__avx2");
}
TEST(JitLinear, linear_q6_K_f32_1x8__avx512vnni) {
  run_all("linear_q6_K_f32_1x8__avx512vnni");
}
TEST(JitLinear, linear_q6_K_f32_1x1__avx512vnni) {
  run_all("linear_q6_K_f32_1x1__avx512vnni");
}
TEST(JitLinear, linear_q6_K_f32_1x1__avx2) {
  run_all("linear_q6_K_f32_1x1__avx2");
}
TEST(JitLinear, linear_q8_0_f32_4x2__avx2) {
  run_all("linear_q8_0_f32_4x2__avx2");
}
TEST(JitLinear, linear_q8_0_f32_4x1__avx2) {
  run_all("linear_q8_0_f32_4x1__avx2");
}
TEST(JitLinear, linear_q4_0_f32_4x2__avx2) {
  run_all("linear_q4_0_f32_4x2__avx2");
}
TEST(JitLinear, linear_q4_0_f32_4x1__avx2) {
  run_all("linear_q4_0_f32_4x1__avx2");
}
TEST(JitLinear, linear_q4_0x8_f32_4x4__avx2) {
  run_all("linear_q4_0x8_f32_4x4__avx2");
}
TEST(JitLinear, linear_q4_0x8_f32_4x1__avx2) {
  run_all("linear_q4_0x8_f32_4x1__avx2");
}
TEST(JitLinear, linear_f16_f32_2x3__avx512) {
  run_all("linear_f16_f32_2x3__avx512");
}
TEST(JitLinear, linear_f16_f32_4x1__avx512) {
  run_all("linear_f16_f32_4x1__avx512");
}
TEST(JitLinear, linear_f16_f32_1x1__avx512) {
  run_all("linear_f16_f32_1x1__avx512");
}
TEST(JitLinear, linear_f16_f32_1x1__avx2) {
  run_all("linear_f16_f32_1x1__avx2");
}
TEST(JitLinear, linear_f16_tinyblas_f32_6x4__avx512) {
  run_all("linear_f16_tinyblas_f32_6x4__avx512");
}
TEST(JitLinear, linear_f16_tinyblas_f32_3x2__avx2) {
  run_all("linear_f16_tinyblas_f32_3x2__avx2");
}
TEST(JitLinear, linear_f16_tinyblas_wide_f32_4x3__avx2) {
  run_all("linear_f16_tinyblas_wide_f32_4x3__avx2");
}
TEST(JitLinear, linear_f32_tinyblas_f32_4x6__avx512) {
  run_all("linear_f32_tinyblas_f32_4x6__avx512");
}
TEST(JitLinear, linear_f32_tinyblas_f32_3x2__avx2) {
  run_all("linear_f32_tinyblas_f32_3x2__avx2");
}
TEST(JitLinear, linear_bf16_f32_4x1__avx512bf16) {
  run_all("linear_bf16_f32_4x1__avx512bf16");
}
TEST(JitLinear, linear_bf16_f32_1x1__avx512bf16) {
  run_all("linear_bf16_f32_1x1__avx512bf16");
}
TEST(JitLinear, linear_bf16_tinyblas_f32_6x4__avx512bf16) {
  run_all("linear_bf16_tinyblas_f32_6x4__avx512bf16");
}
TEST(JitLinear, linear_bf16_f32_4x1__avx512) {
  run_all("linear_bf16_f32_4x1__avx512");
}
TEST(JitLinear, linear_bf16_tinyblas_f32_4x3__avx512) {
  run_all("linear_bf16_tinyblas_f32_4x3__avx512");
}
TEST(JitLinear, linear_bf16_f32_2x1__avx2) {
  run_all("linear_bf16_f32_2x1__avx2");
}
TEST(JitLinear, linear_bf16_f32_1x1__avx2) {
  run_all("linear_bf16_f32_1x1__avx2");
}
TEST(JitLinear, linear_bf16_tinyblas_wide_f32_4x3__avx2) {
  run_all("linear_bf16_tinyblas_wide_f32_4x3__avx2");
}
TEST(JitLinear, linear_bf16_tinyblas_f32_2x2__avx2) {
  run_all("linear_bf16_tinyblas_f32_2x2__avx2");
}
TEST(JitLinear, linear_f32_f32_1x1__avx2) {
  run_all("linear_f32_f32_1x1__avx2");
}
TEST(JitLinear, linear_q4_1_f32_8x4__avx512vnni) {
  run_all("linear_q4_1_f32_8x4__avx512vnni");
}
TEST(JitLinear, linear_q5_0_f32_8x4__avx512vnni) {
  run_all("linear_q5_0_f32_8x4__avx512vnni");
}
TEST(JitLinear, linear_q5_1_f32_8x4__avx512vnni) {
  run_all("linear_q5_1_f32_8x4__avx512vnni");
}
TEST(JitLinear, linear_q4_1_f32_4x4__avx512vnni) {
  run_all("linear_q4_1_f32_4x4__avx512vnni");
}
TEST(JitLinear, linear_q4_1_f32_4x1__avx512vnni) {
  run_all("linear_q4_1_f32_4x1__avx512vnni");
}
TEST(JitLinear, linear_q4_1_f32_4x2__avx2) {
  run_all("linear_q4_1_f32_4x2__avx2");
}
TEST(JitLinear, linear_q4_1_f32_4x1__avx2) {
  run_all("linear_q4_1_f32_4x1__avx2");
}
TEST(JitLinear, linear_q5_0_f32_4x4__avx512vnni) {
  run_all("linear_q5_0_f32_4x4__avx512vnni");
}
TEST(JitLinear, linear_q5_0_f32_8x1__avx512vnni) {
  run_all("linear_q5_0_f32_8x1__avx512vnni");
}
TEST(JitLinear, linear_q5_0_f32_4x2__avx2) {
  run_all("linear_q5_0_f32_4x2__avx2");
}
TEST(JitLinear, linear_q5_0_f32_4x1__avx2) {
  run_all("linear_q5_0_f32_4x1__avx2");
}
TEST(JitLinear, linear_q5_1_f32_4x4__avx512vnni) {
  run_all("linear_q5_1_f32_4x4__avx512vnni");
}
TEST(JitLinear, linear_q5_1_f32_4x1__avx512vnni) {
  run_all("linear_q5_1_f32_4x1__avx512vnni");
}
TEST(JitLinear, linear_q5_1_f32_4x2__avx2) {
  run_all("linear_q5_1_f32_4x2__avx2");
}
TEST(JitLinear, linear_q5_1_f32_4x1__avx2) {
  run_all("linear_q5_1_f32_4x1__avx2");
}

// K-quants, plain vec_dot lanes (jit/gen_linear_kquant.cpp).
TEST(JitLinear, linear_q5_K_f32_1x4__avx512vnni) {
  run_all("linear_q5_K_f32_1x4__avx512vnni");
}
TEST(JitLinear, linear_q5_K_f32_1x1__avx512vnni) {
  run_all("linear_q5_K_f32_1x1__avx512vnni");
}
TEST(JitLinear, linear_q5_K_f32_1x1__avx2) {
  run_all("linear_q5_K_f32_1x1__avx2");
}
TEST(JitLinear, linear_q3_K_f32_1x4__avx512vnni) {
  run_all("linear_q3_K_f32_1x4__avx512vnni");
}
TEST(JitLinear, linear_q3_K_f32_1x1__avx512vnni) {
  run_all("linear_q3_K_f32_1x1__avx512vnni");
}
TEST(JitLinear, linear_q3_K_f32_1x1__avx2) {
  run_all("linear_q3_K_f32_1x1__avx2");
}
TEST(JitLinear, linear_q2_K_f32_1x4__avx512vnni) {
  run_all("linear_q2_K_f32_1x4__avx512vnni");
}
TEST(JitLinear, linear_q2_K_f32_1x1__avx512vnni) {
  run_all("linear_q2_K_f32_1x1__avx512vnni");
}
TEST(JitLinear, linear_q2_K_f32_1x1__avx2) {
  run_all("linear_q2_K_f32_1x1__avx2");
}
TEST(JitLinear, linear_q4_K_f32_1x4__avx512vnni) {
  run_all("linear_q4_K_f32_1x4__avx512vnni");
}
TEST(JitLinear, linear_q4_K_f32_1x1__avx512vnni) {
  run_all("linear_q4_K_f32_1x1__avx512vnni");
}
TEST(JitLinear, linear_q4_K_f32_1x1__avx2) {
  run_all("linear_q4_K_f32_1x1__avx2");
}
TEST(JitLinear, linear_q2_Kx8_f32_16x8__avx512vnni) {
  run_all("linear_q2_Kx8_f32_16x8__avx512vnni");
}
TEST(JitLinear, linear_q2_Kx8_f32_16x1__avx512vnni) {
  run_all("linear_q2_Kx8_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q2_Kx8_f32_8x8__avx2) {
  run_all("linear_q2_Kx8_f32_8x8__avx2");
}
TEST(JitLinear, linear_q2_Kx8_f32_8x1__avx2) {
  run_all("linear_q2_Kx8_f32_8x1__avx2");
}

TEST(JitLinear, linear_q4_0r16_f32_16x8__avx512vnni) {
  run_all("linear_q4_0r16_f32_16x8__avx512vnni");
}
TEST(JitLinear, linear_q4_0r16_f32_16x1__avx512vnni) {
  run_all("linear_q4_0r16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q4_0r16_f32_16x1__avx2) {
  run_all("linear_q4_0r16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q4_0r16_f32_16x1__avxvnni) {
  run_all("linear_q4_0r16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q4_0r16_f32_16x4__avx2) {
  run_all("linear_q4_0r16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q4_0r16_f32_16x4__avxvnni) {
  run_all("linear_q4_0r16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q8_0r16_f32_16x3__avx512vnni) {
  run_all("linear_q8_0r16_f32_16x3__avx512vnni");
}
TEST(JitLinear, linear_q8_0r16_f32_16x1__avx512vnni) {
  run_all("linear_q8_0r16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q5_0r16_f32_16x3__avx512vnni) {
  run_all("linear_q5_0r16_f32_16x3__avx512vnni");
}
TEST(JitLinear, linear_q5_0r16_f32_16x1__avx512vnni) {
  run_all("linear_q5_0r16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q4_1r16_f32_16x2__avx512vnni) {
  run_all("linear_q4_1r16_f32_16x2__avx512vnni");
}
TEST(JitLinear, linear_q4_1r16_f32_16x1__avx512vnni) {
  run_all("linear_q4_1r16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q5_1r16_f32_16x2__avx512vnni) {
  run_all("linear_q5_1r16_f32_16x2__avx512vnni");
}
TEST(JitLinear, linear_q5_1r16_f32_16x1__avx512vnni) {
  run_all("linear_q5_1r16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q8_0r16_f32_16x1__avx2) {
  run_all("linear_q8_0r16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q8_0r16_f32_16x1__avxvnni) {
  run_all("linear_q8_0r16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q8_0r16_f32_16x4__avx2) {
  run_all("linear_q8_0r16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q8_0r16_f32_16x4__avxvnni) {
  run_all("linear_q8_0r16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q2_Kr16_f32_16x1__avx2) {
  run_all("linear_q2_Kr16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q2_Kr16_f32_16x1__avxvnni) {
  run_all("linear_q2_Kr16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q4_Kr16_f32_16x8__avx2) {
  run_all("linear_q4_Kr16_f32_16x8__avx2");
}
TEST(JitLinear, linear_q2_Kr16_f32_16x8__avx2) {
  run_all("linear_q2_Kr16_f32_16x8__avx2");
}
TEST(JitLinear, linear_q2_Kr16_f32_16x8__avxvnni) {
  run_all("linear_q2_Kr16_f32_16x8__avxvnni");
}
TEST(JitLinear, linear_q3_Kr16_f32_16x1__avx2) {
  run_all("linear_q3_Kr16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q3_Kr16_f32_16x1__avxvnni) {
  run_all("linear_q3_Kr16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q3_Kr16_f32_16x4__avx2) {
  run_all("linear_q3_Kr16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q3_Kr16_f32_16x4__avxvnni) {
  run_all("linear_q3_Kr16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q5_0r16_f32_16x1__avx2) {
  run_all("linear_q5_0r16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q5_0r16_f32_16x1__avxvnni) {
  run_all("linear_q5_0r16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q5_0r16_f32_16x4__avx2) {
  run_all("linear_q5_0r16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q5_0r16_f32_16x4__avxvnni) {
  run_all("linear_q5_0r16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q4_1r16_f32_16x1__avx2) {
  run_all("linear_q4_1r16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q4_1r16_f32_16x1__avxvnni) {
  run_all("linear_q4_1r16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q4_1r16_f32_16x4__avx2) {
  run_all("linear_q4_1r16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q4_1r16_f32_16x4__avxvnni) {
  run_all("linear_q4_1r16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q5_1r16_f32_16x1__avx2) {
  run_all("linear_q5_1r16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q5_1r16_f32_16x1__avxvnni) {
  run_all("linear_q5_1r16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q5_1r16_f32_16x4__avx2) {
  run_all("linear_q5_1r16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q5_1r16_f32_16x4__avxvnni) {
  run_all("linear_q5_1r16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q4_Kr16_f32_16x8__avx512vnni) {
  run_all("linear_q4_Kr16_f32_16x8__avx512vnni");
}
TEST(JitLinear, linear_q4_Kr16_f32_16x1__avx512vnni) {
  run_all("linear_q4_Kr16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q4_Kr16_f32_16x1__avx2) {
  run_all("linear_q4_Kr16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q4_Kr16_f32_16x1__avxvnni) {
  run_all("linear_q4_Kr16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q4_Kr16_f32_16x4__avxvnni) {
  run_all("linear_q4_Kr16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q6_Kr16_f32_16x4__avx512vnni) {
  run_all("linear_q6_Kr16_f32_16x4__avx512vnni");
}
TEST(JitLinear, linear_q6_Kr16_f32_16x1__avx512vnni) {
  run_all("linear_q6_Kr16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q6_Kr16_f32_16x1__avx2) {
  run_all("linear_q6_Kr16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q6_Kr16_f32_16x1__avxvnni) {
  run_all("linear_q6_Kr16_f32_16x1__avxvnni");
}
TEST(JitLinear, linear_q6_Kr16_f32_16x4__avx2) {
  run_all("linear_q6_Kr16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q6_Kr16_f32_16x4__avxvnni) {
  run_all("linear_q6_Kr16_f32_16x4__avxvnni");
}
TEST(JitLinear, linear_q5_Kr16_f32_16x4__avx512vnni) {
  run_all("linear_q5_Kr16_f32_16x4__avx512vnni");
}
TEST(JitLinear, linear_q5_Kr16_f32_16x1__avx512vnni) {
  run_all("linear_q5_Kr16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q5_Kr16_f32_16x1__avx2) {
  run_all("linear_q5_Kr16_f32_16x1__avx2");
}
TEST(JitLinear, linear_q5_Kr16_f32_16x4__avx2) {
  run_all("linear_q5_Kr16_f32_16x4__avx2");
}
TEST(JitLinear, linear_q3_Kr16_f32_16x4__avx512vnni) {
  run_all("linear_q3_Kr16_f32_16x4__avx512vnni");
}
TEST(JitLinear, linear_q3_Kr16_f32_16x1__avx512vnni) {
  run_all("linear_q3_Kr16_f32_16x1__avx512vnni");
}
TEST(JitLinear, linear_q2_Kr16_f32_16x8__avx512vnni) {
  run_all("linear_q2_Kr16_f32_16x8__avx512vnni");
}
TEST(JitLinear, linear_q2_Kr16_f32_16x1__avx512vnni) {
  run_all("linear_q2_Kr16_f32_16x1__avx512vnni");
}
// AVX-VNNI (ymm vpdpbusd): the AVX2 tiles' integer dot in one instruction.
TEST(JitLinear, linear_q4_0_f32_4x1__avxvnni) {
  run_all("linear_q4_0_f32_4x1__avxvnni");
}
TEST(JitLinear, linear_q4_0_f32_4x2__avxvnni) {
  run_all("linear_q4_0_f32_4x2__avxvnni");
}
TEST(JitLinear, linear_q4_0x8_f32_4x1__avxvnni) {
  run_all("linear_q4_0x8_f32_4x1__avxvnni");
}
TEST(JitLinear, linear_q4_0x8_f32_4x4__avxvnni) {
  run_all("linear_q4_0x8_f32_4x4__avxvnni");
}
TEST(JitLinear, linear_q8_0_f32_4x1__avxvnni) {
  run_all("linear_q8_0_f32_4x1__avxvnni");
}
TEST(JitLinear, linear_q8_0_f32_4x2__avxvnni) {
  run_all("linear_q8_0_f32_4x2__avxvnni");
}
TEST(JitLinear, linear_q4_Kx8_f32_8x8__avxvnni) {
  run_all("linear_q4_Kx8_f32_8x8__avxvnni");
}
TEST(JitLinear, linear_q4_Kx8_f32_8x1__avxvnni) {
  run_all("linear_q4_Kx8_f32_8x1__avxvnni");
}
TEST(JitLinear, linear_q2_Kx8_f32_8x8__avxvnni) {
  run_all("linear_q2_Kx8_f32_8x8__avxvnni");
}
TEST(JitLinear, linear_q2_Kx8_f32_8x1__avxvnni) {
  run_all("linear_q2_Kx8_f32_8x1__avxvnni");
}
TEST(JitLinear, linear_q4_1_f32_4x1__avxvnni) {
  run_all("linear_q4_1_f32_4x1__avxvnni");
}
TEST(JitLinear, linear_q4_1_f32_4x2__avxvnni) {
  run_all("linear_q4_1_f32_4x2__avxvnni");
}
TEST(JitLinear, linear_q5_0_f32_4x1__avxvnni) {
  run_all("linear_q5_0_f32_4x1__avxvnni");
}
TEST(JitLinear, linear_q5_0_f32_4x2__avxvnni) {
  run_all("linear_q5_0_f32_4x2__avxvnni");
}
TEST(JitLinear, linear_q5_1_f32_4x1__avxvnni) {
  run_all("linear_q5_1_f32_4x1__avxvnni");
}
TEST(JitLinear, linear_q5_1_f32_4x2__avxvnni) {
  run_all("linear_q5_1_f32_4x2__avxvnni");
}

TEST(JitLinear, EveryGeneratedProviderHasATest) {
  const std::vector<std::string> tested = {
      "linear_q8_0_f32_4x4__avx512vnni",
      "linear_q8_0_f32_4x1__avx512vnni",
      "linear_q4_0_f32_4x4__avx512vnni",
      "linear_q4_0_f32_4x1__avx512vnni",
      "linear_q4_0x8_f32_8x4__avx512vnni",
      "linear_q4_0x8_f32_8x1__avx512vnni",
      "linear_q4_0x8_f32_16x8__avx512vnni",
      "linear_q4_Kx8_f32_16x8__avx512vnni",
      "linear_q4_Kx8_f32_16x1__avx512vnni",
      "linear_q4_Kx8_f32_8x8__avx2",
      "linear_q4_Kx8_f32_8x1__avx2",
      "linear_f32_f32_2x3__avx512",
      "linear_f32_f32_4x1__avx512",
      "linear_f16_f32_2x3__avx512",
      "linear_f16_f32_4x1__avx512",
      "linear_f16_f32_1x1__avx2",
      "linear_f16_f32_1x1__avx512",
      "linear_q6_K_f32_1x8__avx512vnni",
      "linear_q6_K_f32_1x1__avx512vnni",
      "linear_q6_K_f32_1x1__avx2",
      "linear_q8_0_f32_4x2__avx2",
      "linear_q8_0_f32_4x1__avx2",
      "linear_q4_0_f32_4x2__avx2",
      "linear_q4_0_f32_4x1__avx2",
      "linear_q4_0x8_f32_4x4__avx2",
      "linear_q4_0x8_f32_4x1__avx2",
      "linear_f32_f32_1x1__avx2",
      "linear_f16_tinyblas_f32_6x4__avx512",
      "linear_f16_tinyblas_f32_3x2__avx2",
      "linear_f16_tinyblas_wide_f32_4x3__avx2",
      "linear_f32_tinyblas_f32_4x6__avx512",
      "linear_f32_tinyblas_f32_3x2__avx2",
      "linear_bf16_f32_4x1__avx512bf16",
      "linear_bf16_f32_1x1__avx512bf16",
      "linear_bf16_tinyblas_f32_6x4__avx512bf16",
      "linear_bf16_f32_4x1__avx512",
      "linear_bf16_tinyblas_f32_4x3__avx512",
      "linear_bf16_f32_2x1__avx2",
      "linear_bf16_f32_1x1__avx2",
      "linear_bf16_tinyblas_f32_2x2__avx2",
      "linear_bf16_tinyblas_wide_f32_4x3__avx2",
      "linear_q8_0_f32_8x4__avx512vnni",
      "linear_q5_K_f32_1x4__avx512vnni",
      "linear_q5_K_f32_1x1__avx512vnni",
      "linear_q5_K_f32_1x1__avx2",
      "linear_q3_K_f32_1x4__avx512vnni",
      "linear_q3_K_f32_1x1__avx512vnni",
      "linear_q3_K_f32_1x1__avx2",
      "linear_q2_K_f32_1x4__avx512vnni",
      "linear_q2_K_f32_1x1__avx512vnni",
      "linear_q2_K_f32_1x1__avx2",
      "linear_q4_K_f32_1x4__avx512vnni",
      "linear_q4_K_f32_1x1__avx512vnni",
      "linear_q4_K_f32_1x1__avx2",
      "linear_q2_Kx8_f32_16x8__avx512vnni",
      "linear_q2_Kx8_f32_16x1__avx512vnni",
      "linear_q2_Kx8_f32_8x8__avx2",
      "linear_q2_Kx8_f32_8x1__avx2",
      "linear_q4_1_f32_8x4__avx512vnni",
      "linear_q5_0_f32_8x4__avx512vnni",
      "linear_q5_1_f32_8x4__avx512vnni",
      "linear_q4_1_f32_4x4__avx512vnni",
      "linear_q4_1_f32_4x1__avx512vnni",
      "linear_q4_1_f32_4x2__avx2",
      "linear_q4_1_f32_4x1__avx2",
      "linear_q5_0_f32_4x4__avx512vnni",
      "linear_q5_0_f32_8x1__avx512vnni",
      "linear_q5_0_f32_4x2__avx2",
      "linear_q5_0_f32_4x1__avx2",
      "linear_q5_1_f32_4x4__avx512vnni",
      "linear_q5_1_f32_4x1__avx512vnni",
      "linear_q5_1_f32_4x2__avx2",
      "linear_q5_1_f32_4x1__avx2",
      "linear_q4_0r16_f32_16x8__avx512vnni",
      "linear_q4_0r16_f32_16x1__avx512vnni",
      "linear_q4_0r16_f32_16x1__avx2",
      "linear_q4_0r16_f32_16x1__avxvnni",
      "linear_q4_0r16_f32_16x4__avx2",
      "linear_q4_0r16_f32_16x4__avxvnni",
      "linear_q4_Kr16_f32_16x8__avx512vnni",
      "linear_q4_Kr16_f32_16x1__avx512vnni",
      "linear_q4_Kr16_f32_16x1__avx2",
      "linear_q4_Kr16_f32_16x1__avxvnni",
      "linear_q4_Kr16_f32_16x4__avxvnni",
      "linear_q8_0r16_f32_16x3__avx512vnni",
      "linear_q8_0r16_f32_16x1__avx512vnni",
      "linear_q5_0r16_f32_16x3__avx512vnni",
      "linear_q5_0r16_f32_16x1__avx512vnni",
      "linear_q4_1r16_f32_16x2__avx512vnni",
      "linear_q4_1r16_f32_16x1__avx512vnni",
      "linear_q5_1r16_f32_16x2__avx512vnni",
      "linear_q5_1r16_f32_16x1__avx512vnni",
      "linear_q8_0r16_f32_16x1__avx2",
      "linear_q8_0r16_f32_16x1__avxvnni",
      "linear_q8_0r16_f32_16x4__avx2",
      "linear_q8_0r16_f32_16x4__avxvnni",
      "linear_q5_0r16_f32_16x1__avx2",
      "linear_q5_0r16_f32_16x1__avxvnni",
      "linear_q5_0r16_f32_16x4__avx2",
      "linear_q5_0r16_f32_16x4__avxvnni",
      "linear_q4_1r16_f32_16x1__avx2",
      "linear_q4_1r16_f32_16x1__avxvnni",
      "linear_q4_1r16_f32_16x4__avx2",
      "linear_q4_1r16_f32_16x4__avxvnni",
      "linear_q5_1r16_f32_16x1__avx2",
      "linear_q5_1r16_f32_16x1__avxvnni",
      "linear_q5_1r16_f32_16x4__avx2",
      "linear_q5_1r16_f32_16x4__avxvnni",
      "linear_q6_Kr16_f32_16x4__avx512vnni",
      "linear_q6_Kr16_f32_16x1__avx512vnni",
      "linear_q6_Kr16_f32_16x1__avx2",
      "linear_q6_Kr16_f32_16x1__avxvnni",
      "linear_q6_Kr16_f32_16x4__avx2",
      "linear_q6_Kr16_f32_16x4__avxvnni",
      "linear_q5_Kr16_f32_16x4__avx512vnni",
      "linear_q5_Kr16_f32_16x1__avx512vnni",
      "linear_q5_Kr16_f32_16x1__avx2",
      "linear_q5_Kr16_f32_16x4__avx2",
      "linear_q3_Kr16_f32_16x4__avx512vnni",
      "linear_q3_Kr16_f32_16x1__avx512vnni",
      "linear_q3_Kr16_f32_16x1__avx2",
      "linear_q3_Kr16_f32_16x1__avxvnni",
      "linear_q3_Kr16_f32_16x4__avx2",
      "linear_q3_Kr16_f32_16x4__avxvnni",
      "linear_q2_Kr16_f32_16x8__avx512vnni",
      "linear_q2_Kr16_f32_16x1__avx512vnni",
      "linear_q2_Kr16_f32_16x1__avx2",
      "linear_q2_Kr16_f32_16x1__avxvnni",
      "linear_q4_Kr16_f32_16x8__avx2",
      "linear_q2_Kr16_f32_16x8__avx2",
      "linear_q2_Kr16_f32_16x8__avxvnni",
      "linear_q4_0_f32_4x1__avxvnni",
      "linear_q4_0_f32_4x2__avxvnni",
      "linear_q4_0x8_f32_4x1__avxvnni",
      "linear_q4_0x8_f32_4x4__avxvnni",
      "linear_q8_0_f32_4x1__avxvnni",
      "linear_q8_0_f32_4x2__avxvnni",
      "linear_q4_Kx8_f32_8x8__avxvnni",
      "linear_q4_Kx8_f32_8x1__avxvnni",
      "linear_q2_Kx8_f32_8x8__avxvnni",
      "linear_q2_Kx8_f32_8x1__avxvnni",
      "linear_q4_1_f32_4x1__avxvnni",
      "linear_q4_1_f32_4x2__avxvnni",
      "linear_q5_0_f32_4x1__avxvnni",
      "linear_q5_0_f32_4x2__avxvnni",
      "linear_q5_1_f32_4x1__avxvnni",
      "linear_q5_1_f32_4x2__avxvnni",
  };
  std::vector<std::string> maps;
  for (const GeneratedLinear& g : generated_linear_providers()) maps.push_back(g.map->id);
  std::sort(maps.begin(), maps.end());
  std::vector<std::string> want = tested;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(maps, want);
}

// The decode-batch check tells the arithmetics apart: the prefill providers of the same
// contracts (the gemm for groups of 4 tokens) fail it, so a provider flagged by mistake
// cannot pass.
TEST(JitLinearDecodeBatch, PrefillProvidersFailIt) {
  for (const char* id :
       {"linear_q4_Kr16_f32_16x8__avx512vnni", "linear_q4_0r16_f32_16x8__avx512vnni"}) {
    std::string skip;
    const Loaded l = load(id, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_FALSE(l.map->selection.decode_batch) << id;
    EXPECT_NE(decode_batch(l), "") << id;
  }
}

}  // namespace cke::test
