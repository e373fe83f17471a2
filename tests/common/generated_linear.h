// The generated linear providers of the real kernel maps, with the oracle of each one's
// contract: the one list the kernel tests (tests/jit_kernels) and the kernel benchmarks
// (bench/bench_jit_linear.cpp) iterate. A map added to kernel_maps/ is tested and
// benchmarked without editing either.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/generators.h"
#include "kernels/formats/layouts.h"
#include "kernels/registry.h"
#include "resolver/data_dirs.h"
#include "resolver/registry.h"
#include "tests/common/linear_call.h"

namespace cke::test {

struct GeneratedLinear {
  const KernelMap* map;
  DType wtype;
  jit::LinearFn reference;  // the contract's reference provider
  bool decode_only;         // phases: [decode] (always T = 1)
  // The contract's conversion of f32 activations (its `convert.x.via` contract's
  // reference kernel; null when x is f32) and the converted type.
  ActStepFn act_step = nullptr;
  DType act_type = DType::F32;
  std::vector<uint8_t> convert(const std::vector<float>& x, int64_t K, int64_t T) const {
    return convert_activations(act_step, act_type, x.data(), K, T);
  }
  // The weights as the provider reads them: the file's blocks `w` (N rows of K, what the
  // reference reads), or the copy the engine's repack step makes when the map's weight port
  // declares a layout (kernels/formats/layouts.h).
  std::vector<uint8_t> kernel_weights(const std::vector<uint8_t>& w, int64_t K, int64_t N) const {
    const WeightLayout* l = find_weight_layout(map->port("w")->layout);
    if (!l) return w;
    std::vector<uint8_t> r(l->bytes(K, N));
    l->repack(w.data(), r.data(), K, N, 0, (N + l->row_group - 1) / l->row_group);
    return r;
  }
};

// The build's kernel maps (CKE_KERNEL_MAPS or the compiled-in tree); throws if they do not
// load.
inline const Registry& real_registry() {
  static const Registry reg = [] {
    std::vector<LoadError> errors;
    std::optional<Registry> r =
        Registry::load(default_data_dirs().kernel_maps, linked_symbols(), &errors);
    if (!r) {
      std::string s;
      for (const LoadError& e : errors) s += e.str() + "\n";
      throw std::runtime_error("kernel maps do not load:\n" + s);
    }
    return std::move(*r);
  }();
  return reg;
}

inline std::vector<GeneratedLinear> generated_linear_providers() {
  std::vector<GeneratedLinear> out;
  const Registry& reg = real_registry();
  for (const KernelMap& m : reg.maps()) {
    if (m.impl.generator.empty() || m.op != "linear") continue;
    const Contract* c = reg.find_contract(m.contract);
    const KernelSymbol* ref = c ? find_kernel_symbol(c->reference) : nullptr;
    const PortSpec* w = m.port("w");
    if (!ref || !w) throw std::runtime_error(m.id + ": no reference kernel or no weight port");
    GeneratedLinear g{&m, w->dtype, reinterpret_cast<jit::LinearFn>(ref->fn),
                      m.selection.supports(Phase::Decode) && !m.selection.supports(Phase::Prefill)};
    g.act_type = *c->port("x")->dtype;
    for (const ContractConvert& k : c->converts) {
      const Contract* via = reg.find_contract(k.via);
      const KernelSymbol* step = via ? find_kernel_symbol(via->reference) : nullptr;
      if (!step)
        throw std::runtime_error(m.id + ": conversion " + k.via + " has no reference kernel");
      g.act_step = reinterpret_cast<ActStepFn>(step->fn);
    }
    out.push_back(std::move(g));
  }
  return out;
}

inline std::optional<GeneratedLinear> find_generated_linear(const std::string& id) {
  for (const GeneratedLinear& g : generated_linear_providers())
    if (g.map->id == id) return g;
  return std::nullopt;
}

}  // namespace cke::test
