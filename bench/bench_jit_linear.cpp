// Generated linear providers (every one in kernel_maps/, machine code) against the reference
// kernel of their contract, K = N = 4096 (N = 4095 for the q4_0 vec_dot providers, which
// need N % 8 != 0), T = 1 for decode providers and T = 32 (a prefill chunk) for prefill
// ones (CKE_BENCH_PREFILL_T=128 for llama-bench's pp128 chunk, CKE_BENCH_K for another K),
// one thread, all rows.
// Weights: random normal rows quantized by the reference quantizers. Each reference runs
// first; each JIT benchmark then reports `x_ref`, the reference's time / its own (the
// speed-up at identical output bits). Generators whose ISA this host lacks are skipped.
// Decode (T = 1) benchmarks stream their weights from DRAM as a decode step does: the calls
// cycle through copies of the matrix that together exceed any last-level cache (kStreamBytes),
// and `read` is the weight bytes a call reads over its time. Prefill ones reread one copy.
// CKE_BENCH_DECODE_CACHED=1 makes decode reread one copy too (from L3 at K = N = 4096): the
// kernel's own bound, to tell a compute-bound gemv from a bandwidth-bound one.
// Kernels are generated as a one-sequence plan on this host makes them (jit::plan_params):
// the decode tiles prefetch their weight stream as HostCaps::decode_stream_prefetch says;
// CKE_BENCH_DECODE_PREFETCH=on|off overrides it, to compare both on a new host.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
#include "runtime/core/page_buffer.h"
#include "tests/common/generated_linear.h"

namespace {

using cke::jit::LinearFn;

// A positive integer from the environment, or `fallback`.
int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  const long t = v ? std::strtol(v, nullptr, 10) : 0;
  return t > 0 ? int64_t(t) : fallback;
}

// K: 4096, or CKE_BENCH_K (a smaller K keeps a tile's weights and packs in L1: the kernel's
// compute bound apart from its cache traffic).
const int64_t kK = env_int("CKE_BENCH_K", 4096);
constexpr int64_t kN = 4096;
// Weight bytes a decode benchmark cycles through: more than the L3 of any host it runs on.
constexpr size_t kStreamBytes = size_t(512) << 20;

// Tokens of a prefill benchmark: 32, or CKE_BENCH_PREFILL_T.
int64_t prefill_tokens() {
  return env_int("CKE_BENCH_PREFILL_T", 32);
}

uint8_t* align64(uint8_t* p) {
  return p + ((64 - reinterpret_cast<uintptr_t>(p) % 64) % 64);
}

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

// Times fn on activations already converted by the contract's act_quant step (not timed:
// in the plan it is its own step, shared by the linears reading the same input).
void run(benchmark::State& st, const cke::test::GeneratedLinear& g, LinearFn fn, int64_t T,
         int64_t N, const std::string& ref_key, bool is_ref) {
  const std::vector<uint8_t> w0 =
      is_ref ? weights(g.wtype) : g.kernel_weights(weights(g.wtype), kK, N);
  // Decode: copies of the weights, called in turn, so every call reads from DRAM.
  static const bool cached = std::getenv("CKE_BENCH_DECODE_CACHED") != nullptr;
  const size_t copies = T == 1 && !cached ? std::max<size_t>(1, kStreamBytes / w0.size()) : 1;
  // In the pages the plan's weight copies are in (2 MiB where the host has transparent huge
  // pages): from a 4 KiB-paged vector one core streamed q8_0_r16 at 17-19 GB/s or 24-26,
  // as the process happened to get its pages, where the plan's copies read 23-25.
  const cke::AlignedBuf wbuf(w0.size() * copies, true);
  if (!wbuf.p) {
    st.SkipWithError("no memory for the weight copies");
    return;
  }
  uint8_t* const w = static_cast<uint8_t*>(wbuf.p);
  for (size_t c = 0; c < copies; ++c) std::copy(w0.begin(), w0.end(), w + c * w0.size());
  std::vector<float> xf(kK * T);
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : xf) v = d(rng);
  const std::vector<uint8_t> x0 = g.convert(xf, kK, T);
  std::vector<uint8_t> xbuf(x0.size() + 64);
  uint8_t* const x = align64(xbuf.data());
  std::copy(x0.begin(), x0.end(), x);
  std::vector<float> y(N * T);
  size_t c = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    fn(x, w + c * w0.size(), y.data(), kK, N, T, 0, N);
    c = c + 1 == copies ? 0 : c + 1;
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double per_call =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
      double(st.iterations());
  st.counters["MAC/s"] =
      benchmark::Counter(double(kK * N * T), benchmark::Counter::kIsIterationInvariantRate);
  if (T == 1)
    st.counters["read"] =
        benchmark::Counter(double(w0.size()), benchmark::Counter::kIsIterationInvariantRate,
                           benchmark::Counter::kIs1000);
  const std::string& key = ref_key;
  if (is_ref) {
    ref_seconds()[key] = per_call;
  } else if (auto it = ref_seconds().find(key); it != ref_seconds().end()) {
    st.counters["x_ref"] = it->second / per_call;
  }
}

