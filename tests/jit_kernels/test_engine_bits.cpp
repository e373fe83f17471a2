// End to end: a model compiled with the JIT providers (their maps of kernel_maps/, which are
// `candidate` there, promoted to production in a copy of the tree) produces logits bit-identical to the same model on the reference providers,
// in prefill (every row; the T % 4 gemv tail of q4_0 included) and in decode, at every
// ISA level this host has. The plan is checked to really contain the JIT providers.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "resolver/features.h"
#include "resolver/host_caps.h"
#include "runtime/core/engine.h"
#include "tests/common/shared.h"

namespace cke::test {
namespace {

struct Logits {
  std::vector<float> prefill, decode;
  std::string plan;
};

// kernel_maps/ with the generated providers promoted to production (they rank first then).
std::string promoted_maps() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / ("cke_jitmaps_" + std::to_string(getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::copy(source_path("kernel_maps"), d, std::filesystem::copy_options::recursive);
    for (const auto& e : std::filesystem::directory_iterator(d)) {
      if (e.path().extension() != ".yaml") continue;
      std::ifstream in(e.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("impl: {generator:") == std::string::npos) continue;
      const auto at = text.find("status: candidate");
      if (at != std::string::npos) text.replace(at, 17, "status: production");
      std::ofstream(e.path()) << text;
    }
    return d.string();
  }();
  return dir;
}

Logits run(const std::string& model, const std::string& isa, bool jit, std::string* err) {
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 64;
  o.n_batch = 16;
  o.n_threads = 2;
  o.isa = isa;
  if (jit) o.kernel_map_dirs = {promoted_maps()};
  Logits r;
  auto e = Engine::load(o, err);
  if (!e) return r;
  r.plan = e->plan_text();
  const std::vector<int32_t> prompt = {1, 15, 200, 33, 7, 91, 250, 2, 64};
  if (!e->eval(prompt, &r.prefill, true, err)) return r;
  std::vector<float> row;
  int32_t t = 5;
  for (int k = 0; k < 3; ++k) {
    if (!e->eval({&t, 1}, &row, false, err)) return r;
    r.decode.insert(r.decode.end(), row.begin(), row.end());
    t = int32_t((t * 7 + 11) % 200);
  }
  return r;
}

TEST(JitEngine, LogitsBitIdenticalToReferenceProviders) {
  CKE_REQUIRE_SHARED(dir, "models/synthetic");
  const HostCaps host = HostCaps::probe();
  int compared = 0;
  for (const char* level : {"avx2", "avx512_vnni"}) {
    if (!host.features.contains(*isa_level_features(level))) continue;
    for (const char* m :
         {"stories260K-Q4_0", "stories260K-Q8_0", "synth-llama-F32", "synth-qwen3-Q8_0"}) {
      const std::string model = dir + "/" + m + ".gguf";
      if (!std::filesystem::exists(model)) continue;
      SCOPED_TRACE(std::string(m) + " at " + level);
      std::string err;
      const Logits ref = run(model, level, false, &err);
      ASSERT_EQ(err, "");
      const Logits jit = run(model, level, true, &err);
      ASSERT_EQ(err, "");
      EXPECT_EQ(ref.plan.find("__avx"), std::string::npos);
      // (No AVX2 generator for f32 weights: that plan is the reference's.)
      const bool f32_on_avx2 =
          std::string(level) == "avx2" && std::string(m).find("F32") != std::string::npos;
      EXPECT_EQ(jit.plan.find("__avx") != std::string::npos, !f32_on_avx2) << jit.plan;
      ASSERT_EQ(ref.prefill.size(), jit.prefill.size());
      ASSERT_EQ(ref.decode.size(), jit.decode.size());
      ASSERT_FALSE(ref.prefill.empty());
      EXPECT_EQ(std::memcmp(ref.prefill.data(), jit.prefill.data(), ref.prefill.size() * 4), 0);
      EXPECT_EQ(std::memcmp(ref.decode.data(), jit.decode.data(), ref.decode.size() * 4), 0);
      ++compared;
    }
  }
  if (compared == 0) GTEST_SKIP() << "no ISA level with JIT kernels on this host, or no models";
}

}  // namespace
}  // namespace cke::test
