// cke-gguf synth for every family CKE has a circuit for: the file loads, resolves and runs
// (finite logits, -t 1 and -t 2 bit-identical), has the metadata and tensors of the
// shared/models/synthetic file of its family (made by llama.cpp's gguf-py), and bad shapes
// are refused naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "runtime/core/engine.h"
#include "runtime/gguf/gguf.h"
#include "runtime/gguf/synth.h"
#include "runtime/gguf/synth_family.h"
#include "tests/common/engine_load.h"
#include "tests/common/files.h"
#include "tests/common/shared.h"

namespace cke::gguf {
namespace {

namespace fs = std::filesystem;

// One model per circuit (llama twice: dense and with experts); `stem` is its file in
// shared/models/synthetic, whose shape is the "tiny" preset of the family (plus `dims`).
struct Case {
  const char* stem;
  const char* arch;
  const char* dims;
};
const Case kCases[] = {
    {"llama", "llama", ""},       {"llamamoe", "llama", "n_ff=128,n_expert=4,n_expert_used=2"},
    {"qwen2", "qwen2", ""},       {"qwen3", "qwen3", ""},
    {"gemma3", "gemma3", ""},     {"glm4", "glm4", ""},
    {"nemotron", "nemotron", ""}, {"qwen3moe", "qwen3moe", ""},
};

using test::TempDir;

// Writes the case's tiny model of `type` with the vocabulary of `vocab` (nullptr: the
// built-in one) to `out`.
void synthesize(const Case& k, DType type, const File* vocab, const std::string& out) {
  std::string why;
  auto c = synth_preset("tiny", k.arch, &why);
  ASSERT_TRUE(c) << why;
  ASSERT_TRUE(synth_apply_dims(&*c, k.dims, &why)) << why;
  c->type = type;
  c->seed = 11;
  GgufError err;
  ASSERT_TRUE(synth_write(*c, vocab, out, &err)) << err.message;
}

// The architectures of circuits/*.yaml.
std::set<std::string> circuit_architectures() {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(test::source_path("circuits"))) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("architecture: ", 0) == 0) out.insert(line.substr(14));
  }
  return out;
}

TEST(Synth, CoversEveryCircuit) {
  const auto archs = circuit_architectures();
  EXPECT_GE(archs.size(), 7u);
  std::set<std::string> families, cased;
  for (const SynthFamily& f : synth_families()) families.insert(std::string(f.arch));
  for (const Case& k : kCases) cased.insert(k.arch);
  EXPECT_EQ(families, archs) << "a circuit family cke-gguf synth cannot write, or the reverse";
  EXPECT_EQ(cased, archs) << "a family without a case in this test";
}

class SynthRuns : public ::testing::TestWithParam<std::tuple<Case, DType>> {};

// Prefill of 7 tokens (every row) then one decode step, with 1 and with 2 threads.
std::vector<float> run(const std::string& model, int threads, const std::string& arch) {
  auto e = test::load_engine(model, 64, threads);
  if (!e) return {};
  EXPECT_EQ(e->architecture(), arch);
  std::vector<float> rows, last;
  std::string err;
  const std::vector<int32_t> prompt = {1, 40, 41, 300, 7, 99, 260};
  EXPECT_TRUE(e->eval(prompt, &rows, true, &err)) << err;
  EXPECT_TRUE(e->eval(std::vector<int32_t>{120}, &last, false, &err)) << err;
  EXPECT_EQ(rows.size(), prompt.size() * size_t(e->n_vocab()));
  EXPECT_EQ(last.size(), size_t(e->n_vocab()));
  rows.insert(rows.end(), last.begin(), last.end());
  return rows;
}

TEST_P(SynthRuns, LoadsResolvesAndRunsThreadInvariant) {
  const auto& [k, type] = GetParam();
  TempDir dir("cke_synth_" + std::string(k.stem) + "_" + std::string(dtype_name(type)) + "_");
  const std::string model = (dir.path / "m.gguf").string();
  ASSERT_NO_FATAL_FAILURE(synthesize(k, type, nullptr, model));
  const auto one = run(model, 1, k.arch), two = run(model, 2, k.arch);
  ASSERT_FALSE(one.empty());
  ASSERT_EQ(one.size(), two.size());
  double sum = 0, sum2 = 0;
  for (float x : one) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x, sum2 += double(x) * x;
  }
  const double mean = sum / one.size();
  EXPECT_GT(sum2 / one.size() - mean * mean, 1e-6) << "flat logits";
  EXPECT_EQ(0, std::memcmp(one.data(), two.data(), one.size() * sizeof(float)))
      << "-t 1 and -t 2 differ";
}

INSTANTIATE_TEST_SUITE_P(Families, SynthRuns,
                         ::testing::Combine(::testing::ValuesIn(kCases),
                                            ::testing::Values(DType::F32, DType::Q4_K)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).stem) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

class SynthMatchesShared : public ::testing::TestWithParam<Case> {};

bool same_value(const Value& a, const Value& b) {
  return a.type == b.type && a.elem_type == b.elem_type && a.scalar == b.scalar &&
         a.nums == b.nums && a.ints == b.ints && a.reals == b.reals && a.strings == b.strings;
}

