// --emit-c: the emitted C (the plan and the C of every generated kernel in it), compiled by
// the system C compiler, computes the same bits as the JIT (memcmp of every logit, prefill
// and decode, 1 and 2 threads) at the probed ISA for every reference model and at --isa avx2
// for a subset whose plans use every AVX2 provider of them all; the emission is
// deterministic; a plan for a capped ISA emits and compiles; a mismatched plan is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "runtime/core/engine.h"
#include "tests/common/shared.h"
#include "tests/runtime/reference.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string temp_dir(std::string name) {
  for (char& ch : name)
    if (ch == '/') ch = '_';  // "next/<model>" stems: one directory
  const fs::path d =
      fs::temp_directory_path() / ("cke_emit_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d.string();
}

std::unique_ptr<Engine> load(const std::string& model, int threads, const std::string& emitted = "",
                             const std::string& isa = "", const std::string& cache_type = "f32") {
  EngineOptions o;
  o.cache_type = cache_type;
  o.model_path = model;
  o.n_ctx = 256;
  o.n_threads = threads;
  o.run_emitted_dir = emitted;
  o.isa = isa;
  std::string err;
  auto e = Engine::load(o, &err);
  EXPECT_TRUE(e) << err;
  return e;
}

// All logits of: every sequence's prefill (last row alone, then every row), then its
// reference greedy tokens one decode step at a time.
std::vector<float> all_logits(Engine& e, const test::RefModel& ref) {
  std::vector<float> out, rows;
  std::string err;
  for (const auto& s : ref.sequences) {
    e.rewind(0);
    EXPECT_TRUE(e.eval(s.eval_ids, &rows, false, &err)) << err;  // the output tail alone
    out.insert(out.end(), rows.begin(), rows.end());
    e.rewind(0);
    EXPECT_TRUE(e.eval(s.eval_ids, &rows, true, &err)) << err;
    out.insert(out.end(), rows.begin(), rows.end());
    for (size_t k = 0; k + 1 < s.exact.greedy.size(); ++k) {
      EXPECT_TRUE(e.eval({&s.exact.greedy[k], 1}, &rows, true, &err)) << err;
      out.insert(out.end(), rows.begin(), rows.end());
    }
  }
  return out;
}

class EmitC : public ::testing::TestWithParam<std::string> {};

// The models whose plans EmitC also runs at --isa avx2. Each model's whole plan compiled as C
// at -O2 is most of this suite's time, and every kernel's C is already compared with its JIT
// kernel alone (JitLinear, JitOps, ...); what the model level adds is the plan's glue around
// them. So the AVX2 half runs on these models only: together their AVX2 plans use every
// provider id that any reference model's AVX2 plan uses (EmitCAvx2Cover checks that, and
// names the model to add when a new one brings a provider of its own).
const std::set<std::string> kAvx2Stems = {"stories260K-BF16",         "stories260K-F16",
                                          "stories260K-Q4_0",         "stories260K-Q4_1",
                                          "stories260K-Q5_0",         "stories260K-Q5_1",
                                          "synth-gemma3-F32",         "synth-llama-Q2_K",
                                          "synth-llama-Q3_K_M",       "synth-llama-Q5_K_M",
                                          "synth-llama-Q6_K",         "next/synth-glm4-Q4_K_M",
                                          "next/synth-llamamoe-F32",  "next/synth-llamamoe-Q4_K_M",
                                          "next/synth-llamamoe-Q8_0", "next/synth-nemotron-Q8_0"};

// The provider ids of a plan: "name__isa" right before the "(" of each step's call.
std::set<std::string> provider_ids(const std::string& plan) {
  std::set<std::string> ids;
  std::istringstream in(plan);
  for (std::string line; std::getline(in, line);) {
    const size_t open = line.find('(');
    if (open == std::string::npos) continue;
    const size_t start = line.rfind(' ', open) + 1;
    const std::string id = line.substr(start, open - start);
    if (id.find("__") != std::string::npos) ids.insert(id);
  }
  return ids;
}

