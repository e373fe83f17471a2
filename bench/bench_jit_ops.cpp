// Generated element-wise / per-row op providers (rope, scale, add_bias, rmsnorm, geglu: every
// one of those ops in kernel_maps/, machine code) against the reference kernel of their
// contract, on the shapes of a 7B-class layer: RoPE of Q (head_dim 128 x 32 heads) at decode
// (T = 1) and for a prefill chunk (T = 32), RMSNorm of 4096 at T = 1, 32 and 512 (alone, and
// fused with the q8_0 conversion after it: rmsnorm_act_quant), the F32 KV store of a
// Qwen3-0.6B layer (kv_dim 1024, 4096 cells) for one token and a 64-token chunk, the Q bias
// (4096), the Q scale (4096), GEGLU over the FFN width (11008), the MoE router and grouping of
// a Qwen3-30B-A3B layer (128 experts, 8 used) and a Mixtral one (8, 2), and the attention
// over the F32 and the F16 (flash) cache of a TinyLlama layer (head_dim 64, 32 query heads,
// 4 KV heads) at decode after 2047 cells and for a 64-token chunk after 1984 (CKE_BENCH_N_KV
// sets another cache length). Each reference runs
// first; each JIT benchmark then reports `x_ref`, the reference's time / its own (the speed-up
// at identical output bits). Providers whose ISA this host lacks are skipped.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/generators.h"
#include "resolver/host_caps.h"
#include "tests/common/generated_linear.h"

