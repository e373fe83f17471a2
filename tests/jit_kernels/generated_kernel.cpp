#include "generated_kernel.h"

#include <gtest/gtest.h>

#include "jit/kir/kir_c.h"
#include "resolver/features.h"
#include "tests/common/generated_linear.h"

namespace cke::test {

GeneratedKernelRaw load_generated_raw(const std::string& id, const std::string& op,
                                      std::string* skip) {
  GeneratedKernelRaw l;
  const Registry& reg = real_registry();
  l.map = reg.find_map(id);
  if (!l.map || l.map->op != op || l.map->impl.generator.empty()) {
    ADD_FAILURE() << "no generated " << op << " provider " << id << " in kernel_maps/";
    return l;
  }
  const jit::Generator* gen = jit::find_generator(l.map->impl.generator);
  if (!gen) {
    ADD_FAILURE() << "no generator " << l.map->impl.generator;
    return l;
  }
  if (std::string m = missing_isa(*gen); !m.empty()) {
    *skip = "host lacks " + m + " needed by " + id;
    return l;
  }
  const Contract* contract = reg.find_contract(l.map->contract);
  const KernelSymbol* ref = contract ? find_kernel_symbol(contract->reference) : nullptr;
  if (!ref) {
    ADD_FAILURE() << id << ": no reference kernel for its contract";
    return l;
  }
  l.ref = ref->fn;
  std::string err, c;
  l.module = jit::generate_kernel(gen->name, l.map->impl.generator_params, id, &err);
  if (!l.module) {
    ADD_FAILURE() << err;
    return l;
  }
  l.fn = l.module->entry();
  if (!jit::kernel_c_source(gen->name, l.map->impl.generator_params, id, &c, &err)) {
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
  l.cfn = l.c->fn_as<void*>();
  return l;
}

}  // namespace cke::test