// Generated providers of the plan (ids of an __avx* level, not __ref), each checked to be
// defined in cke_kernels.c and never declared extern in cke_plan.c. Returns how many.
int check_generated_kernels_are_emitted(const std::string& plan, const std::string& dir) {
  const std::string kernels = slurp(dir + "/cke_kernels.c"), c = slurp(dir + "/cke_plan.c");
  int n = 0;
  for (const std::string& id : provider_ids(plan)) {
    if (id.find("__avx") == std::string::npos) continue;
    EXPECT_NE(kernels.find("\nvoid " + id + "(void* p0"), std::string::npos) << id;
    EXPECT_EQ(c.find("extern void " + id + "("), std::string::npos) << id;
    ++n;
  }
  return n;
}

// The plan's parallel regions ("[region a..b]" on each of their steps) are each one
// cke_parallel_region call of the emitted C. Returns how many.
int check_regions_are_emitted(const std::string& plan, const std::string& dir) {
  int regions = 0;  // lines of a region's first step: "  3 blk.0.wq ... [region 3..5]"
  std::istringstream in(plan);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("[region ");
    if (at == std::string::npos) continue;
    std::istringstream fields(line);
    std::string index;
    fields >> index;
    if (line.compare(at + 8, index.size() + 2, index + "..") == 0) ++regions;
  }
  const std::string c = slurp(dir + "/cke_plan.c");
  int calls = 0;
  for (size_t at = c.find("cke_parallel_region(ctx"); at != std::string::npos;
       at = c.find("cke_parallel_region(ctx", at + 1))
    ++calls;
  EXPECT_EQ(calls, regions);
  return calls;
}