// The same metadata (every key but general.name, with its value: the tiny preset is the
// shared file's shape) and the same tensors (names, shapes, F32) as the llama.cpp-made file.
TEST_P(SynthMatchesShared, MetadataAndTensors) {
  const Case& k = GetParam();
  CKE_REQUIRE_SHARED(vocab_path, "models/stories260K.gguf");
  CKE_REQUIRE_SHARED(ref_path, std::string("models/synthetic/synth-") + k.stem + "-F32.gguf");
  GgufError err;
  auto vocab = File::open(vocab_path, &err);
  ASSERT_TRUE(vocab) << err.message;
  auto ref = File::open(ref_path, &err);
  ASSERT_TRUE(ref) << err.message;
  TempDir dir("cke_synth_ref_" + std::string(k.stem) + "_");
  const std::string model = (dir.path / "m.gguf").string();
  ASSERT_NO_FATAL_FAILURE(synthesize(k, DType::F32, vocab.get(), model));
  auto f = File::open(model, &err);
  ASSERT_TRUE(f) << err.message;

  std::set<std::string_view> got_keys, want_keys;
  for (const auto& [key, v] : f->metadata()) got_keys.insert(key);
  for (const auto& [key, v] : ref->metadata()) {
    want_keys.insert(key);
    const Value* g = f->find(key);
    if (key != "general.name" && g) {
      EXPECT_TRUE(same_value(*g, v)) << key;
    }
  }
  EXPECT_EQ(got_keys, want_keys);

  ASSERT_EQ(f->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const TensorInfo& r = ref->tensors()[i];
    const TensorInfo& t = f->tensors()[i];  // llama.cpp's order too
    ASSERT_EQ(t.name, r.name) << "tensor " << i;
    EXPECT_EQ(t.n_dims, r.n_dims) << r.name;
    for (int d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], r.ne[d]) << r.name;
    EXPECT_EQ(t.type, r.type) << r.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SynthMatchesShared, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.stem); });

