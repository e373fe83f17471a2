// The generated providers' maps in kernel_maps/: they load with the real tree (schema,
// contracts, interface) and agree with the generator table.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "jit/generators.h"
#include "kernels/formats/layouts.h"
#include "resolver/host_caps.h"
#include "resolver/registry.h"
#include "tests/common/linear_call.h"
#include "tests/common/shared.h"

namespace cke::test {
namespace {

namespace fs = std::filesystem;

std::string describe(const std::vector<LoadError>& errors) {
  std::string s;
  for (const LoadError& e : errors) s += e.file + ": " + e.path + ": " + e.reason + "\n";
  return s;
}

// The generated providers' maps (kernel_maps/, production or candidate): each names a generator of
// this binary with parameters it takes, states exactly the generator's ISA and argument
// kinds, and is the reference's twin in contract, interface and ports, outranking it.
TEST(JitMaps, LoadWithTheRealTreeAndMatchTheGenerators) {
  const fs::path real = source_path("kernel_maps");
  std::vector<LoadError> errors;
  const std::optional<Registry> reg = Registry::load({real}, linked_symbols(), &errors);
  ASSERT_TRUE(reg) << describe(errors);
  std::vector<std::string> ours;
  std::set<std::string> generators_used;
  for (const KernelMap& m : reg->maps())
    if (!m.impl.generator.empty()) ours.push_back(m.id);
  ASSERT_FALSE(ours.empty());

  for (const std::string& id : ours) {
    SCOPED_TRACE(id);
    const KernelMap* m = reg->find_map(id);
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(m->impl.function.empty());
    const jit::Generator* g = jit::find_generator(m->impl.generator);
    ASSERT_NE(g, nullptr);
    generators_used.insert(std::string(g->name));
    // The id names the ISA, and a linear id its tile: <op>_<w>_f32_<rows>x<tokens>__<isa>.
    if (m->op == "linear") {
      const std::string tile =
          m->impl.generator_params.at("rows") + "x" + m->impl.generator_params.at("tokens");
      EXPECT_NE(id.find("_" + tile + "__"), std::string::npos);
    }
    EXPECT_EQ(id.substr(id.find("__")), std::string(g->name.substr(g->name.find("__"))));
    std::string err;
    EXPECT_NE(jit::generate_kernel(g->name, m->impl.generator_params, id, &err), nullptr) << err;
    std::vector<std::string> want, have;
    for (int i = 0; i < g->n_isa; ++i) want.emplace_back(g->isa[i]);
    for (Feature f : m->isa) have.emplace_back(feature_name(f));
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    EXPECT_EQ(have, want);
    // The same contract, interface and ports as the reference, which it outranks; it
    // runs in a subset of the reference's phases and admits a subset of its shapes.
    const Contract* c = reg->find_contract(m->contract);
    ASSERT_NE(c, nullptr);
    const KernelMap* ref = reg->find_map(c->reference);
    ASSERT_NE(ref, nullptr);
    // Arguments: ports are pointers, dims and ranges int64; params as the reference takes them.
    const KernelSymbol* ref_fn = find_kernel_symbol(ref->impl.function);
    ASSERT_NE(ref_fn, nullptr);
    ASSERT_EQ(m->call_abi.size(), g->n_args);
    ASSERT_EQ(ref_fn->n_args, g->n_args);
    for (size_t i = 0; i < m->call_abi.size(); ++i) {
      const AbiArg& a = m->call_abi[i];
      const ArgKind k = a.source == AbiArg::Source::Port    ? ArgKind::Ptr
                        : a.source == AbiArg::Source::Param ? ref_fn->args[i]
                                                            : ArgKind::I64;
      EXPECT_EQ(g->args[i], k) << a.text;
      EXPECT_EQ(g->args[i], ref_fn->args[i]) << a.text;
    }
    // The reference's interface, or (a provider reading a repacked copy of its weight) the
    // same ports with that weight's layout changed.
    bool repacked = false;
    for (const PortSpec& p : m->ports) repacked = repacked || find_weight_layout(p.layout);
    if (!repacked) {
      EXPECT_EQ(m->interface, ref->interface);
    } else {
      ASSERT_EQ(m->ports.size(), ref->ports.size());
      for (size_t i = 0; i < m->ports.size(); ++i) {
        const PortSpec &a = m->ports[i], &b = ref->ports[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.role, b.role);
        EXPECT_EQ(a.dtype, b.dtype);
        EXPECT_TRUE(a.layout == b.layout ||
                    (a.role == PortRole::Weight && find_weight_layout(a.layout)))
            << a.name << ": " << a.layout;
      }
    }
    // Production, or candidate where its map says why it is not promoted yet (a demotion
    // of a production provider is the ratchet's to catch: cke-audit).
    EXPECT_TRUE(m->selection.status == Status::Production ||
                m->selection.status == Status::Candidate)
        << int(m->selection.status);
    EXPECT_GT(m->selection.priority, ref->selection.priority);
    for (Phase p : m->selection.phases) EXPECT_TRUE(ref->selection.supports(p));
    for (const Expr& e : ref->shape_predicates) {
      bool found = false;
      for (const Expr& f : m->shape_predicates) found = found || f.text() == e.text();
      EXPECT_TRUE(found) << "drops the reference's predicate " << e.text();
    }
    EXPECT_EQ(m->parallel.changes_arithmetic, false);
  }
  // Every generator serves some provider.
  EXPECT_EQ(generators_used.size(), jit::generators().size());

  // Which hosts may run them: the AVX2 kernels on an AVX2 host, the AVX-512 ones not.
  const HostCaps avx2 = *HostCaps::for_level("avx2");
  const HostCaps vnni = *HostCaps::for_level("avx512_vnni");
  for (const std::string& id : ours) {
    if (id.find("__avx2") == std::string::npos) continue;
    for (Feature f : reg->find_map(id)->isa) EXPECT_TRUE(avx2.has(f)) << id;
  }
  for (const std::string& id : ours) {
    if (id.find("__avx512") == std::string::npos) continue;
    bool all = true;
    for (Feature f : reg->find_map(id)->isa) {
      EXPECT_TRUE(vnni.has(f)) << id;
      all = all && avx2.has(f);
    }
    EXPECT_FALSE(all) << id << " would be selected on an AVX2-only host";
  }
}

// tests/common/linear_call.h's table (which conversion a weight format's linear reads)
// agrees with the contracts: for every linear contract of the real tree, its `convert` names
// the contract whose reference kernel the table returns, and x has the table's type.
TEST(LinearCallTable, ContractsAgree) {
  const fs::path real = source_path("kernel_maps");
  std::vector<LoadError> errors;
  const std::optional<Registry> reg = Registry::load({real}, linked_symbols(), &errors);
  ASSERT_TRUE(reg) << describe(errors);
  int checked = 0;
  for (const Contract& c : reg->contracts()) {
    if (c.op != "linear") continue;
    SCOPED_TRACE(c.id);
    const DType w = *c.port("w")->dtype;
    const bool repacked = c.id.find("x8.ggml") != std::string::npos;
    const ActStepFn want = act_step_for(w, repacked);
    EXPECT_EQ(*c.port("x")->dtype, act_type_for(w));
    if (c.converts.empty()) {
      EXPECT_EQ(want, nullptr);
      continue;
    }
    ASSERT_EQ(c.converts.size(), 1u);
    const Contract* via = reg->find_contract(c.converts[0].via);
    ASSERT_NE(via, nullptr);
    const KernelSymbol* ref = find_kernel_symbol(via->reference);
    ASSERT_NE(ref, nullptr);
    EXPECT_EQ(ref->fn, reinterpret_cast<void*>(want));
    ++checked;
  }
  EXPECT_GE(checked, 15);
}

}  // namespace
}  // namespace cke::test
