// Batched decode (Engine::decode_batch, the batch plan of plan.h): several sequences of one
// engine, each prefilled into its own cells, decoded together one token each per plan call,
// give logits bit-identical to each sequence evaluated alone by an engine of one sequence
// (the oracle: the single-sequence path). Sequences of different prompt lengths and
// continuation lengths, so the batch shrinks as they finish; a prompt prefilled between
// batched steps, as cke-server does; 1 and 2 threads; the F32 and the F16 (flash) cache; the
// JIT and the emitted C.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "runtime/core/engine.h"
#include "tests/common/engine_load.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

struct Seq {
  std::vector<int32_t> prompt, next;  // prefilled, then decoded one token at a time
};

const std::vector<Seq>& sequences() {
  static const std::vector<Seq> s = {
      {{1, 403, 407, 263, 431}, {292, 127, 338, 263, 217, 300}},
      {{1, 91, 17, 444, 201, 333, 78, 12, 290}, {55, 410, 3, 99}},
      {{1, 250, 260}, {270, 280, 290, 300, 310}},
      {{1, 5, 6, 7, 8, 9, 10}, {11, 12, 13, 14, 15, 16, 17}},
      {{1, 120}, {121, 122, 123, 124, 125, 126, 127, 128}},
  };
  return s;
}

std::unique_ptr<Engine> load(const std::string& model, int n_seq, int threads,
                             const std::string& cache, const std::string& emitted = "") {
  EngineOptions o;
  o.model_path = model;
  o.n_ctx = 64;
  o.n_seq = n_seq;
  o.n_threads = threads;
  o.cache_type = cache;
  o.run_emitted_dir = emitted;
  return test::load_engine(o);
}

// Every logits row of every sequence evaluated alone: the prompt's rows, then one row per
// decoded token. Sequence after sequence in one engine of one sequence (rewound between).
std::vector<std::vector<float>> alone(Engine& e) {
  std::vector<std::vector<float>> out;
  std::string err;
  for (const Seq& s : sequences()) {
    e.rewind(0);
    std::vector<float> rows, l;
    EXPECT_TRUE(e.eval(s.prompt, &rows, true, &err)) << err;
    for (int32_t t : s.next) {
      EXPECT_TRUE(e.eval(std::vector<int32_t>{t}, &l, false, &err)) << err;
      rows.insert(rows.end(), l.begin(), l.end());
    }
    out.push_back(std::move(rows));
  }
  return out;
}

// The same rows from one engine of five sequences: sequences 0 and 1 prefilled, one
// batched step of both, the others prefilled between steps, then batched steps of every
// sequence that has tokens left (5, then fewer as they finish: 4 and more tokens run
// ggml's repacked gemm where a contract has one, so those steps must run per token).
std::vector<std::vector<float>> together(Engine& e) {
  const auto& S = sequences();
  std::vector<std::vector<float>> out(S.size());
  std::vector<size_t> done(S.size(), 0);  // tokens of `next` decoded
  std::string err;
  auto prefill = [&](size_t s) {
    std::vector<float> rows;
    EXPECT_TRUE(e.eval(int32_t(s), S[s].prompt, &rows, true, &err)) << err;
    out[s] = rows;
  };
  auto step = [&](std::vector<size_t> active) {
    std::vector<int32_t> seqs, toks;
    for (size_t s : active)
      if (done[s] < S[s].next.size()) {
        seqs.push_back(int32_t(s));
        toks.push_back(S[s].next[done[s]++]);
      }
    if (seqs.empty()) return false;
    std::vector<float> l;
    EXPECT_TRUE(e.decode_batch(seqs, toks, &l, &err)) << err;
    const size_t V = size_t(e.n_vocab());
    EXPECT_EQ(l.size(), seqs.size() * V);
    for (size_t i = 0; i < seqs.size() && (i + 1) * V <= l.size(); ++i)
      out[size_t(seqs[i])].insert(out[size_t(seqs[i])].end(), l.begin() + i * V,
                                  l.begin() + (i + 1) * V);
    return true;
  };
  prefill(0);
  prefill(1);
  step({0, 1});
  prefill(2);
  prefill(3);
  step({3, 1, 2});
  prefill(4);
  while (step({2, 0, 4, 1, 3})) {
  }
  for (size_t s = 0; s < S.size(); ++s)
    EXPECT_EQ(e.pos(int32_t(s)), int32_t(S[s].prompt.size() + S[s].next.size()));
  return out;
}