// Registers, per provider of kernel_maps/ (the list the kernel tests use), the reference of
// its contract once per (format, T, N) and then the provider; T = 1 for decode providers,
// 32 for prefill ones. N is 4096, or 4095 where the map's shape predicate needs N % 8 != 0.
const bool registered = [] {
  static std::vector<std::unique_ptr<cke::jit::KernelModule>> modules;
  const cke::HostCaps host = cke::HostCaps::probe();
  const char* pf = std::getenv("CKE_BENCH_DECODE_PREFETCH");
  if (pf && std::string(pf) != "on" && std::string(pf) != "off") {
    std::fprintf(stderr, "CKE_BENCH_DECODE_PREFETCH=%s: expected on or off\n", pf);
    std::exit(2);
  }
  const bool decode_prefetch = pf ? std::string(pf) == "on" : host.decode_stream_prefetch;
  std::map<std::string, bool> ref_done;
  for (const cke::test::GeneratedLinear& e : cke::test::generated_linear_providers()) {
    const cke::KernelMap& m = *e.map;
    bool ok = true;
    for (cke::Feature f : m.isa) ok = ok && host.has(f);
    if (!ok) continue;
    int64_t N = kN;
    if (!m.admits({{"K", kK}, {"N", N}})) N = kN - 1;
    if (!m.admits({{"K", kK}, {"N", N}})) continue;
    const int64_t T = e.decode_only ? 1 : prefill_tokens();
    const std::string ref_id = m.contract + ":" + std::string(cke::dtype_name(e.wtype)) + "_ref";
    const std::string suffix =
        "/K=" + std::to_string(kK) + "/N=" + std::to_string(N) + "/T=" + std::to_string(T);
    const std::string key = ref_id + suffix;
    if (!ref_done[key]) {
      ref_done[key] = true;
      benchmark::RegisterBenchmark(key.c_str(), [e, T, N, key](benchmark::State& st) {
        run(st, e, e.reference, T, N, key, true);
      })->Unit(benchmark::kMillisecond);
    }
    std::string err;
    const cke::jit::GeneratorParams params =
        cke::jit::plan_params(m.impl.generator, m.impl.generator_params, m.selection.decode_batch,
                              /*plan_batches=*/false, decode_prefetch);
    auto mod = cke::jit::generate_kernel(m.impl.generator, params, m.id, &err);
    if (!mod) continue;
    const LinearFn fn = mod->entry_as<LinearFn>();
    modules.push_back(std::move(mod));
    benchmark::RegisterBenchmark((m.id + suffix).c_str(), [e, T, N, fn, key](benchmark::State& st) {
      run(st, e, fn, T, N, key, false);
    })->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
