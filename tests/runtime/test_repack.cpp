// The engine's repack step end to end (stories260K-Q4_0: its q4_0 matrices with 16-row
// multiples run on the q4_0_r16 copy at AVX-512 VNNI): the same logits, bit for bit, as the
// plan that reads the file's blocks (--no-repack; same contract), the copy named in the
// plan and counted in the stats, and one copy shared by engines of the same file and plan.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "resolver/host_caps.h"
#include "runtime/core/engine.h"
#include "tests/common/engine_load.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

std::unique_ptr<Engine> load(const std::string& path, bool no_repack) {
  EngineOptions o;
  o.model_path = path;
  o.n_ctx = 64;
  o.n_threads = 2;
  o.no_repack = no_repack;
  return test::load_engine(o);
}

// Logits of a prompt (prefill, every row) and three decode steps.
std::vector<float> run(Engine& e) {
  const std::vector<int32_t> prompt = {1, 403, 407, 263, 431, 292, 127};
  std::vector<float> all, l;
  std::string err;
  EXPECT_TRUE(e.eval(prompt, &l, true, &err)) << err;
  all = l;
  for (int32_t t : {338, 263, 217}) {
    EXPECT_TRUE(e.eval(std::vector<int32_t>{t}, &l, false, &err)) << err;
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

TEST(Repack, SameBitsAsTheFileBlocksAndOneCopyPerFile) {
  CKE_REQUIRE_SHARED(path, "models/synthetic/stories260K-Q4_0.gguf");
  if (!HostCaps::probe().has(Feature::avx512vnni))
    GTEST_SKIP() << "host lacks avx512vnni: no q4_0_r16 provider runs here";
  auto plain = load(path, true);
  auto a = load(path, false);
  ASSERT_TRUE(plain && a);
  EXPECT_EQ(plain->stats().repack_bytes, 0);
  EXPECT_EQ(plain->plan_text().find("@q4_0_r16"), std::string::npos);
  EXPECT_GT(a->stats().repack_bytes, 0);
  EXPECT_FALSE(a->stats().repack_reused);
  EXPECT_NE(a->plan_text().find("@q4_0_r16"), std::string::npos);
  const std::vector<float> want = run(*plain), got = run(*a);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);

  // A second engine of the same file and plan reads the first one's copy.
  auto b = load(path, false);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->stats().repack_reused);
  const std::vector<float> again = run(*b);
  EXPECT_EQ(std::memcmp(again.data(), want.data(), want.size() * sizeof(float)), 0);
  // Once no engine holds it, the copy is gone: the next engine makes its own.
  a.reset();
  b.reset();
  auto c = load(path, false);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->stats().repack_reused);
}

}  // namespace
}  // namespace cke
