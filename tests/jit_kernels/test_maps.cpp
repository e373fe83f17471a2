// The staged kernel maps of the JIT providers (maps/, see maps/README.md): they load with
// the real tree (schema, contracts, interface) and agree with the generator table.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "jit/generators.h"
#include "resolver/host_caps.h"
#include "resolver/registry.h"
#include "tests/common/shared.h"

namespace cke::test {
namespace {

namespace fs = std::filesystem;


std::string describe(const std::vector<LoadError>& errors) {
  std::string s;
  for (const LoadError& e : errors) s += e.file + ": " + e.path + ": " + e.reason + "\n";
  return s;
}

// The generated providers' maps live in kernel_maps/ as `candidate` (cke-run
// --allow-candidate): they are bit-exact, but a generator cannot render itself as C yet, and
// production plans must stay emit-able (--emit-c fails closed on generators).
TEST(JitMaps, LoadWithTheRealTreeAndMatchTheGenerators) {
  const fs::path real = source_path("kernel_maps");
  std::vector<LoadError> errors;
  const std::optional<Registry> reg = Registry::load({real}, linked_symbols(), &errors);
  ASSERT_TRUE(reg) << describe(errors);
  std::vector<std::string> ours;
  for (const KernelMap& m : reg->maps())
    if (!m.impl.generator.empty()) ours.push_back(m.id);
  ASSERT_EQ(ours.size(), jit::generators().size());

  for (const std::string& id : ours) {
    SCOPED_TRACE(id);
    const KernelMap* m = reg->find_map(id);
    ASSERT_NE(m, nullptr);
    // The generator of the same name, its ISA and its argument kinds.
    EXPECT_TRUE(m->impl.function.empty());
    EXPECT_EQ(m->impl.generator, id);
    EXPECT_TRUE(m->impl.generator_params.empty());
    const jit::Generator* g = jit::find_generator(m->impl.generator);
    ASSERT_NE(g, nullptr);
    std::vector<std::string> want, have;
    for (int i = 0; i < g->n_isa; ++i) want.emplace_back(g->isa[i]);
    for (Feature f : m->isa) have.emplace_back(feature_name(f));
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    EXPECT_EQ(have, want);
    ASSERT_EQ(m->call_abi.size(), g->n_args);
    for (size_t i = 0; i < m->call_abi.size(); ++i) {
      const AbiArg& a = m->call_abi[i];
      const ArgKind k = a.source == AbiArg::Source::Port ? ArgKind::Ptr : ArgKind::I64;
      EXPECT_EQ(g->args[i], k) << a.text;
    }
    // The same contract, interface and ports as the reference, which it outranks.
    const Contract* c = reg->find_contract(m->contract);
    ASSERT_NE(c, nullptr);
    const KernelMap* ref = reg->find_map(c->reference);
    ASSERT_NE(ref, nullptr);
    EXPECT_EQ(m->interface, ref->interface);
    EXPECT_EQ(m->selection.status, Status::Candidate);
    EXPECT_GT(m->selection.priority, ref->selection.priority);
    EXPECT_EQ(m->selection.phases, ref->selection.phases);
    EXPECT_EQ(m->shape_predicates.size(), ref->shape_predicates.size());
    EXPECT_EQ(m->parallel.changes_arithmetic, false);
  }

  // Which hosts may run them: the AVX2 kernels on an AVX2 host, the AVX-512 ones not.
  const HostCaps avx2 = *HostCaps::for_level("avx2");
  const HostCaps vnni = *HostCaps::for_level("avx512_vnni");
  for (const char* id : {"linear_q8_0_f32__avx2", "linear_q4_0_f32__avx2"})
    for (Feature f : reg->find_map(id)->isa) EXPECT_TRUE(avx2.has(f)) << id;
  for (const char* id :
       {"linear_q8_0_f32__avx512vnni", "linear_q4_0_f32__avx512vnni", "linear_f32_f32__avx512"}) {
    bool all = true;
    for (Feature f : reg->find_map(id)->isa) {
      EXPECT_TRUE(vnni.has(f)) << id;
      all = all && avx2.has(f);
    }
    EXPECT_FALSE(all) << id << " would be selected on an AVX2-only host";
  }
}

}  // namespace
}  // namespace cke::test