namespace {

using Call = std::function<void(void* fn)>;  // one call of a kernel of the op's ABI

std::vector<float> randv(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Workload {
  std::string name;  // shape suffix
  int64_t elems;     // elements per call (items/s)
  Call call;
};

// Attention over a full cache of n_ctx cells: T queries at pos0 = n_ctx - T, every head,
// in TinyLlama's shape (head_dim 64, 32 heads, GQA 8) or Qwen3-0.6B's (128, 16, GQA 2).
// Cell = float (F32 cache) or fp16 bits (F16 cache, values 2^-2..2 of either sign).
template <class Cell>
Workload attention_workload(int64_t T, int64_t hd) {
  const char* env = std::getenv("CKE_BENCH_N_KV");  // another cache length (default 2048)
  const int64_t nh = hd == 64 ? 32 : 16, nkv = hd == 64 ? 4 : 8,
                n_ctx = env ? std::max<int64_t>(T, std::atoll(env)) : 2048;
  using Fn = void (*)(const float*, const Cell*, const Cell*, float*, int64_t, int64_t, int64_t,
                      int64_t, int64_t, int64_t, float, int64_t, int64_t, int64_t);
  auto q = std::make_shared<std::vector<float>>(randv(size_t(hd * nh * T), 11));
  auto out = std::make_shared<std::vector<float>>(size_t(hd * nh * T));
  auto kv = std::make_shared<std::vector<Cell>>(size_t(2 * hd * nkv * n_ctx));
  const std::vector<float> r = randv(kv->size(), 12);
  std::mt19937 rng(13);
  for (size_t i = 0; i < kv->size(); ++i) {
    if constexpr (sizeof(Cell) == 4)
      (*kv)[i] = r[i];
    else
      (*kv)[i] = Cell((rng() & 0x83ffu) | ((13u + rng() % 4u) << 10));
  }
  return {fmt::format("/hd={}/n_kv={}/T={}", hd, n_ctx, T), hd * nh * T, [=](void* fn) {
            const Cell* k = kv->data();  // K cells, then V cells
            reinterpret_cast<Fn>(fn)(q->data(), k, k + hd * nkv * n_ctx, out->data(), hd, nh, nkv,
                                     n_ctx, n_ctx - T, T, 0.125f, 0, 0, nh);
          }};
}

// The workloads of an op (variant-independent: rope normal and neox share one; attention
// by its cache's element type).
std::vector<Workload> workloads(const std::string& op, const std::string& contract) {
  using Rope =
      void (*)(float*, int64_t, int64_t, int64_t, int64_t, int64_t, float, float, int64_t, int64_t);
  using Scale = void (*)(const float*, float*, int64_t, float, int64_t, int64_t);
  using Bias = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
  using Glu = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, int64_t);
  std::vector<Workload> w;
  if (op == "rope") {
    for (int64_t T : {1, 32}) {
      auto x = std::make_shared<std::vector<float>>(randv(size_t(128 * 32 * T), 3));
      w.push_back(
          {"/head_dim=128/n_heads=32/T=" + std::to_string(T), 128 * 32 * T, [x, T](void* fn) {
             reinterpret_cast<Rope>(fn)(x->data(), 128, 32, T, 1000, 128, 10000.0f, 1.0f, 0, T);
           }});
    }
  } else if (op == "scale") {
    auto x = std::make_shared<std::vector<float>>(randv(4096, 4));
    w.push_back({"/n=4096", 4096, [x](void* fn) {
                   reinterpret_cast<Scale>(fn)(x->data(), x->data(), 4096, 1.0f, 0, 4096);
                 }});
  } else if (op == "rmsnorm") {
    using Norm =
        void (*)(const float*, const float*, float*, int64_t, int64_t, float, int64_t, int64_t);
    for (int64_t T : {1, 32, 512}) {
      auto x = std::make_shared<std::vector<float>>(randv(size_t(4096 * T), 9));
      auto g = std::make_shared<std::vector<float>>(randv(4096, 10));
      auto y = std::make_shared<std::vector<float>>(x->size());  // x -> xn, as in a block
      w.push_back({"/n=4096/T=" + std::to_string(T), 4096 * T, [x, g, y, T](void* fn) {
                     reinterpret_cast<Norm>(fn)(x->data(), g->data(), y->data(), 4096, T, 1e-5f, 0,
                                                T);
                   }});
    }
  } else if (op == "rmsnorm_act_quant") {  // the q8_0 conversion after the norm, fused
    using NormQ = void (*)(const float*, const float*, float*, void*, int64_t, int64_t, float,
                           int64_t, int64_t);
    for (int64_t T : {1, 32, 512}) {
      auto x = std::make_shared<std::vector<float>>(randv(size_t(4096 * T), 9));
      auto g = std::make_shared<std::vector<float>>(randv(4096, 10));
      auto xn = std::make_shared<std::vector<float>>(size_t(4096 * T));
      auto q = std::make_shared<std::vector<uint8_t>>(size_t(128 * 34 * T));
      w.push_back({"/n=4096/T=" + std::to_string(T), 4096 * T, [x, g, xn, q, T](void* fn) {
                     reinterpret_cast<NormQ>(fn)(x->data(), g->data(), xn->data(), q->data(), 4096,
                                                 T, 1e-5f, 0, T);
                   }});
    }
  } else if (op == "kv_store" && contract == "kv_store.f32.ggml") {
    // Qwen3-0.6B's KV width (8 KV heads x 128) into a 4096-cell cache at cell 1000: V is
    // written transposed (channel-major rows of n_ctx cells).
    using Store = void (*)(const float*, const float*, float*, float*, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t);
    constexpr int64_t kv = 1024, n_ctx = 4096;
    auto cache = std::make_shared<std::vector<float>>(size_t(2 * kv * n_ctx));
    for (int64_t T : {1, 64}) {
      auto x = std::make_shared<std::vector<float>>(randv(size_t(2 * kv * T), 14));
      w.push_back(
          {fmt::format("/kv_dim={}/n_ctx={}/T={}", kv, n_ctx, T), kv * T, [x, cache, T](void* fn) {
             float* c = cache->data();
             reinterpret_cast<Store>(fn)(x->data(), x->data() + kv * T, c, c + kv * n_ctx, kv,
                                         n_ctx, 1000, T, 0, T);
           }});
    }
  } else if (op == "add_bias") {
    auto x = std::make_shared<std::vector<float>>(randv(4096, 5));
    auto b = std::make_shared<std::vector<float>>(4096, 0.0f);
    w.push_back({"/n=4096/T=1", 4096, [x, b](void* fn) {
                   reinterpret_cast<Bias>(fn)(x->data(), b->data(), x->data(), 4096, 1, 0, 1);
                 }});
  } else if (op == "glu") {
    auto g = std::make_shared<std::vector<float>>(randv(11008, 6));
    auto u = std::make_shared<std::vector<float>>(randv(11008, 7));
    auto y = std::make_shared<std::vector<float>>(11008);
    w.push_back({"/n=11008/T=1", 11008, [g, u, y](void* fn) {
                   reinterpret_cast<Glu>(fn)(g->data(), u->data(), y->data(), 11008, 1, 0, 1);
                 }});
  } else if (op == "moe_route") {
    using Route =
        void (*)(const float*, int32_t*, float*, int64_t, int64_t, int64_t, int64_t, int64_t);
    for (auto [E, k, T] : {std::array<int64_t, 3>{128, 8, 1}, {128, 8, 32}, {8, 2, 32}}) {
      auto x = std::make_shared<std::vector<float>>(randv(size_t(E * T), 8));
      auto ids = std::make_shared<std::vector<int32_t>>(size_t(k * T));
      auto wt = std::make_shared<std::vector<float>>(size_t(k * T));
      w.push_back(
          {fmt::format("/E={}/n_used={}/T={}", E, k, T), E * T, [x, ids, wt, E, k, T](void* fn) {
             reinterpret_cast<Route>(fn)(x->data(), ids->data(), wt->data(), E, k, T, 0, T);
           }});
    }
  } else if (op == "attention") {
    for (int64_t hd : {64, 128})
      for (int64_t T : {1, 64})
        w.push_back(contract == "attention.f16_flash.ggml" ? attention_workload<uint16_t>(T, hd)
                                                           : attention_workload<float>(T, hd));
  } else if (op == "moe_group") {
    using Group = void (*)(const int32_t*, int32_t*, int32_t*, int64_t, int64_t, int64_t);
    for (auto [E, k, T] : {std::array<int64_t, 3>{128, 8, 1}, {128, 8, 32}}) {
      std::mt19937 rng(9);
      auto ids = std::make_shared<std::vector<int32_t>>(size_t(k * T));
      for (int32_t& v : *ids) v = int32_t(rng() % uint32_t(E));
      auto sched = std::make_shared<std::vector<int32_t>>(size_t(2 * E));
      auto rows = std::make_shared<std::vector<int32_t>>(size_t(2 * k * T));
      w.push_back({fmt::format("/E={}/n_used={}/T={}", E, k, T), k * T,
                   [ids, sched, rows, E, k, T](void* fn) {
                     reinterpret_cast<Group>(fn)(ids->data(), sched->data(), rows->data(), E, k, T);
                   }});
    }
  }
  return w;
}

std::map<std::string, double>& ref_seconds() {
  static std::map<std::string, double> m;
  return m;
}

void run(benchmark::State& st, const Workload& w, void* fn, const std::string& key, bool is_ref) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    w.call(fn);
    benchmark::ClobberMemory();
  }
  const double per_call =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
      double(st.iterations());
  st.SetItemsProcessed(st.iterations() * w.elems);
  if (is_ref)
    ref_seconds()[key] = per_call;
  else if (auto it = ref_seconds().find(key); it != ref_seconds().end())
    st.counters["x_ref"] = it->second / per_call;
}

