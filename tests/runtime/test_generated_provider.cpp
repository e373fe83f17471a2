// A provider whose map says `impl.generator` gets its kernel generated at compile time and
// runs in the plan like any other; its logits equal the reference provider's bit for bit
// (same contract, bit_exact). The map is added the way a user would: --kernel-maps DIR.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "resolver/host_caps.h"
#include "runtime/core/engine.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

// kernel_maps/ plus one map: the reference q8_0 map turned into a generated provider.
std::string maps_with_generated_q8_0(const std::string& gen, const std::string& isa) {
  const fs::path dir = fs::temp_directory_path() / ("cke_genmaps_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(test::source_path("kernel_maps"), dir, fs::copy_options::recursive);
  std::ifstream in(test::source_path("kernel_maps/linear_q8_0_f32__ref.yaml"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string m = ss.str();
  m = std::regex_replace(m, std::regex("id: linear_q8_0_f32__ref"), "id: " + gen);
  m = std::regex_replace(m, std::regex("priority: 100"), "priority: 200");
  m = std::regex_replace(m, std::regex("isa: \\[\\]"), "isa: [" + isa + "]");
  m = std::regex_replace(m, std::regex("impl: \\{function: linear_q8_0_f32__ref\\}"),
                         "impl: {generator: " + gen + "}");
  std::ofstream(dir / (gen + ".yaml")) << m;
  return dir.string();
}

std::vector<float> logits(const std::string& model, const std::string& maps, std::string* plan) {
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 64;
  o.n_threads = 2;
  if (!maps.empty()) o.kernel_map_dirs = {maps};
  std::string err;
  auto e = Engine::load(o, &err);
  EXPECT_TRUE(e) << err;
  if (!e) return {};
  *plan = e->plan_text();
  std::vector<int32_t> ids = {1, 403, 407, 261, 378, 300, 301, 302, 303};
  std::vector<float> out, row;
  EXPECT_TRUE(e->eval(ids, &out, true, &err)) << err;
  for (int32_t t : {410, 281, 306}) {
    EXPECT_TRUE(e->eval({&t, 1}, &row, true, &err)) << err;
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

TEST(GeneratedProvider, JitQ8_0KernelRunsInThePlanAndMatchesTheReferenceBitForBit) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q8_0.gguf");
  const HostCaps caps = HostCaps::probe();
  for (Feature f : {Feature::avx512f, Feature::avx512bw, Feature::avx512vl, Feature::avx512vnni})
    if (!caps.has(f)) GTEST_SKIP() << "host lacks AVX-512 VNNI";
  const std::string maps = maps_with_generated_q8_0("linear_q8_0_f32__avx512vnni",
                                                    "avx512f, avx512bw, avx512vl, avx512vnni");
  std::string plan_ref, plan_jit;
  const auto ref = logits(model, "", &plan_ref);
  const auto jit = logits(model, maps, &plan_jit);
  EXPECT_EQ(plan_ref.find("__avx512vnni"), std::string::npos);
  EXPECT_NE(plan_jit.find("linear_q8_0_f32__avx512vnni"), std::string::npos);
  ASSERT_EQ(ref.size(), jit.size());
  ASSERT_FALSE(ref.empty());
  EXPECT_EQ(0, std::memcmp(ref.data(), jit.data(), ref.size() * sizeof(float)));

  // --emit-c fails closed on a generated provider, naming it (it cannot render itself as C
  // yet, and another kernel is never substituted).
  EngineOptions o;
  o.model_path = model;
  o.kernel_map_dirs = {maps};
  std::string err;
  auto e = Engine::load(o, &err);
  ASSERT_TRUE(e) << err;
  EXPECT_FALSE(e->emit_c((fs::temp_directory_path() / "cke_emit_gen").string(), &err));
  EXPECT_NE(err.find("linear_q8_0_f32__avx512vnni"), std::string::npos) << err;
  fs::remove_all(maps);
}

TEST(GeneratedProvider, UnknownGeneratorFailsTheCompileNamingIt) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q8_0.gguf");
  const std::string maps = maps_with_generated_q8_0("linear_q8_0_f32__nosuchgen", "");
  EngineOptions o;
  o.model_path = model;
  o.kernel_map_dirs = {maps};
  std::string err;
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("linear_q8_0_f32__nosuchgen"), std::string::npos) << err;
  fs::remove_all(maps);
}

}  // namespace
}  // namespace cke
