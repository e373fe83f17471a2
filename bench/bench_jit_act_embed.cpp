// Generated act_quant and embed providers (every one in kernel_maps/, machine code) against
// the reference kernel of their contract, one thread:
//   act_quant: K = 4096 rows of random normal activations, T = 32 (a prefill chunk), 1 and
//              512 (the rmsnorm_act_quant fusion's comparison: bench_jit_ops.cpp);
//   embed: E = 4096, T = 32 token ids into a 512-row table (random normal rows quantized by
//          the reference quantizers, or converted for the float types).
// Each reference runs first; each JIT benchmark then reports `x_ref`, the reference's time /
// its own (the speed-up at identical output bits). Providers whose ISA this host lacks are
// skipped.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/gen_act_quant.h"
#include "jit/gen_embed.h"
#include "jit/generators.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"
#include "kernels/registry.h"
#include "resolver/host_caps.h"
#include "tests/common/generated_linear.h"

namespace {

using cke::jit::gen::ActQuantFn;
using cke::jit::gen::EmbedFn;

constexpr int64_t kK = 4096, kRows = 512, kTok = 32;

std::map<std::string, double>& ref_seconds() {
  static std::map<std::string, double> m;
  return m;
}

// Times `call`; the reference's per-call time is kept under `key`, a provider reports x_ref.
template <class Call>
void timed(benchmark::State& st, const std::string& key, bool is_ref, Call call) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    call();
    benchmark::ClobberMemory();
  }
  const double per_call =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
      double(st.iterations());
  if (is_ref)
    ref_seconds()[key] = per_call;
  else if (auto it = ref_seconds().find(key); it != ref_seconds().end())
    st.counters["x_ref"] = it->second / per_call;
}

std::vector<float> normal(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void bench_act_quant(const cke::KernelMap& m, ActQuantFn fn, ActQuantFn ref, int64_t T,
                     const std::string& key, bool is_ref) {
  const std::string name = (is_ref ? key : m.id + key.substr(key.find('/')));
  benchmark::RegisterBenchmark(name.c_str(), [&m, fn, ref, T, key, is_ref](benchmark::State& st) {
    const std::vector<float> x = normal(size_t(kK * T), 3);
    std::vector<uint8_t> y(cke::row_bytes(m.port("y")->dtype, kK) * size_t(T));
    ActQuantFn f = is_ref ? ref : fn;
    timed(st, key, is_ref, [&] { f(x.data(), y.data(), kK, T, 0, T); });
    st.counters["B/s"] =
        benchmark::Counter(double(kK * T * 4), benchmark::Counter::kIsIterationInvariantRate);
  })->Unit(benchmark::kMicrosecond);
}

std::vector<uint8_t> table(cke::DType t) {
  const std::vector<float> rows = normal(size_t(kK * kRows), 4);
  const size_t rb = cke::row_bytes(t, kK);
  std::vector<uint8_t> w(rb * kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    const float* src = rows.data() + r * kK;
    uint8_t* dst = w.data() + size_t(r) * rb;
    if (t == cke::DType::F32) {
      std::memcpy(dst, src, rb);
    } else if (t == cke::DType::F16 || t == cke::DType::BF16) {
      for (int64_t i = 0; i < kK; ++i) {
        const uint16_t h =
            t == cke::DType::F16 ? cke::fp32_to_fp16(src[i]) : cke::fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      cke::quantize_row(t, src, dst, kK);
    }
  }
  return w;
}

void bench_embed(const cke::KernelMap& m, EmbedFn fn, EmbedFn ref, const std::string& key,
                 bool is_ref) {
  const std::string name = (is_ref ? key : m.id + key.substr(key.find('/')));
  benchmark::RegisterBenchmark(name.c_str(), [&m, fn, ref, key, is_ref](benchmark::State& st) {
    static std::map<cke::DType, std::vector<uint8_t>> tables;
    const cke::DType t = m.port("table")->dtype;
    if (!tables.count(t)) tables[t] = table(t);
    std::vector<int32_t> tok(kTok);
    std::mt19937 rng(5);
    for (int32_t& v : tok) v = int32_t(rng() % kRows);
    std::vector<float> y(size_t(kK * kTok));
    EmbedFn f = is_ref ? ref : fn;
    timed(st, key, is_ref, [&] { f(tok.data(), tables[t].data(), y.data(), kK, kTok); });
  })->Unit(benchmark::kMicrosecond);
}

const bool registered = [] {
  static std::vector<std::unique_ptr<cke::jit::KernelModule>> modules;
  const cke::HostCaps host = cke::HostCaps::probe();
  const cke::Registry& reg = cke::test::real_registry();
  std::map<std::string, bool> ref_done;
  for (const cke::KernelMap& m : reg.maps()) {
    if ((m.op != "act_quant" && m.op != "embed") || m.impl.generator.empty()) continue;
    bool ok = true;
    for (cke::Feature f : m.isa) ok = ok && host.has(f);
    if (!ok) continue;
    const cke::Contract* c = reg.find_contract(m.contract);
    const cke::KernelSymbol* ref = c ? cke::find_kernel_symbol(c->reference) : nullptr;
    if (!ref) continue;
    std::string err;
    auto mod = cke::jit::generate_kernel(m.impl.generator, m.impl.generator_params, m.id, &err);
    if (!mod) continue;
    void* fn = mod->entry();
    modules.push_back(std::move(mod));
    if (m.op == "act_quant") {
      for (int64_t T : {kTok, int64_t(1), int64_t(512)}) {
        const std::string key =
            c->reference + "/K=" + std::to_string(kK) + "/T=" + std::to_string(T);
        if (!ref_done[key]) {
          ref_done[key] = true;
          bench_act_quant(m, nullptr, reinterpret_cast<ActQuantFn>(ref->fn), T, key, true);
        }
        bench_act_quant(m, reinterpret_cast<ActQuantFn>(fn), nullptr, T, key, false);
      }
    } else {
      const std::string key =
          c->reference + "/E=" + std::to_string(kK) + "/T=" + std::to_string(kTok);
      if (!ref_done[key]) {
        ref_done[key] = true;
        bench_embed(m, nullptr, reinterpret_cast<EmbedFn>(ref->fn), key, true);
      }
      bench_embed(m, reinterpret_cast<EmbedFn>(fn), nullptr, key, false);
    }
  }
  return true;
}();

}  // namespace