void expect_same_bits(const std::vector<std::vector<float>>& got,
                      const std::vector<std::vector<float>>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < want.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size()) << what << ", sequence " << s;
    EXPECT_EQ(0, std::memcmp(got[s].data(), want[s].data(), want[s].size() * sizeof(float)))
        << what << ", sequence " << s;
  }
}

struct Case {
  std::string model;  // under ../shared/models
  std::string cache;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " (" << c.cache << " cache)";
}

class BatchDecode : public ::testing::TestWithParam<Case> {};

TEST_P(BatchDecode, BitIdenticalToEachSequenceAlone) {
  CKE_REQUIRE_SHARED(path, "models/" + GetParam().model);
  const std::string cache = GetParam().cache;
  auto one = load(path, 1, 1, cache);
  ASSERT_TRUE(one);
  const auto want = alone(*one);
  for (int threads : {1, 2}) {
    auto e = load(path, 5, threads, cache);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->n_seq(), 5);
    expect_same_bits(together(*e), want, std::to_string(threads) + " thread(s)");
  }
}

// The plan of the batch: attention, rope and the KV store run per token; a linear whose
// prefill and decode share a contract that does not depend on the token count (Q8_0) runs
// once for every token of the call, so its weights are read once.
// The batch plan's part of an engine's plan text (of 3 sequences), or "".
std::string batch_plan(const Engine& e) {
  const std::string plan = e.plan_text();
  const size_t at = plan.find("phase batch (T <= 3)");
  return at == std::string::npos ? "" : plan.substr(at);
}

TEST(BatchDecodePlan, LinearsOnceAttentionPerToken) {
  CKE_REQUIRE_SHARED(path, "models/synthetic/stories260K-Q8_0.gguf");
  auto e = load(path, 3, 1, "f32");
  ASSERT_TRUE(e);
  const std::string plan = batch_plan(*e);
  ASSERT_NE(plan, "") << e->plan_text();
  std::istringstream in(plan);
  int linear_once = 0, linear_per_token = 0, attention_per_token = 0, attention_once = 0;
  for (std::string line; std::getline(in, line);) {
    const bool per_token = line.find("(per token)") != std::string::npos;
    if (line.find(" linear_") != std::string::npos) ++(per_token ? linear_per_token : linear_once);
    if (line.find(" attention_") != std::string::npos)
      ++(per_token ? attention_per_token : attention_once);
  }
  EXPECT_GT(linear_once, 0) << plan;
  EXPECT_EQ(linear_per_token, 0) << plan;
  EXPECT_GT(attention_per_token, 0) << plan;
  EXPECT_EQ(attention_once, 0) << plan;
  // One sequence: no batch plan, the cache is not split.
  auto single = load(path, 1, 1, "f32");
  ASSERT_TRUE(single);
  EXPECT_EQ(single->plan_text().find("phase batch"), std::string::npos);
  EXPECT_EQ(single->plan_text().find("+seq*"), std::string::npos);
}

// The repacked linears (q4_0x8, q4_Kx8: their prefill arithmetic depends on the token
// count) run once over the batch too: their generated decode providers say decode_batch
// (so do the float ones: vec_dot in decode, tinyBLAS in prefill).
// Their activation conversion for q4_Kx8 (act_quant.q8_K_4x8) stays per token.
TEST(BatchDecodePlan, RepackedLinearsOnceWhereTheDecodeProviderBatches) {
  for (const char* rel :
       {"models/synthetic/stories260K-Q4_0.gguf", "models/synthetic/synth-llama-Q4_K_M.gguf"}) {
    CKE_REQUIRE_SHARED(path, rel);
    auto e = load(path, 3, 1, "f32");
    ASSERT_TRUE(e);
    const std::string plan = batch_plan(*e);
    ASSERT_NE(plan, "") << e->plan_text();
    std::istringstream in(plan);
    int repacked_once = 0, linear_per_token = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.find(" linear_") == std::string::npos) continue;
      if (line.find("(per token)") != std::string::npos)
        ++linear_per_token;
      else if (line.find("r16_f32_16x1") != std::string::npos ||
               line.find("x8_f32_") != std::string::npos)
        ++repacked_once;
    }
    if (plan.find("__ref") != std::string::npos && repacked_once == 0)
      GTEST_SKIP() << "this host runs the reference linears (no generated repacked provider)";
    EXPECT_GT(repacked_once, 0) << rel << "\n" << plan;
    EXPECT_EQ(linear_per_token, 0) << rel << "\n" << plan;
    // The X-Ray says why: every decode decision with decode_batch is a node the batch plan
    // runs once (by that provider, or by its prefill step where the two share a contract
    // that does not depend on T: the F16 ffn_down of K = 172 here).
    int traced = 0;
    for (const auto& d : e->trace()["decisions"]) {
      if (!d["decode_batch"].get<bool>()) continue;
      ++traced;
      // (Not " " + s + " ": GCC 12 warns -Wrestrict on that, a known false positive.)
      const std::string node = fmt::format(" {} ", d["query"]["node"].get<std::string>());
      std::istringstream lines(plan);
      int found = 0;
      for (std::string line; std::getline(lines, line);)
        if (line.find(node) != std::string::npos) {
          ++found;
          EXPECT_EQ(line.find("(per token)"), std::string::npos) << rel << ": " << line;
        }
      EXPECT_EQ(found, 1) << rel << ": " << node;
    }
    EXPECT_GE(traced, repacked_once) << rel;
  }
}

