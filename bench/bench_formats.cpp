// dequantize_row (the reference to_float of every format) on one 4096-wide row, and
// quantize_row for comparison. Reports elements/s; the row is quantized from Gaussian data
// once, outside the timed loop.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/formats/quant.h"

namespace {

constexpr int64_t kRow = 4096;

std::vector<float> gaussian_row() {
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0.0f, 0.02f);
  std::vector<float> x(kRow);
  for (float& v : x) v = g(rng);
  return x;
}

void BM_Dequantize(benchmark::State& state, cke::DType t) {
  const std::vector<float> x = gaussian_row();
  std::vector<uint8_t> q(cke::row_bytes(t, kRow));
  cke::quantize_row(t, x.data(), q.data(), kRow);
  std::vector<float> y(kRow);
  for (auto _ : state) {
    cke::dequantize_row(t, q.data(), y.data(), kRow);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRow);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(q.size()));
}

void BM_Quantize(benchmark::State& state, cke::DType t) {
  const std::vector<float> x = gaussian_row();
  std::vector<uint8_t> q(cke::row_bytes(t, kRow));
  for (auto _ : state) {
    cke::quantize_row(t, x.data(), q.data(), kRow);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kRow);
}

#define CKE_FORMAT_BENCH(T)                           \
  BENCHMARK_CAPTURE(BM_Dequantize, T, cke::DType::T); \
  BENCHMARK_CAPTURE(BM_Quantize, T, cke::DType::T)

CKE_FORMAT_BENCH(F32);
CKE_FORMAT_BENCH(F16);
CKE_FORMAT_BENCH(BF16);
CKE_FORMAT_BENCH(Q4_0);
CKE_FORMAT_BENCH(Q4_1);
CKE_FORMAT_BENCH(Q5_0);
CKE_FORMAT_BENCH(Q5_1);
CKE_FORMAT_BENCH(Q8_0);
CKE_FORMAT_BENCH(Q2_K);
CKE_FORMAT_BENCH(Q3_K);
CKE_FORMAT_BENCH(Q4_K);
CKE_FORMAT_BENCH(Q5_K);
CKE_FORMAT_BENCH(Q6_K);
CKE_FORMAT_BENCH(Q8_K);

}  // namespace
