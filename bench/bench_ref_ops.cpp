// Throughput of the reference op kernels (scalar oracles; the baseline optimized kernels are
// measured against). Shapes of a 7B-class llama layer unless noted.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/formats/quant.h"
#include "kernels/ref/ops.h"

namespace {

std::vector<float> randv(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void BM_rmsnorm(benchmark::State& st) {
  const int64_t n = 4096;
  auto x = randv(n, 1), w = randv(n, 2);
  std::vector<float> y(n);
  for (auto _ : st) {
    rmsnorm_f32__ref(x.data(), w.data(), y.data(), n, 1, 1e-5f, 0, 1);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_rmsnorm);

void BM_rope_neox(benchmark::State& st) {
  const int64_t hd = 128, nh = 32;
  auto x = randv(hd * nh, 3);
  for (auto _ : st) {
    rope_neox_f32__ref(x.data(), hd, nh, 1, 1000, hd, 1e6f, 1.0f, 0, 1);
    benchmark::DoNotOptimize(x.data());
  }
  st.SetItemsProcessed(st.iterations() * hd * nh);
}
BENCHMARK(BM_rope_neox);

// Decode attention at context length n_kv (range arg), 32 query heads / 8 KV heads × 128.
void BM_attention_decode(benchmark::State& st) {
  const int64_t hd = 128, nh = 32, nkv = 8, n_ctx = st.range(0);
  auto q = randv(hd * nh, 4), kc = randv(hd * nkv * n_ctx, 5), vc = randv(hd * nkv * n_ctx, 6);
  std::vector<float> out(hd * nh);
  for (auto _ : st) {
    attention_f32__ref(q.data(), kc.data(), vc.data(), out.data(), hd, nh, nkv, n_ctx, n_ctx - 1, 1,
                       1.0f / std::sqrt(float(hd)), 0, 0, nh);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations() * nh * n_ctx);  // (head, cell) pairs
}
BENCHMARK(BM_attention_decode)->Arg(256)->Arg(2048);

void BM_swiglu(benchmark::State& st) {
  const int64_t n = 11008;
  auto g = randv(n, 7), u = randv(n, 8);
  std::vector<float> y(n);
  for (auto _ : st) {
    swiglu_f32__ref(g.data(), u.data(), y.data(), n, 1, 0, 1);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_swiglu);

void BM_geglu(benchmark::State& st) {
  const int64_t n = 11008;
  auto g = randv(n, 9), u = randv(n, 10);
  std::vector<float> y(n);
  for (auto _ : st) {
    geglu_f32__ref(g.data(), u.data(), y.data(), n, 1, 0, 1);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_geglu);

void BM_embed_q4_K(benchmark::State& st) {
  const int64_t n = 4096, rows = 64;
  auto x = randv(n * rows, 11);
  std::vector<uint8_t> table(cke::row_bytes(cke::DType::Q4_K, n) * rows);
  for (int64_t r = 0; r < rows; ++r)
    cke::quantize_row(cke::DType::Q4_K, &x[r * n],
                      table.data() + r * cke::row_bytes(cke::DType::Q4_K, n), n);
  const int32_t tok[8] = {1, 5, 9, 13, 17, 21, 25, 63};
  std::vector<float> y(n * 8);
  for (auto _ : st) {
    embed_q4_K__ref(tok, table.data(), y.data(), n, 8);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n * 8);
}
BENCHMARK(BM_embed_q4_K);

void BM_add(benchmark::State& st) {
  const int64_t n = 4096;
  auto a = randv(n, 12), b = randv(n, 13);
  std::vector<float> y(n);
  for (auto _ : st) {
    add_f32__ref(a.data(), b.data(), y.data(), n, 0, n);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_add);

}  // namespace