TEST(BatchDecodeErrors, BadBatchesAreRefused) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto e = load(path, 2, 1, "f32");
  ASSERT_TRUE(e);
  std::string err;
  std::vector<float> l;
  const std::vector<int32_t> two = {0, 0}, toks = {1, 2};
  EXPECT_FALSE(e->decode_batch(two, toks, &l, &err));
  EXPECT_NE(err.find("appears twice"), std::string::npos) << err;
  EXPECT_FALSE(e->decode_batch(std::vector<int32_t>{0, 2}, toks, &l, &err));
  EXPECT_NE(err.find("sequence 2 out of range"), std::string::npos) << err;
  EXPECT_FALSE(e->decode_batch(std::vector<int32_t>{0}, toks, &l, &err));
  EXPECT_FALSE(e->eval(5, toks, &l, false, &err));
  EXPECT_EQ(e->pos(0), 0);
  EngineOptions o;
  o.model_path = path;
  o.n_seq = 8;
  o.n_batch = 4;
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("n_seq 8"), std::string::npos) << err;
  o.n_batch = 256;
  o.n_ctx = 4;  // the prefill chunk is the smaller of n_batch and the context
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("8 sequences do not fit a chunk of 4 tokens"), std::string::npos) << err;
}

// The emitted C of an engine of five sequences has the batch entry and computes the JIT's
// bits (a model whose linears run once per batch, and one whose repacked linears run per
// token).
TEST(BatchDecodeEmitC, EmittedBatchIsBitIdenticalToTheJit) {
  for (const std::string model : {"stories260K.gguf", "synthetic/stories260K-Q4_0.gguf"}) {
    CKE_REQUIRE_SHARED(path, "models/" + model);
    const fs::path dir = fs::temp_directory_path() / ("cke_batch_emit_" + std::to_string(getpid()) +
                                                      "_" + fs::path(model).stem().string());
    auto jit = load(path, 5, 1, "f32");
    ASSERT_TRUE(jit);
    std::string err;
    ASSERT_TRUE(jit->emit_c(dir.string(), &err)) << err;
    const auto want = together(*jit);
    for (int threads : {1, 2}) {
      auto c = load(path, 5, threads, "f32", dir.string());
      ASSERT_TRUE(c);
      ASSERT_TRUE(c->runs_emitted_c());
      expect_same_bits(together(*c), want, model + " emitted C");
    }
    fs::remove_all(dir);
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.model + "_" + info.param.cache;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Models, BatchDecode,
                         ::testing::Values(Case{"stories260K.gguf", "f32"},
                                           Case{"stories260K.gguf", "f16"},
                                           Case{"synthetic/stories260K-Q8_0.gguf", "f32"},
                                           Case{"synthetic/stories260K-Q4_0.gguf", "f32"},
                                           Case{"synthetic/stories260K-F16.gguf", "f32"},
                                           Case{"synthetic/stories260K-Q4_1.gguf", "f32"},
                                           Case{"synthetic/synth-llama-Q4_K_M.gguf", "f32"},
                                           Case{"synthetic/synth-llama-Q8_0.gguf", "f16"},
                                           Case{"synthetic/synth-qwen3-Q8_0.gguf", "f32"},
                                           Case{"synthetic/synth-gemma3-Q8_0.gguf", "f32"},
                                           Case{"synthetic/synth-gemma3-Q4_K_M.gguf", "f16"},
                                           Case{"synthetic/synth-qwen2-F32.gguf", "f32"},
                                           Case{"synthetic/synth-glm4-Q8_0.gguf", "f32"},
                                           Case{"synthetic/synth-nemotron-Q4_K_M.gguf", "f32"},
                                           Case{"synthetic/synth-qwen3moe-Q4_K_M.gguf", "f32"},
                                           Case{"synthetic/synth-llamamoe-Q8_0.gguf", "f16"}),
                         case_name);

}  // namespace
}  // namespace cke
