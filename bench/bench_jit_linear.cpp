// Generated (JIT) linear kernels against the reference kernel of their contract, K = N =
// 4096, T = 1 (decode GEMV) and T = 32 (a prefill chunk), one thread, all rows.
// Weights: random normal rows quantized by the reference quantizers. Each reference runs
// first; each JIT benchmark then reports `x_ref`, the reference's time / its own (the
// speed-up at identical output bits). Generators whose ISA this host lacks are skipped.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/generators.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"
#include "kernels/ref/linear.h"
#include "resolver/host_caps.h"

namespace {

using cke::jit::LinearFn;

constexpr int64_t kK = 4096, kN = 4096;

const std::vector<uint8_t>& weights(cke::DType t) {
  static std::map<cke::DType, std::vector<uint8_t>> cache;
  auto it = cache.find(t);
  if (it != cache.end()) return it->second;
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const size_t rb = cke::row_bytes(t, kK);
  std::vector<uint8_t> w(rb * kN);
  std::vector<float> row(kK);
  for (int64_t n = 0; n < kN; ++n) {
    for (float& v : row) v = d(rng);
    cke::quantize_row(t, row.data(), w.data() + n * rb, kK);
  }
  return cache.emplace(t, std::move(w)).first->second;
}

std::map<std::string, double>& ref_seconds() {
  static std::map<std::string, double> m;
  return m;
}

void run(benchmark::State& st, cke::DType t, LinearFn fn, int64_t T, const std::string& ref_key,
         bool is_ref) {
  const std::vector<uint8_t>& w = weights(t);
  std::vector<float> x(kK * T);
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : x) v = d(rng);
  std::vector<float> y(kN * T);
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    fn(x.data(), w.data(), y.data(), kK, kN, T, 0, kN);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double per_call =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
      double(st.iterations());
  st.counters["MAC/s"] =
      benchmark::Counter(double(kK * kN * T), benchmark::Counter::kIsIterationInvariantRate);
  const std::string key = ref_key + "/" + std::to_string(T);
  if (is_ref) {
    ref_seconds()[key] = per_call;
  } else if (auto it = ref_seconds().find(key); it != ref_seconds().end()) {
    st.counters["x_ref"] = it->second / per_call;
  }
}

struct Entry {
  std::string id;
  cke::DType t;
  LinearFn ref;
};

// Registers, per T, each reference once and then every runnable generator of its format.
const bool registered = [] {
  static std::vector<std::unique_ptr<cke::jit::KernelModule>> modules;
  const cke::HostCaps host = cke::HostCaps::probe();
  const std::vector<Entry> entries = {
      {"linear_q8_0_f32__avx512vnni", cke::DType::Q8_0, &linear_q8_0_f32__ref},
      {"linear_q8_0_f32__avx2", cke::DType::Q8_0, &linear_q8_0_f32__ref},
      {"linear_q4_0_f32__avx512vnni", cke::DType::Q4_0, &linear_q4_0_f32__ref},
      {"linear_q4_0_f32__avx2", cke::DType::Q4_0, &linear_q4_0_f32__ref},
      {"linear_f32_f32__avx512", cke::DType::F32, &linear_f32_f32__ref},
  };
  for (int64_t T : {1, 32}) {
    std::map<cke::DType, bool> ref_done;
    for (const Entry& e : entries) {
      const cke::jit::Generator* g = cke::jit::find_generator(e.id);
      if (!g) continue;
      bool ok = true;
      for (int i = 0; i < g->n_isa; ++i) {
        auto f = cke::feature_from_name(g->isa[i]);
        ok = ok && f && host.has(*f);
      }
      if (!ok) continue;
      const std::string ref_id = e.id.substr(0, e.id.find("__")) + "__ref";
      const std::string suffix = "/K=4096/N=4096/T=" + std::to_string(T);
      if (!ref_done[e.t]) {
        ref_done[e.t] = true;
        benchmark::RegisterBenchmark((ref_id + suffix).c_str(), [e, T,
                                                                 ref_id](benchmark::State& st) {
          run(st, e.t, e.ref, T, ref_id, true);
        })->Unit(benchmark::kMillisecond);
      }
      std::string err;
      auto m = g->generate({}, &err);
      if (!m) continue;
      const LinearFn fn = m->entry_as<LinearFn>();
      modules.push_back(std::move(m));
      benchmark::RegisterBenchmark((e.id + suffix).c_str(), [e, T, fn,
                                                             ref_id](benchmark::State& st) {
        run(st, e.t, fn, T, ref_id, false);
      })->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