// Shapes a family cannot have are refused, the message naming the field.
TEST(Synth, BadShapesNameTheField) {
  struct Bad {
    const char* arch;
    const char* dims;
    const char* message;
  };
  const Bad bad[] = {
      {"glm4", "n_rot=96", "n_rot must be even and at most head_dim (64)"},
      {"nemotron", "n_rot=33", "n_rot must be even"},
      {"qwen2", "n_rot=32", "n_rot: qwen2 rotates whole heads"},
      {"llama", "n_rot=32", "partial rotary: glm4, nemotron"},
      {"nemotron", "tied=1", "tied: nemotron needs output.weight"},
      {"nemotron", "head_dim=32", "head_dim: nemotron needs n_head * head_dim = n_embd"},
      {"qwen2", "n_expert=4,n_expert_used=2", "n_expert: qwen2 has no experts"},
      {"glm4", "n_ff_exp=64", "n_ff_exp: glm4 has no experts"},
      {"qwen3moe", "n_expert=0,n_expert_used=0,n_ff_exp=0", "n_expert: qwen3moe needs experts"},
      {"qwen3moe", "n_expert_used=5", "n_expert_used must be in 1..n_expert"},
      {"llama", "n_swa=16", "n_swa: llama has no sliding-window attention (gemma3 has)"},
      {"glm4", "rope_base_swa=1e4", "rope_base_swa: glm4 has no sliding-window"},
      {"gemma3", "swa_pattern=-1", "swa_pattern must be in 0..2^24"},
      {"gemma3", "norm_eps=2", "norm_eps must be in (0, 1)"},
      {"qwen3", "tied=2", "tied must be 0 or 1"},
      {"qwen3", "n_embd=250", "n_embd must be a multiple of n_head"},
      {"qwen3", "n_embd=12,n_ff=12", "head_dim (3) must be even"},
      {"qwen3", "n_heads=4", "unknown dimension 'n_heads'"},
      {"qwen3", "rope_base=abc", "bad value 'abc' for rope_base"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(std::string(b.arch) + " " + b.dims);
    std::string why;
    auto c = synth_preset("tiny", b.arch, &why);
    ASSERT_TRUE(c) << why;
    EXPECT_FALSE(synth_apply_dims(&*c, b.dims, &why));
    EXPECT_NE(why.find(b.message), std::string::npos) << why;
  }
  std::string why;
  EXPECT_FALSE(synth_preset("tiny", "mamba", &why));
  EXPECT_NE(why.find("unsupported architecture 'mamba' (llama, qwen2, qwen3, gemma3, glm4, "
                     "nemotron, qwen3moe)"),
            std::string::npos)
      << why;
  EXPECT_FALSE(synth_preset("huge", "", &why));
  EXPECT_NE(why.find("unknown preset 'huge' (tiny, tinyllama-1.1b"), std::string::npos) << why;
  // synth_write checks too (a config built by hand).
  SynthConfig hand = *synth_preset("tiny", "glm4");
  hand.n_rot = 66;
  GgufError err;
  EXPECT_FALSE(synth_write(hand, nullptr, "/nonexistent/x.gguf", &err));
  EXPECT_NE(err.message.find("n_rot must be even and at most head_dim"), std::string::npos)
      << err.message;
}

// glm4's fused up projection is 2 n_ff wide whatever n_ff (so never odd); partial rope is the
// dimension count; the circuit accepts both.
TEST(Synth, Glm4FusedWidthAndPartialRope) {
  std::string why;
  auto c = synth_preset("tiny", "glm4", &why);
  ASSERT_TRUE(c) << why;
  ASSERT_TRUE(synth_apply_dims(&*c, "n_ff=383,n_rot=16,n_layer=1", &why)) << why;
  TempDir dir("cke_synth_glm4_odd_");
  const std::string model = (dir.path / "m.gguf").string();
  GgufError err;
  ASSERT_TRUE(synth_write(*c, nullptr, model, &err)) << err.message;
  auto f = File::open(model, &err);
  ASSERT_TRUE(f) << err.message;
  EXPECT_EQ(f->u32("glm4.feed_forward_length", &err), 383u);
  EXPECT_EQ(f->u32("glm4.rope.dimension_count", &err), 16u);
  EXPECT_EQ(f->tensor("blk.0.ffn_up.weight")->ne[1], 766);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight")->ne[0], 383);
  EXPECT_FALSE(f->tensor("blk.0.ffn_gate.weight"));
  EXPECT_FALSE(run(model, 1, "glm4").empty());
}

// The real-shaped presets: their family and a few defining numbers (HF config.json), valid.
TEST(Synth, RealShapedPresets) {
  struct Want {
    const char* preset;
    const char* arch;
    int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  };
  const Want want[] = {
      {"tinyllama-1.1b", "llama", 2048, 22, 32, 4, 0, 5632},
      {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 0, 4864},
      {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072},
      {"gemma3-1b", "gemma3", 1152, 26, 4, 1, 256, 6912},
      {"glm4-9b", "glm4", 4096, 40, 32, 2, 128, 13696},
      {"glm4-9b-l4", "glm4", 4096, 4, 32, 2, 128, 13696},
      {"nemotron-mini-4b", "nemotron", 3072, 32, 24, 8, 128, 9216},
      {"nemotron-mini-4b-l4", "nemotron", 3072, 4, 24, 8, 128, 9216},
      {"qwen3-30b-a3b", "qwen3moe", 2048, 48, 32, 4, 128, 6144},
      {"mixtral-8x7b", "llama", 4096, 32, 32, 8, 0, 14336},
  };
  for (const Want& w : want) {
    SCOPED_TRACE(w.preset);
    std::string why;
    auto c = synth_preset(w.preset, "", &why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(c->arch, w.arch);
    EXPECT_EQ(c->preset, w.preset);
    EXPECT_EQ(c->n_embd, w.n_embd);
    EXPECT_EQ(c->n_layer, w.n_layer);
    EXPECT_EQ(c->n_head, w.n_head);
    EXPECT_EQ(c->n_head_kv, w.n_head_kv);
    EXPECT_EQ(c->head_dim, w.head_dim);
    EXPECT_EQ(c->n_ff, w.n_ff);
    EXPECT_TRUE(synth_check(*c, &why)) << why;
  }
  // A preset named for one family with another's architecture: that family's defaults.
  std::string why;
  auto q = synth_preset("qwen3-0.6b", "llama", &why);
  ASSERT_TRUE(q) << why;
  EXPECT_EQ(q->arch, "llama");
  EXPECT_EQ(q->n_embd, 1024);
  EXPECT_TRUE(synth_check(*q, &why)) << why;
  auto g = synth_preset("gemma3-1b", "qwen3", &why);
  ASSERT_TRUE(g) << why;
  EXPECT_FALSE(synth_check(*g, &why));
  EXPECT_NE(why.find("qwen3 has no sliding-window attention"), std::string::npos) << why;
}

// The tool: a bad field is exit 1 naming it, an unknown architecture exit 2 listing them.
struct Ran {
  int code;
  std::string out;
};
Ran tool(const std::string& args) {
  const std::string cmd = std::string(CKE_GGUF_TOOL) + " " + args + " 2>&1";
  Ran r{-1, {}};
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[512];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(Synth, ToolMessagesAndExitCodes) {
  TempDir dir("cke_synth_tool_");
  const std::string out = " -o " + (dir.path / "m.gguf").string();
  Ran r = tool("synth --preset tiny --arch glm4 --dims n_rot=96" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("n_rot must be even and at most head_dim (64)"), std::string::npos) << r.out;
  r = tool("synth --preset tiny --arch nemotron --dims tied=1" + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("tied: nemotron"), std::string::npos) << r.out;
  r = tool("synth --preset tiny --arch mamba" + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("glm4, nemotron, qwen3moe"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir.path / "m.gguf"));
  r = tool("synth --preset tiny --arch gemma3 --type q8_0" + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir.path / "m.gguf"));
}

}  // namespace
}  // namespace cke::gguf
