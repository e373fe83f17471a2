// The engine's repack step end to end, per layout (stories260K-Q4_0 / -Q8_0: their
// matrices with 16-row multiples run on the q4_0_r16 / q8_0_r16 copy at AVX-512 VNNI): the
// same logits, bit for bit, as the plan that reads the file's blocks (--no-repack; same
// contract), the copy named in the plan and counted in the stats, and one copy shared by
// engines of the same file and plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "resolver/host_caps.h"
#include "runtime/core/engine.h"
#include "runtime/gguf/synth.h"
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
std::vector<float> run(Engine& e,
                       const std::vector<int32_t>& prompt = {1, 403, 407, 263, 431, 292, 127},
                       const std::vector<int32_t>& next = {338, 263, 217}) {
  std::vector<float> all, l;
  std::string err;
  EXPECT_TRUE(e.eval(prompt, &l, true, &err)) << err;
  all = l;
  for (int32_t t : next) {
    EXPECT_TRUE(e.eval(std::vector<int32_t>{t}, &l, false, &err)) << err;
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

struct RepackCase {
  const char* model;   // under ../shared/models/synthetic/
  const char* layout;  // what its plan reads
};

class Repack : public ::testing::TestWithParam<RepackCase> {};

TEST_P(Repack, SameBitsAsTheFileBlocksAndOneCopyPerFile) {
  const RepackCase& rc = GetParam();
  CKE_REQUIRE_SHARED(path, std::string("models/synthetic/") + rc.model);
  if (!HostCaps::probe().has(Feature::avx512vnni))
    GTEST_SKIP() << "host lacks avx512vnni: no " << rc.layout << " provider runs here";
  const std::string tag = std::string("@") + rc.layout;
  auto plain = load(path, true);
  auto a = load(path, false);
  ASSERT_TRUE(plain && a);
  EXPECT_EQ(plain->stats().repack_bytes, 0);
  EXPECT_EQ(plain->plan_text().find(tag), std::string::npos);
  EXPECT_GT(a->stats().repack_bytes, 0);
  EXPECT_FALSE(a->stats().repack_reused);
  EXPECT_NE(a->plan_text().find(tag), std::string::npos);
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

// A copy of more than one huge page (2 MiB) takes the other allocation (engine.cpp
// AlignedBuf: 2 MiB-aligned, transparent huge pages, faulted by the repack writers): a Q4_0
// llama synthesized here with 3.8 MiB of q4_0_r16 copy, the same bits as its file blocks.
TEST(RepackHugeCopy, SameBitsAsTheFileBlocks) {
  if (!HostCaps::probe().has(Feature::avx512vnni))
    GTEST_SKIP() << "host lacks avx512vnni: no q4_0_r16 provider runs here";
  struct TempDir {  // removed at scope exit, also when an assertion returns early
    std::filesystem::path p =
        std::filesystem::temp_directory_path() / ("cke_repack_huge_" + std::to_string(::getpid()));
    TempDir() { std::filesystem::create_directories(p); }
    ~TempDir() { std::filesystem::remove_all(p); }
  } dir;
  const std::string path = (dir.p / "llama-q4_0.gguf").string();
  std::string why;
  auto c = gguf::synth_preset("tiny", "llama", &why);
  ASSERT_TRUE(c) << why;
  ASSERT_TRUE(
      gguf::synth_apply_dims(&*c, "n_embd=512,n_head=8,n_head_kv=8,n_ff=1536,n_layer=2", &why))
      << why;
  c->type = DType::Q4_0;
  gguf::GgufError gerr;
  ASSERT_TRUE(gguf::synth_write(*c, nullptr, path, &gerr)) << gerr.message;
  auto plain = load(path, true);
  auto a = load(path, false);
  ASSERT_TRUE(plain && a);
  EXPECT_GT(a->stats().repack_bytes, int64_t(2) << 20);
  EXPECT_NE(a->plan_text().find("@q4_0_r16"), std::string::npos);
  // Token ids of the built-in 354-token vocabulary.
  const std::vector<int32_t> prompt = {1, 303, 307, 263, 331, 292, 127}, next = {338, 263, 217};
  const std::vector<float> want = run(*plain, prompt, next), got = run(*a, prompt, next);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Repack,
                         ::testing::Values(RepackCase{"stories260K-Q4_0.gguf", "q4_0_r16"},
                                           RepackCase{"stories260K-Q8_0.gguf", "q8_0_r16"}),
                         [](const ::testing::TestParamInfo<RepackCase>& i) {
                           return std::string(i.param.layout);
                         });

}  // namespace
}  // namespace cke