const bool registered = [] {
  static std::vector<std::unique_ptr<cke::jit::KernelModule>> modules;
  const cke::HostCaps host = cke::HostCaps::probe();
  const cke::Registry& reg = cke::test::real_registry();
  std::map<std::string, bool> ref_done;
  for (const cke::KernelMap& m : reg.maps()) {
    if (m.impl.generator.empty()) continue;
    if (m.op != "rope" && m.op != "scale" && m.op != "add_bias" && m.op != "moe_route" &&
        m.op != "moe_group" && m.op != "rmsnorm" && m.op != "rmsnorm_act_quant" &&
        m.contract != "kv_store.f32.ggml" && m.op != "attention" &&
        m.contract != "glu.geglu.f32.ggml")
      continue;
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
    for (const Workload& w : workloads(m.op, m.contract)) {
      const std::string key = c->reference + w.name;
      if (!ref_done[key]) {
        ref_done[key] = true;
        void* rfn = ref->fn;
        benchmark::RegisterBenchmark(key.c_str(), [w, rfn, key](benchmark::State& st) {
          run(st, w, rfn, key, true);
        })->Unit(benchmark::kMicrosecond);
      }
      benchmark::RegisterBenchmark((m.id + w.name).c_str(), [w, fn, key](benchmark::State& st) {
        run(st, w, fn, key, false);
      })->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
