// Property: the order in which map and contract files are read never changes a decision
// or the trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "resolver/data_file.h"
#include "resolver/xray.h"
#include "resolver_test_util.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

struct Files {
  std::vector<std::filesystem::path> maps, contracts;
};

Files tree_files(const std::filesystem::path& dir) {
  std::vector<LoadError> errors;
  Files f;
  for (auto& p : list_yaml_files(dir, &errors))
    if (p.filename() != "ratchet.yaml") f.maps.push_back(p);
  f.contracts = list_yaml_files(dir / "contracts", &errors);
  EXPECT_TRUE(errors.empty()) << format_errors(errors);
  return f;
}

std::string resolve_dump(const Files& f, const Graph& g, const SymbolLookup& symbols) {
  std::vector<LoadError> errors;
  std::optional<Registry> reg = Registry::load_files(f.maps, f.contracts, symbols, &errors);
  EXPECT_TRUE(reg) << format_errors(errors);
  if (!reg) return "";
  const HostCaps caps = *HostCaps::for_level("avx512");
  Resolution r = resolve(g, *reg, caps);
  std::string winners;
  for (const Step& s : r.steps) winners += s.provider->id + ";";
  return winners + "\n" + xray_trace(r, g, *reg, caps, {}).dump();
}

void check_permutations(Files f, const Graph& g, const SymbolLookup& symbols, int n) {
  const std::string want = resolve_dump(f, g, symbols);
  ASSERT_FALSE(want.empty());
  std::mt19937 rng(20240611);
  for (int i = 0; i < n; ++i) {
    if (i == 0) {
      std::reverse(f.maps.begin(), f.maps.end());
      std::reverse(f.contracts.begin(), f.contracts.end());
    } else {
      std::shuffle(f.maps.begin(), f.maps.end(), rng);
      std::shuffle(f.contracts.begin(), f.contracts.end(), rng);
    }
    ASSERT_EQ(resolve_dump(f, g, symbols), want) << "permutation " << i;
  }
}

TEST(Permutation, SeedFixtureAnyFileOrder) {
  Files f = tree_files(test::fixtures("seed/maps"));
  std::vector<LoadError> errors;
  std::optional<Circuit> c = load_circuit(test::fixtures("seed/circuits/seed.yaml"), &errors);
  ASSERT_TRUE(c);
  MapModelFacts facts;
  facts.set_key("seed.k", int64_t{64});
  facts.set_key("seed.n", int64_t{32});
  facts.set_tensor("w.weight", {DType::Q4_0, {64, 32}});
  std::optional<Graph> g = instantiate(*c, facts, {64, 8}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  check_permutations(f, *g, test::fake_linear_symbols(), 24);
}

TEST(Permutation, RealTreeAnyFileOrder) {
  // The real maps and the llama circuit (symbols not checked: this is about order only).
  Files f = tree_files(test::source_path("kernel_maps"));
  std::vector<LoadError> errors;
  std::optional<Circuit> c = load_circuit(test::source_path("circuits/llama.yaml"), &errors);
  ASSERT_TRUE(c) << format_errors(errors);
  MapModelFacts facts = test::stories_facts();
  facts.set_key("llama.block_count", int64_t{1});  // one layer holds every op kind
  std::optional<Graph> g = instantiate(*c, facts, {128, 32}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  check_permutations(f, *g, {}, 20);
}

}  // namespace
}  // namespace cke
