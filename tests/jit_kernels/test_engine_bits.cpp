// End to end: a model compiled with the default maps (generated linear providers at the
// ISA level) produces logits bit-identical to the same model on the reference providers
// (`--isa scalar`),
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

// `isa` "scalar" leaves only the reference providers (every generated one needs AVX2).
Logits run(const std::string& model, const std::string& isa, std::string* err) {
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 64;
  o.n_batch = 16;
  o.n_threads = 2;
  o.isa = isa;
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
  for (const char* level : {"avx2", "avx_vnni", "avx512_vnni"}) {
    if (!host.features.contains(*isa_level_features(level))) continue;
    for (const char* m :
         {"stories260K-Q4_0", "stories260K-Q8_0", "synth-llama-F32", "synth-qwen3-Q8_0"}) {
      const std::string model = dir + "/" + m + ".gguf";
      if (!std::filesystem::exists(model)) continue;
      SCOPED_TRACE(std::string(m) + " at " + level);
      std::string err;
      const Logits ref = run(model, "scalar", &err);
      ASSERT_EQ(err, "");
      const Logits jit = run(model, level, &err);
      ASSERT_EQ(err, "");
      EXPECT_EQ(ref.plan.find("__avx"), std::string::npos);
      // Every linear of a format with generators (q8_0, q4_0, f32) is a generated provider
      // in the default plan; other formats (the f16 output of some files) stay reference.
      for (size_t at = jit.plan.find(" linear_"); at != std::string::npos;
           at = jit.plan.find(" linear_", at + 1)) {
        const std::string id = jit.plan.substr(at + 1, jit.plan.find('(', at) - at - 1);
        for (const char* w : {"linear_q8_0_", "linear_q4_0_", "linear_f32_"})
          EXPECT_FALSE(id.rfind(w, 0) == 0 && id.find("__ref") != std::string::npos) << id;
      }
      EXPECT_NE(jit.plan.find("__avx"), std::string::npos) << jit.plan;
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
