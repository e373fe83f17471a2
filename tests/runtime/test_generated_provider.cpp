// A provider whose map says `impl.generator` gets its kernel generated at compile time and
// runs in the plan like any other; its logits equal the reference provider's bit for bit
// (same contract, bit_exact), and --emit-c renders its C. The map is added the way a user
// would: --kernel-maps DIR, with a tile of its own choosing in impl.params.
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

// kernel_maps/ plus one map: the reference q8_0 map turned into a generated provider `id`
// of generator `gen` with impl.params `params`, outranking the default maps.
std::string maps_with_generated_q8_0(const std::string& id, const std::string& gen,
                                     const std::string& params, const std::string& isa) {
  const fs::path dir = fs::temp_directory_path() / ("cke_genmaps_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::copy(test::source_path("kernel_maps"), dir, fs::copy_options::recursive);
  std::ifstream in(test::source_path("kernel_maps/linear_q8_0_f32__ref.yaml"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string m = ss.str();
  m = std::regex_replace(m, std::regex("id: linear_q8_0_f32__ref"), "id: " + id);
  m = std::regex_replace(m, std::regex("priority: 100"), "priority: 900");
  m = std::regex_replace(m, std::regex("isa: \\[\\]"), "isa: [" + isa + "]");
  m = std::regex_replace(m, std::regex("impl: \\{function: linear_q8_0_f32__ref\\}"),
                         "impl: {generator: " + gen + ", params: {" + params + "}}");
  std::ofstream(dir / (id + ".yaml")) << m;
  return dir.string();
}

std::vector<float> logits(const std::string& model, const std::string& maps, const std::string& isa,
                          std::string* plan) {
  EngineOptions o;
  o.model_path = model;
  o.isa = isa;
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

TEST(GeneratedProvider, UserMapWithItsOwnTileRunsInThePlanAndRendersAsC) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q8_0.gguf");
  const HostCaps caps = HostCaps::probe();
  for (Feature f : {Feature::avx512f, Feature::avx512bw, Feature::avx512vl, Feature::avx512vnni})
    if (!caps.has(f)) GTEST_SKIP() << "host lacks AVX-512 VNNI";
  const std::string id = "linear_q8_0_f32_2x3__avx512vnni_user";
  const std::string maps =
      maps_with_generated_q8_0(id, "linear_q8_0__avx512vnni", "rows: 2, tokens: 3",
                               "avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni");
  std::string plan_ref, plan_jit;
  const auto ref = logits(model, "", "scalar", &plan_ref);  // reference providers only
  const auto jit = logits(model, maps, "", &plan_jit);
  EXPECT_EQ(plan_ref.find("__avx512vnni"), std::string::npos);
  EXPECT_NE(plan_jit.find(id), std::string::npos);
  ASSERT_EQ(ref.size(), jit.size());
  ASSERT_FALSE(ref.empty());
  EXPECT_EQ(0, std::memcmp(ref.data(), jit.data(), ref.size() * sizeof(float)));

  // --emit-c renders the user's kernel from the same description: its C function is in
  // cke_kernels.c, defined, not declared extern.
  EngineOptions o;
  o.model_path = model;
  o.kernel_map_dirs = {maps};
  std::string err;
  auto e = Engine::load(o, &err);
  ASSERT_TRUE(e) << err;
  const fs::path out = fs::temp_directory_path() / ("cke_emit_gen_" + std::to_string(getpid()));
  ASSERT_TRUE(e->emit_c(out.string(), &err)) << err;
  std::ifstream kin(out / "cke_kernels.c"), pin(out / "cke_plan.c");
  std::stringstream ks, ps;
  ks << kin.rdbuf();
  ps << pin.rdbuf();
  EXPECT_NE(ks.str().find("\nvoid " + id + "(void* p0"), std::string::npos);
  EXPECT_NE(ks.str().find("generator linear_q8_0__avx512vnni, rows 2, tokens 3"),
            std::string::npos);
  EXPECT_EQ(ps.str().find("extern void " + id), std::string::npos);
  fs::remove_all(out);
  fs::remove_all(maps);
}

TEST(GeneratedProvider, UnknownGeneratorFailsTheCompileNamingIt) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q8_0.gguf");
  const std::string maps =
      maps_with_generated_q8_0("linear_q8_0_f32__mine", "linear_q8_0__nosuchgen", "", "");
  EngineOptions o;
  o.model_path = model;
  o.kernel_map_dirs = {maps};
  std::string err;
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("linear_q8_0__nosuchgen"), std::string::npos) << err;
  fs::remove_all(maps);
}

}  // namespace
}  // namespace cke