TEST_P(EmitC, EmittedCIsBitIdenticalToTheJit) {
  const std::string stem = GetParam();
  CKE_REQUIRE_SHARED(json, "reference/" + stem + ".json");
  std::string err;
  auto ref = test::load_reference(stem, &err);
  ASSERT_TRUE(ref) << err;
  for (const std::string isa : {"", "avx2"}) {
    if (!isa.empty() && !kAvx2Stems.contains(stem)) continue;
    SCOPED_TRACE("isa " + (isa.empty() ? std::string("probed") : isa));
    const std::string dir = temp_dir(stem);
    auto jit = load(ref->model_path, 1, "", isa);
    ASSERT_TRUE(jit);
    ASSERT_TRUE(jit->emit_c(dir, &err)) << err;
    // Models whose matrices have a generated format run generated providers, and the C of
    // each is in the emitted files.
    const std::string plan = jit->plan_text();
    const int generated = check_generated_kernels_are_emitted(plan, dir);
    check_regions_are_emitted(plan, dir);
    for (const char* w : {"-Q8_0", "-Q4_0", "-F32"})
      if (stem.find(w) != std::string::npos) {
        EXPECT_GT(generated, 0) << plan;
      }
    const std::vector<float> want = all_logits(*jit, *ref);
    for (int threads : {1, 2}) {
      auto c = load(ref->model_path, threads, dir, isa);
      ASSERT_TRUE(c);
      ASSERT_TRUE(c->runs_emitted_c());
      const std::vector<float> got = all_logits(*c, *ref);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << stem << " at " << threads << " threads";
    }
    fs::remove_all(dir);
  }
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

std::vector<std::string> stems() {
  auto s = test::reference_stems();
  if (s.empty()) s.push_back("stories260K");
  for (const std::string& stem : test::next_reference_stems()) s.push_back(stem);
  return s;
}

INSTANTIATE_TEST_SUITE_P(Reference, EmitC, ::testing::ValuesIn(stems()), param_name);

// kAvx2Stems covers the AVX2 plans of every reference model: each provider id of any of them
// is in the plan of a model EmitC runs at --isa avx2.
TEST(EmitCAvx2Cover, SubsetUsesEveryAvx2ProviderOfTheReferenceModels) {
  CKE_REQUIRE_SHARED(json, "reference/stories260K.json");
  std::map<std::string, std::string> first_user;  // provider id -> a model whose plan has it
  std::set<std::string> covered;
  const std::vector<std::string> all = stems();
  for (const std::string& stem : kAvx2Stems)
    EXPECT_NE(std::find(all.begin(), all.end(), stem), all.end()) << stem << ": no such model";
  for (const std::string& stem : all) {
    std::string err;
    auto ref = test::load_reference(stem, &err);
    ASSERT_TRUE(ref) << err;
    auto e = load(ref->model_path, 1, "", "avx2");
    ASSERT_TRUE(e);
    for (const std::string& id : provider_ids(e->plan_text())) {
      first_user.emplace(id, stem);
      if (kAvx2Stems.contains(stem)) covered.insert(id);
    }
  }
  for (const auto& [id, stem] : first_user)
    EXPECT_TRUE(covered.contains(id))
        << id << " (in the AVX2 plan of " << stem << ") runs in no model of kAvx2Stems";
}

// The F16 cache with flash attention: the generated decode kernel calls a C helper
// (cke_flash_finish), which the emitted C resolves against the executable.
TEST(EmitCCacheF16, FlashPlanEmittedCIsBitIdenticalToTheJit) {
  CKE_REQUIRE_SHARED(json, "reference/synth-llama-Q4_K_M.json");
  std::string err;
  auto ref = test::load_reference("synth-llama-Q4_K_M", &err);
  ASSERT_TRUE(ref) << err;
  const std::string dir = temp_dir("f16cache");
  auto jit = load(ref->model_path, 1, "", "", "f16");
  ASSERT_TRUE(jit);
  ASSERT_TRUE(jit->emit_c(dir, &err)) << err;
  const std::string plan = jit->plan_text();
  EXPECT_NE(plan.find("attention_f16_flash"), std::string::npos) << plan;
  check_generated_kernels_are_emitted(plan, dir);
  const std::vector<float> want = all_logits(*jit, *ref);
  for (int threads : {1, 2}) {
    auto c = load(ref->model_path, threads, dir, "", "f16");
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->runs_emitted_c());
    const std::vector<float> got = all_logits(*c, *ref);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
        << threads << " threads";
  }
  fs::remove_all(dir);
}

TEST(EmitCDeterminism, SameModelCapsAndFlagsGiveIdenticalBytes) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q8_0.gguf");
  const std::string a = temp_dir("det_a"), b = temp_dir("det_b");
  std::string err;
  ASSERT_TRUE(load(model, 1)->emit_c(a, &err)) << err;
  ASSERT_TRUE(load(model, 2)->emit_c(b, &err)) << err;  // thread count is not part of the plan
  for (const char* f : {"cke_plan.c", "cke_plan.h", "cke_kernels.c", "cke_kernels.h"}) {
    const std::string x = slurp(a + "/" + f), y = slurp(b + "/" + f);
    EXPECT_FALSE(x.empty());
    EXPECT_EQ(x, y) << f;
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

// The AVX2 plan's C compiles warning-free with the AVX2 flags only (no AVX-512 intrinsic
// slipped into an AVX2 kernel); the header comment names the flags.
TEST(EmitCIsa, CappedPlanEmitsAndCompiles) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string dir = temp_dir("avx2");
  std::string err;
  auto e = load(model, 1, "", "avx2");
  ASSERT_TRUE(e);
  ASSERT_TRUE(e->emit_c(dir, &err)) << err;
  EXPECT_NE(slurp(dir + "/cke_kernels.c").find("-mavx2 -mfma -mf16c\n"), std::string::npos);
  EXPECT_GT(check_generated_kernels_are_emitted(e->plan_text(), dir), 0);
  for (const char* f : {"cke_plan", "cke_kernels"}) {
    const std::string extra = std::string(f) == "cke_kernels" ? "-Wextra " : "";
    const std::string cmd = "cc -std=c11 -Wall " + extra + "-Werror -mavx2 -mfma -mf16c -c -o " +
                            dir + "/" + f + ".o " + dir + "/" + f + ".c";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  fs::remove_all(dir);
}

TEST(EmitCMismatch, AnotherModelsPlanIsRefused) {
  CKE_REQUIRE_SHARED(a, "models/stories260K.gguf");
  CKE_REQUIRE_SHARED(b, "models/synthetic/stories260K-Q8_0.gguf");
  const std::string dir = temp_dir("mismatch");
  std::string err;
  ASSERT_TRUE(load(a, 1)->emit_c(dir, &err)) << err;
  EngineOptions o;
  o.model_path = b;
  o.n_ctx = 256;
  o.run_emitted_dir = dir;
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("holds plan"), std::string::npos) << err;
  fs::remove_all(dir);
}

