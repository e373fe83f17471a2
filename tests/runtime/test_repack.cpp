// The engine's repack step end to end, per layout (stories260K-Q4_0 / -Q8_0: their
// matrices with 16-row multiples run on the q4_0_r16 / q8_0_r16 copy at AVX-512 VNNI): the
// same logits, bit for bit, as the plan that reads the file's blocks (--no-repack; same
// contract), the copy named in the plan and counted in the stats, and one copy shared by
// engines of the same file and plan.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "resolver/host_caps.h"
#include "runtime/core/engine.h"
#include "runtime/gguf/synth.h"
#include "tests/common/engine_load.h"
#include "tests/common/files.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

using test::TempDir;

std::unique_ptr<Engine> load(const std::string& path, bool no_repack, bool mmap_weights = false) {
  EngineOptions o;
  o.model_path = path;
  o.n_ctx = 64;
  o.n_threads = 2;
  o.no_repack = no_repack;
  o.mmap_weights = mmap_weights;
  return test::load_engine(o);
}

// A llama of `type` synthesized into dir (n_embd 512, 2 layers: a few MiB of weights).
std::string synth_llama(const TempDir& dir, DType type, const std::string& name) {
  const std::string path = (dir.path / name).string();
  std::string why;
  auto c = gguf::synth_preset("tiny", "llama", &why);
  EXPECT_TRUE(c) << why;
  if (!c) return "";
  EXPECT_TRUE(
      gguf::synth_apply_dims(&*c, "n_embd=512,n_head=8,n_head_kv=8,n_ff=1536,n_layer=2", &why))
      << why;
  c->type = type;
  gguf::GgufError gerr;
  EXPECT_TRUE(gguf::synth_write(*c, nullptr, path, &gerr)) << gerr.message;
  return path;
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
  const TempDir dir("cke_repack_huge_");
  const std::string path = synth_llama(dir, DType::Q4_0, "llama-q4_0.gguf");
  ASSERT_FALSE(path.empty());
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

// plan_only (cke-run --plan / --emit-c): the same plan and the same emitted C as an engine
// that runs, with no weight copy made and no memory check (a limit of one byte refuses the
// running engine, not this one); running it is an error, not a crash.
TEST(PlanOnly, SamePlanAndCWithoutCopiesOrMemory) {
  const TempDir dir("cke_plan_only_");
  const std::string path = synth_llama(dir, DType::Q4_0, "llama-q4_0.gguf");
  ASSERT_FALSE(path.empty());
  EngineOptions o;
  o.model_path = path;
  o.n_ctx = 64;
  o.n_threads = 2;
  auto full = test::load_engine(o);
  o.plan_only = true;
  o.memory_limit_bytes = 1;
  auto plan = test::load_engine(o);
  ASSERT_TRUE(full && plan);
  EXPECT_EQ(plan->plan_text(), full->plan_text());
  EXPECT_EQ(plan->stats().repack_bytes, 0);
  EXPECT_EQ(plan->stats().weight_copy_bytes, 0);
  if (HostCaps::probe().has(Feature::avx512vnni)) {
    EXPECT_GT(full->stats().repack_bytes, 0);
  }
  std::string err;
  const TempDir a("cke_plan_only_full_"), b("cke_plan_only_plan_");
  ASSERT_TRUE(full->emit_c(a.path.string(), &err)) << err;
  ASSERT_TRUE(plan->emit_c(b.path.string(), &err)) << err;
  for (const char* f : {"cke_plan.h", "cke_plan.c"}) {
    const std::string ca = test::read_file(a.path / f), cb = test::read_file(b.path / f);
    EXPECT_FALSE(ca.empty()) << f;
    EXPECT_EQ(ca, cb) << f;
  }
  std::vector<float> logits;
  err.clear();
  EXPECT_FALSE(plan->eval(std::vector<int32_t>{1, 303}, &logits, false, &err));
  EXPECT_NE(err.find("plan_only"), std::string::npos) << err;
  const int32_t seq = 0, tok = 303;
  err.clear();
  EXPECT_FALSE(plan->decode_batch({&seq, 1}, {&tok, 1}, &logits, &err));
  EXPECT_NE(err.find("plan_only"), std::string::npos) << err;

  o.plan_only = false;  // the same limit refuses the engine that runs
  err.clear();
  EXPECT_EQ(Engine::load(o, &err), nullptr);
  EXPECT_NE(err.find("needs"), std::string::npos) << err;
}

// The weights read in the file's layout (an F16 llama: every matrix) are a copy in 2 MiB
// pages made at load (engine.cpp place_weights), unless --mmap-weights: the same bits either
// way; and the copy is what the plan reads: once the file's output.weight is overwritten on
// disk (the page cache the mapping shows), the engine on the mapping computes other logits,
// the engine on the copy the same.
TEST(WeightCopy, PlanReadsTheCopyWithTheFilesBits) {
  const TempDir dir("cke_weight_copy_");
  const std::string path = synth_llama(dir, DType::F16, "llama-f16.gguf");
  ASSERT_FALSE(path.empty());
  const std::vector<int32_t> prompt = {1, 303, 307, 263, 331, 292, 127}, next = {338, 263, 217};
  auto copy = load(path, false), mapped = load(path, false, true);
  ASSERT_TRUE(copy && mapped);
  const bool thp = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string s;
    std::getline(f, s);
    return s.find("[never]") == std::string::npos && !s.empty();
  }();
  EXPECT_EQ(mapped->stats().weight_pages, "file mapping (--mmap-weights)");
  EXPECT_EQ(mapped->stats().weight_copy_bytes, 0);
  if (!thp) GTEST_SKIP() << "no transparent huge pages here: " << copy->stats().weight_pages;
  EXPECT_EQ(copy->stats().weight_pages, "2 MiB pages (copy)");
  EXPECT_GT(copy->stats().weight_copy_bytes, int64_t(2) << 20);
  EXPECT_LE(copy->stats().weight_copy_bytes, copy->stats().file_bytes);
  const std::vector<float> want = run(*mapped, prompt, next), got = run(*copy, prompt, next);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);

  // Overwrite output.weight in the file: a pattern of finite F16 values.
  gguf::GgufError gerr;
  auto f = gguf::File::open(path, &gerr);
  ASSERT_TRUE(f) << gerr.message;
  const gguf::TensorInfo* out = f->tensor("output.weight");
  ASSERT_TRUE(out);
  const size_t at = size_t(out->data - f->bytes().data());
  std::vector<uint8_t> junk(out->n_bytes);
  for (size_t i = 0; i < junk.size(); i += 2) junk[i + 1] = uint8_t(0x30 + (i / 2) % 7);
  f.reset();
  {
    std::fstream w(path, std::ios::in | std::ios::out | std::ios::binary);
    w.seekp(std::streamoff(at));
    w.write(reinterpret_cast<const char*>(junk.data()), std::streamsize(junk.size()));
    ASSERT_TRUE(w.good());
  }
  copy->rewind(0);
  mapped->rewind(0);
  const std::vector<float> from_copy = run(*copy, prompt, next),
                           from_map = run(*mapped, prompt, next);
  EXPECT_EQ(std::memcmp(from_copy.data(), want.data(), want.size() * sizeof(float)), 0)
      << "the copy engine read the file";
  EXPECT_NE(std::memcmp(from_map.data(), want.data(), want.size() * sizeof(float)), 0)
      << "the mapped engine did not see the new bytes";
}

INSTANTIATE_TEST_SUITE_P(Layouts, Repack,
                         ::testing::Values(RepackCase{"stories260K-Q4_0.gguf", "q4_0_r16"},
                                           RepackCase{"stories260K-Q8_0.gguf", "q8_0_r16"}),
                         [](const ::testing::TestParamInfo<RepackCase>& i) {
                           return std::string(i.param.layout);
                         });

}  // namespace
}  // namespace cke
