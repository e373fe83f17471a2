// The generator table: names, ISA names, argument kinds equal to the reference kernels'
// (so a map's call_abi checked against either agrees), errors as values.
#include <gtest/gtest.h>

#include <set>

#include "jit/generators.h"
#include "jit_test_util.h"
#include "kernels/registry.h"
#include "resolver/features.h"

namespace cke::test {
namespace {

TEST(JitGenerators, TableIsConsistent) {
  std::set<std::string_view> names;
  ASSERT_FALSE(jit::generators().empty());
  for (const jit::Generator& g : jit::generators()) {
    SCOPED_TRACE(std::string(g.name));
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate generator name";
    EXPECT_EQ(jit::find_generator(g.name), &g);
    EXPECT_NE(g.generate, nullptr);
    EXPECT_GT(g.n_isa, 0);
    for (int i = 0; i < g.n_isa; ++i)
      EXPECT_TRUE(feature_from_name(g.isa[i]).has_value()) << "unknown feature " << g.isa[i];
    // Same argument kinds as the reference kernel of the contract.
    const KernelSymbol* ref =
        find_kernel_symbol(std::string(g.name.substr(0, g.name.find("__"))) + "__ref");
    ASSERT_NE(ref, nullptr);
    ASSERT_EQ(g.n_args, ref->n_args);
    for (int i = 0; i < g.n_args; ++i) EXPECT_EQ(g.args[i], ref->args[i]) << "argument " << i;
  }
}

TEST(JitGenerators, UnknownNameAndParamsAreErrors) {
  std::string err;
  EXPECT_EQ(jit::find_generator("linear_q8_0_f32__nope"), nullptr);
  EXPECT_EQ(jit::generate_kernel("linear_q8_0_f32__nope", {}, &err), nullptr);
  EXPECT_NE(err.find("unknown JIT generator"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(jit::generate_kernel("linear_q8_0_f32__avx2", {{"unroll", "4"}}, &err), nullptr);
  EXPECT_NE(err.find("unroll"), std::string::npos) << err;
}

// Emitting needs no particular CPU: every generator produces code anywhere.
TEST(JitGenerators, EveryGeneratorEmits) {
  for (const jit::Generator& g : jit::generators()) {
    std::string err;
    auto m = jit::generate_kernel(g.name, {}, &err);
    ASSERT_NE(m, nullptr) << g.name << ": " << err;
    EXPECT_EQ(m->name(), g.name);
    EXPECT_NE(m->entry(), nullptr);
    EXPECT_GT(m->code_size(), 64u);
  }
}

}  // namespace
}  // namespace cke::test