// A compiled directory keeps its shared object (cke_plan.so.sha256: the build's key) for the
// next engine, but each live engine binds its own copy: two engines of one directory at once
// compute the JIT's bits side by side, and an edited source is compiled again.
TEST(EmitCReuse, EnginesOfOneDirectoryEachBindTheirOwnCopy) {
  CKE_REQUIRE_SHARED(json, "reference/stories260K-Q8_0.json");
  std::string err;
  auto ref = test::load_reference("stories260K-Q8_0", &err);
  ASSERT_TRUE(ref) << err;
  const std::string dir = temp_dir("reuse");
  auto jit = load(ref->model_path, 1);
  ASSERT_TRUE(jit);
  ASSERT_TRUE(jit->emit_c(dir, &err)) << err;
  auto a = load(ref->model_path, 1, dir);
  ASSERT_TRUE(a);
  const std::string key = slurp(dir + "/cke_plan.so.sha256");
  EXPECT_EQ(key.size(), 64u);
  const auto built = fs::last_write_time(dir + "/cke_plan.so");
  auto b = load(ref->model_path, 2, dir);  // a is alive: b binds a private copy
  ASSERT_TRUE(b);
  EXPECT_EQ(fs::last_write_time(dir + "/cke_plan.so"), built) << "compiled again";
  // Interleaved: a's prefill, b's prefill of another sequence, then a's decode steps, which
  // read a's KV cache (a shared object's globals would have b's there).
  ASSERT_GE(ref->sequences.size(), 2u);
  const auto& s0 = ref->sequences[0];
  const auto& s1 = ref->sequences[1];
  auto steps = [&](Engine& e, Engine* other) {
    std::vector<float> out, rows;
    e.rewind(0);
    EXPECT_TRUE(e.eval(s0.eval_ids, &rows, true, &err)) << err;
    out.insert(out.end(), rows.begin(), rows.end());
    if (other) {
      other->rewind(0);
      EXPECT_TRUE(other->eval(s1.eval_ids, &rows, true, &err)) << err;
    }
    for (size_t k = 0; k + 1 < s0.exact.greedy.size(); ++k) {
      EXPECT_TRUE(e.eval({&s0.exact.greedy[k], 1}, &rows, true, &err)) << err;
      out.insert(out.end(), rows.begin(), rows.end());
    }
    return out;
  };
  const std::vector<float> want0 = steps(*jit, nullptr);
  for (auto [e, other] : {std::pair{a.get(), b.get()}, std::pair{b.get(), a.get()}}) {
    const std::vector<float> got = steps(*e, other);
    ASSERT_EQ(got.size(), want0.size());
    EXPECT_EQ(0, std::memcmp(got.data(), want0.data(), got.size() * sizeof(float)));
  }
  a.reset();
  b.reset();
  // An edit (a comment) changes the key: the next engine compiles the directory again.
  std::ofstream(dir + "/cke_plan.c", std::ios::app) << "/* edited */\n";
  auto c = load(ref->model_path, 1, dir);
  ASSERT_TRUE(c);
  EXPECT_NE(slurp(dir + "/cke_plan.so.sha256"), key);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cke
