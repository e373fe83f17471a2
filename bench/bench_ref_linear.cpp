// Throughput of the 13 reference linear kernels (scalar, ggml-exact oracles) at K = N = 2048,
// one token (a decode GEMV), on activations already converted (the act_quant step). Weights are
// realistic blocks: random normal rows quantized with the reference quantizers. Counters: weight
// bytes read per second and MAC/s.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"
#include "kernels/ref/linear.h"
#include "tests/common/linear_call.h"

namespace {

using LinearFn = cke::test::RawLinearFn;

constexpr int64_t kK = 2048, kN = 2048;

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void run(benchmark::State& st, cke::DType t, LinearFn fn) {
  const size_t rb = cke::row_bytes(t, kK);
  std::vector<uint8_t> w(rb * kN);
  {
    const std::vector<float> wf = normal(static_cast<size_t>(kK * kN), 1);
    for (int64_t n = 0; n < kN; ++n)
      cke::quantize_row(t, wf.data() + n * kK, w.data() + n * rb, kK);
  }
  // The activations converted once, as the contract's act_quant step would (not timed).
  const std::vector<float> xf = normal(kK, 2);
  const std::vector<uint8_t> x = cke::test::convert_activations(
      cke::test::act_step_for(t, false), cke::test::act_type_for(t), xf.data(), kK, 1);
  std::vector<float> y(kN);
  for (auto _ : st) {
    fn(x.data(), w.data(), y.data(), kK, kN, 1, 0, kN);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * static_cast<int64_t>(rb * kN));
  st.counters["MAC/s"] = benchmark::Counter(static_cast<double>(kK * kN),
                                            benchmark::Counter::kIsIterationInvariantRate);
}

#define CKE_BENCH_LINEAR(fn, dtype)    \
  void BM_##fn(benchmark::State& st) { \
    run(st, cke::DType::dtype, fn);    \
  }                                    \
  BENCHMARK(BM_##fn)->Unit(benchmark::kMillisecond)

CKE_BENCH_LINEAR(linear_f32_f32__ref, F32);
CKE_BENCH_LINEAR(linear_f16_f32__ref, F16);
CKE_BENCH_LINEAR(linear_bf16_f32__ref, BF16);
CKE_BENCH_LINEAR(linear_q8_0_f32__ref, Q8_0);
CKE_BENCH_LINEAR(linear_q4_0_f32__ref, Q4_0);
CKE_BENCH_LINEAR(linear_q4_1_f32__ref, Q4_1);
CKE_BENCH_LINEAR(linear_q5_0_f32__ref, Q5_0);
CKE_BENCH_LINEAR(linear_q5_1_f32__ref, Q5_1);
CKE_BENCH_LINEAR(linear_q2_K_f32__ref, Q2_K);
CKE_BENCH_LINEAR(linear_q3_K_f32__ref, Q3_K);
CKE_BENCH_LINEAR(linear_q4_K_f32__ref, Q4_K);
CKE_BENCH_LINEAR(linear_q5_K_f32__ref, Q5_K);
CKE_BENCH_LINEAR(linear_q6_K_f32__ref, Q6_K);

}  // namespace
