// cke-gguf's work: quantize (checked against llama-quantize's own outputs in
// shared/models/synthetic), synth (structure, determinism, weight statistics), info, and the
// tool's exit codes.
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/gguf/gguf.h"
#include "runtime/gguf/inspect.h"
#include "runtime/gguf/quantize.h"
#include "runtime/gguf/synth.h"
#include "tests/common/shared.h"

namespace cke::gguf {
namespace {

// A temporary file removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& tag)
      : path((std::filesystem::temp_directory_path() /
              ("cke_gguf_" + tag + "_" + std::to_string(::getpid()) + ".gguf"))
                 .string()) {}
  ~TempFile() { std::filesystem::remove(path); }
};

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::unique_ptr<File> open_ok(const std::string& path) {
  GgufError err;
  auto f = File::open(path, &err);
  EXPECT_TRUE(f) << err.message;
  return f;
}

TEST(GgufTools, FallbackTypesFollowLlamaQuantize) {
  // Expected values written from llama.cpp's llama_tensor_get_type fallback table.
  EXPECT_EQ(fitting_type(DType::Q4_K, 256), DType::Q4_K);
  EXPECT_EQ(fitting_type(DType::Q2_K, 64), DType::Q4_0);
  EXPECT_EQ(fitting_type(DType::Q3_K, 96), DType::Q4_0);
  EXPECT_EQ(fitting_type(DType::Q4_K, 64), DType::Q5_0);
  EXPECT_EQ(fitting_type(DType::Q5_K, 64), DType::Q5_1);
  EXPECT_EQ(fitting_type(DType::Q6_K, 64), DType::Q8_0);
  EXPECT_EQ(fitting_type(DType::Q6_K, 172), DType::F16);  // even q8_0 does not fit
  EXPECT_EQ(fitting_type(DType::Q4_0, 172), DType::F16);
  EXPECT_EQ(fitting_type(DType::Q8_0, 48), DType::F16);
  EXPECT_EQ(fitting_type(DType::F16, 7), DType::F16);
  EXPECT_EQ(fitting_type(DType::BF16, 7), DType::BF16);
}

TEST(GgufTools, LlamaFtypeNumbers) {
  // enum llama_ftype in llama.h.
  EXPECT_EQ(llama_ftype(DType::F32), 0u);
  EXPECT_EQ(llama_ftype(DType::F16), 1u);
  EXPECT_EQ(llama_ftype(DType::Q4_0), 2u);
  EXPECT_EQ(llama_ftype(DType::Q4_1), 3u);
  EXPECT_EQ(llama_ftype(DType::Q8_0), 7u);
  EXPECT_EQ(llama_ftype(DType::Q5_0), 8u);
  EXPECT_EQ(llama_ftype(DType::Q5_1), 9u);
  EXPECT_EQ(llama_ftype(DType::Q2_K), 10u);
  EXPECT_EQ(llama_ftype(DType::Q3_K), 12u);
  EXPECT_EQ(llama_ftype(DType::Q4_K), 15u);
  EXPECT_EQ(llama_ftype(DType::Q5_K), 17u);
  EXPECT_EQ(llama_ftype(DType::Q6_K), 18u);
  EXPECT_EQ(llama_ftype(DType::BF16), 32u);
  EXPECT_FALSE(llama_ftype(DType::Q8_K));
  EXPECT_FALSE(is_quantize_target(DType::Q8_K));
}

// stories260K quantized by us vs by llama-quantize (shared/models/synthetic): the same
// types per tensor, and byte-identical data, except where llama-quantize's mixture rules
// chose another type for output.weight (q8_0 in the Q4_x/Q5_x files).
TEST(GgufTools, QuantizeMatchesLlamaQuantize) {
  CKE_REQUIRE_SHARED(src_path, "models/stories260K.gguf");
  auto src = open_ok(src_path);
  ASSERT_TRUE(src);
  const std::pair<const char*, DType> cases[] = {
      {"F16", DType::F16},   {"BF16", DType::BF16}, {"Q8_0", DType::Q8_0}, {"Q4_0", DType::Q4_0},
      {"Q4_1", DType::Q4_1}, {"Q5_0", DType::Q5_0}, {"Q5_1", DType::Q5_1},
  };
  for (auto [name, type] : cases) {
    SCOPED_TRACE(name);
    CKE_REQUIRE_SHARED(ref_path, std::string("models/synthetic/stories260K-") + name + ".gguf");
    TempFile out(name);
    GgufError err;
    std::vector<std::string> notes;
    ASSERT_TRUE(quantize_file(*src, out.path, type, &err, [&](const std::string& s) {
      notes.push_back(s);
    })) << err.message;
    auto got = open_ok(out.path);
    auto ref = open_ok(ref_path);
    ASSERT_TRUE(got && ref);
    EXPECT_EQ(got->u32("general.file_type", &err), ref->u32("general.file_type", &err));
    EXPECT_EQ(got->u32("general.quantization_version", &err), 2u);
    // The 5 ffn_down (ne0 172) fall back to f16 for the 32-blocks, with a note each.
    EXPECT_EQ(notes.size(), dtype_info(type).block_size > 1 ? 5u : 0u);
    ASSERT_EQ(got->tensors().size(), ref->tensors().size());
    int identical = 0;
    for (const TensorInfo& r : ref->tensors()) {
      const TensorInfo* g = got->tensor(r.name);
      ASSERT_TRUE(g) << r.name;
      if (r.name == "output.weight" && r.type != type) {
        EXPECT_EQ(g->type, type);  // we give every matrix the requested type
        continue;
      }
      EXPECT_EQ(g->type, r.type) << r.name;
      ASSERT_EQ(g->n_bytes, r.n_bytes) << r.name;
      if (std::memcmp(g->data, r.data, r.n_bytes) == 0)
        ++identical;
      else
        ADD_FAILURE() << r.name << " differs from llama-quantize's bytes";
    }
    EXPECT_GE(identical, 47);
    // Every other metadata key is copied.
    for (const auto& [k, v] : src->metadata()) EXPECT_TRUE(got->has(k)) << k;
  }
}

TEST(GgufTools, QuantizeFromQuantizedSource) {
  // q8_0 -> f32 dequantizes (1-D tensors and already-f16 ffn_down are converted too, as
  // they are 2-D weights, or kept when 1-D).
  CKE_REQUIRE_SHARED(src_path, "models/synthetic/stories260K-Q8_0.gguf");
  auto src = open_ok(src_path);
  ASSERT_TRUE(src);
  TempFile out("deq");
  GgufError err;
  ASSERT_TRUE(quantize_file(*src, out.path, DType::F32, &err)) << err.message;
  auto got = open_ok(out.path);
  ASSERT_TRUE(got);
  for (const TensorInfo& t : got->tensors()) EXPECT_EQ(t.type, DType::F32) << t.name;
  EXPECT_EQ(got->u32("general.file_type", &err), 0u);
  // Dequantized q8_0 values are d * q: check one block by hand.
  const TensorInfo* s = src->tensor("blk.0.attn_q.weight");
  const TensorInfo* g = got->tensor("blk.0.attn_q.weight");
  ASSERT_TRUE(s && g);
  uint16_t dh;
  std::memcpy(&dh, s->data, 2);
  // fp16 -> float by hand: sign, exponent, mantissa (normal numbers).
  const int e = (dh >> 10) & 31, m = dh & 1023;
  ASSERT_TRUE(e > 0 && e < 31);
  const float d = std::ldexp(1.0f + m / 1024.0f, e - 15) * ((dh & 0x8000) ? -1.0f : 1.0f);
  for (int i = 0; i < 32; ++i) {
    float v;
    std::memcpy(&v, g->data + 4 * i, 4);
    EXPECT_EQ(v, d * static_cast<int8_t>(s->data[2 + i])) << i;
  }
}

TEST(GgufTools, QuantizeInPlace) {
  // IN == OUT: the input stays mapped while the output is written (temp file + rename).
  CKE_REQUIRE_SHARED(src_path, "models/stories260K.gguf");
  TempFile out("inplace");
  std::filesystem::copy_file(src_path, out.path);
  GgufError err;
  {
    auto src = open_ok(out.path);
    ASSERT_TRUE(src);
    ASSERT_TRUE(quantize_file(*src, out.path, DType::Q8_0, &err)) << err.message;
    EXPECT_EQ(src->tensor("token_embd.weight")->type, DType::F32);  // old mapping intact
  }
  auto f = open_ok(out.path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->tensor("token_embd.weight")->type, DType::Q8_0);
  EXPECT_EQ(f->u32("general.file_type", &err), 7u);
}

TEST(GgufTools, QuantizeRejectsBadTarget) {
  CKE_REQUIRE_SHARED(src_path, "models/stories260K.gguf");
  auto src = open_ok(src_path);
  ASSERT_TRUE(src);
  GgufError err;
  EXPECT_FALSE(quantize_file(*src, "/nonexistent/x.gguf", DType::Q8_K, &err));
  EXPECT_NE(err.message.find("cannot quantize to q8_K"), std::string::npos) << err.message;
}

TEST(GgufTools, SynthNormalIsStandardNormal) {
  double sum = 0, sum2 = 0, sum4 = 0;
  const int n = 200000;
  int tail = 0;
  for (int i = 0; i < n; ++i) {
    const double x = synth_normal(7, 3, i);
    sum += x, sum2 += x * x, sum4 += x * x * x * x;
    tail += std::fabs(x) > 1.959964;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(sum4 / n, 3.0, 0.06);            // kurtosis of a normal
  EXPECT_NEAR(tail / double(n), 0.05, 0.003);  // two-sided 5% tail
  // Seeds and streams give different numbers; the same triple gives the same.
  EXPECT_NE(synth_normal(7, 3, 0), synth_normal(8, 3, 0));
  EXPECT_NE(synth_normal(7, 3, 0), synth_normal(7, 4, 0));
  EXPECT_EQ(synth_normal(7, 3, 12345), synth_normal(7, 3, 12345));
  // Neighbouring elements are uncorrelated.
  double c = 0;
  for (int i = 0; i < n; ++i) c += synth_normal(7, 3, i) * synth_normal(7, 3, i + 1);
  EXPECT_NEAR(c / n, 0.0, 0.01);
}

TEST(GgufTools, PresetsAndDims) {
  auto t = synth_preset("tinyllama-1.1b");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->n_embd, 2048);
  EXPECT_EQ(t->n_layer, 22);
  EXPECT_EQ(t->n_head, 32);
  EXPECT_EQ(t->n_head_kv, 4);
  EXPECT_EQ(t->n_ff, 5632);
  EXPECT_EQ(t->n_ctx, 2048);
  auto c = synth_preset("tiny");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->n_embd, 256);
  EXPECT_EQ(c->n_ff, 768);
  EXPECT_FALSE(synth_preset("huge"));
  std::string why;
  EXPECT_TRUE(synth_apply_dims(&*c, "n_layer=3,n_ff=512,rope_base=500000", &why)) << why;
  EXPECT_EQ(c->n_layer, 3);
  EXPECT_EQ(c->n_ff, 512);
  EXPECT_EQ(c->rope_base, 500000.0);
  EXPECT_FALSE(synth_apply_dims(&*c, "n_head=3", &why));
  EXPECT_NE(why.find("multiple of n_head"), std::string::npos) << why;
  EXPECT_FALSE(synth_apply_dims(&*c, "n_heads=4", &why));
  EXPECT_NE(why.find("unknown dimension"), std::string::npos) << why;
  EXPECT_FALSE(synth_apply_dims(&*c, "n_embd=abc", &why));
  EXPECT_FALSE(synth_apply_dims(&*c, "n_embd=-256", &why));
  EXPECT_FALSE(synth_apply_dims(&*c, "n_embd", &why));
}

TEST(GgufTools, SynthTinyStructure) {
  CKE_REQUIRE_SHARED(vocab_path, "models/stories260K.gguf");
  auto vocab = open_ok(vocab_path);
  ASSERT_TRUE(vocab);
  auto c = synth_preset("tiny");
  c->type = DType::F32;
  c->seed = 1001;
  TempFile out("synth");
  GgufError err;
  ASSERT_TRUE(synth_write(*c, vocab.get(), out.path, &err)) << err.message;
  auto f = open_ok(out.path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->str("general.architecture", &err), "llama");
  EXPECT_TRUE(f->str("general.name", &err));
  EXPECT_EQ(f->u32("llama.embedding_length", &err), 256u);
  EXPECT_EQ(f->u32("llama.block_count", &err), 2u);
  EXPECT_EQ(f->u32("llama.attention.head_count", &err), 4u);
  EXPECT_EQ(f->u32("llama.attention.head_count_kv", &err), 2u);
  EXPECT_EQ(f->u32("llama.feed_forward_length", &err), 768u);
  EXPECT_EQ(f->u32("llama.context_length", &err), 4096u);
  EXPECT_EQ(f->u32("llama.rope.dimension_count", &err), 64u);
  EXPECT_EQ(f->u32("llama.vocab_size", &err), 512u);
  EXPECT_EQ(f->u32("general.file_type", &err), 0u);
  EXPECT_FLOAT_EQ(
      static_cast<float>(f->real("llama.attention.layer_norm_rms_epsilon", &err).value_or(0)),
      1e-5f);
  EXPECT_EQ(f->real("llama.rope.freq_base", &err), 10000.0);
  // Every tokenizer.* key of the vocab file, with the same value.
  int n_tok = 0;
  for (const auto& [k, v] : vocab->metadata()) {
    if (k.substr(0, 10) != "tokenizer.") continue;
    ++n_tok;
    const Value* g = f->find(k);
    ASSERT_TRUE(g) << k;
    EXPECT_EQ(g->type, v.type) << k;
    EXPECT_EQ(g->strings, v.strings) << k;
    EXPECT_EQ(g->reals, v.reals) << k;
    EXPECT_EQ(g->ints, v.ints) << k;
    EXPECT_EQ(g->nums, v.nums) << k;
    EXPECT_TRUE(g->scalar == v.scalar) << k;
  }
  EXPECT_GE(n_tok, 8);
  EXPECT_EQ(f->tensors().size(), 21u);  // the names and shapes: test_synth.cpp
  // Weight statistics: matrices N(0, 0.02), norms 1 + 0.1 N(0, 1).
  auto stats = [](const TensorInfo& t, double* mean, double* sd) {
    const float* x = reinterpret_cast<const float*>(t.data);
    double s = 0, s2 = 0;
    const int64_t n = t.n_elements();
    for (int64_t i = 0; i < n; ++i) s += x[i], s2 += double(x[i]) * x[i];
    *mean = s / n;
    *sd = std::sqrt(s2 / n - *mean * *mean);
  };
  double m, sd;
  stats(*f->tensor("blk.0.ffn_up.weight"), &m, &sd);
  EXPECT_NEAR(m, 0.0, 0.001);
  EXPECT_NEAR(sd, 0.02, 0.0005);
  stats(*f->tensor("blk.1.attn_norm.weight"), &m, &sd);
  EXPECT_NEAR(m, 1.0, 0.03);
  EXPECT_NEAR(sd, 0.1, 0.015);
  // Element i of tensor k is the documented function of (seed, k, i): token_embd is stream
  // 0, blk.0.attn_norm stream 1, blk.0.attn_q stream 2.
  const float* q = reinterpret_cast<const float*>(f->tensor("blk.0.attn_q.weight")->data);
  EXPECT_EQ(q[300], static_cast<float>(0.02 * synth_normal(1001, 2, 300)));
  EXPECT_EQ(q[301], static_cast<float>(0.02 * synth_normal(1001, 2, 301)));
}

// The mixtures of experts: their expert keys and the router kept F32 when the matrices are
// quantized (the tensor set against llama.cpp's files: test_synth.cpp); and the real-shaped
// qwen3-30b-a3b preset.
TEST(GgufTools, SynthMixturesOfExperts) {
  for (const std::string arch : {"qwen3moe", "llama"}) {
    SCOPED_TRACE(arch);
    auto c = synth_preset("tiny", arch);
    std::string why;
    ASSERT_TRUE(
        synth_apply_dims(&*c, arch == "llama" ? "n_ff=128,n_expert=4,n_expert_used=2" : "", &why))
        << why;
    c->type = DType::Q8_0;
    TempFile out("synth_moe");
    GgufError err;
    ASSERT_TRUE(synth_write(*c, nullptr, out.path, &err)) << err.message;
    auto f = open_ok(out.path);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->str("general.architecture", &err), arch);
    EXPECT_EQ(f->u32(arch + ".expert_count", &err), 4u);
    EXPECT_EQ(f->u32(arch + ".expert_used_count", &err), 2u);
    // llama reads the expert width from feed_forward_length, qwen3moe from its own key.
    EXPECT_EQ(f->u32(arch + ".feed_forward_length", &err), arch == "llama" ? 128u : 256u);
    if (arch == "qwen3moe") {
      EXPECT_EQ(f->u32(arch + ".expert_feed_forward_length", &err), 128u);
    }
    for (const TensorInfo& t : f->tensors()) {
      const bool router = t.name.find("ffn_gate_inp") != std::string::npos;
      EXPECT_EQ(t.type, t.n_dims == 1 || router ? DType::F32 : DType::Q8_0) << t.name;
    }
    EXPECT_EQ(f->tensor("blk.1.ffn_down_exps.weight")->ne[2], 4);
  }
  // The real-shaped preset: 128 experts of 768, 8 used, heads of 128 (q_dim 4096 > n_embd).
  auto q = synth_preset("qwen3-30b-a3b");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->arch, "qwen3moe");
  EXPECT_EQ(q->n_expert, 128);
  EXPECT_EQ(q->n_expert_used, 8);
  EXPECT_EQ(q->n_ff_exp, 768);
  EXPECT_EQ(q->head_dim, 128);
  std::string why;
  EXPECT_TRUE(synth_apply_dims(&*q, "n_layer=2", &why)) << why;
  // Bad expert counts are refused.
  EXPECT_FALSE(synth_apply_dims(&*q, "n_expert_used=129", &why));
  EXPECT_NE(why.find("n_expert_used"), std::string::npos) << why;
  EXPECT_FALSE(synth_apply_dims(&*q, "n_expert=0,n_expert_used=0,n_ff_exp=0", &why));
  EXPECT_NE(why.find("qwen3moe needs experts"), std::string::npos) << why;
  EXPECT_FALSE(synth_apply_dims(&*q, "n_expert=600", &why));
}

TEST(GgufTools, SynthIsDeterministic) {
  CKE_REQUIRE_SHARED(vocab_path, "models/stories260K.gguf");
  auto vocab = open_ok(vocab_path);
  ASSERT_TRUE(vocab);
  auto c = synth_preset("tiny");
  c->type = DType::Q4_K;
  c->seed = 42;
  c->n_layer = 1;
  TempFile a("a"), b("b"), d("d");
  GgufError err;
  ASSERT_TRUE(synth_write(*c, vocab.get(), a.path, &err)) << err.message;
  {
    tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
    ASSERT_TRUE(synth_write(*c, vocab.get(), b.path, &err)) << err.message;
  }
  const auto ba = read_all(a.path);
  EXPECT_GT(ba.size(), 300000u);
  EXPECT_EQ(ba, read_all(b.path)) << "same seed, different thread count: files differ";
  c->seed = 43;
  ASSERT_TRUE(synth_write(*c, vocab.get(), d.path, &err)) << err.message;
  EXPECT_NE(ba, read_all(d.path));
  auto f = open_ok(a.path);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->u32("general.file_type", &err), 15u);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight")->type, DType::Q4_K);  // 768 = 3 blocks
  EXPECT_EQ(f->tensor("blk.0.ffn_norm.weight")->type, DType::F32);
}

TEST(GgufTools, SynthBuiltinVocabAndFallback) {
  auto c = synth_preset("tiny");
  std::string why;
  ASSERT_TRUE(synth_apply_dims(&*c, "n_embd=96,n_head=2,n_head_kv=1,n_ff=160,n_layer=1", &why))
      << why;
  c->type = DType::Q6_K;
  TempFile out("builtin");
  GgufError err;
  std::vector<std::string> notes;
  ASSERT_TRUE(synth_write(*c, nullptr, out.path, &err, [&](const std::string& s) {
    notes.push_back(s);
  })) << err.message;
  auto f = open_ok(out.path);
  ASSERT_TRUE(f);
  const auto* tokens = f->str_array("tokenizer.ggml.tokens", &err);
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->size(), 354u);
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[258], "<0xFF>");
  EXPECT_EQ(f->u32("llama.vocab_size", &err), 354u);
  EXPECT_EQ(f->tensor("token_embd.weight")->ne[1], 354);
  // 96 = 3 × 32: q6_K -> q8_0; ffn_down rows are 160 = 5 × 32 -> q8_0 as well.
  EXPECT_EQ(f->tensor("blk.0.attn_q.weight")->type, DType::Q8_0);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight")->type, DType::Q8_0);
  EXPECT_EQ(notes.size(), 9u);  // 7 per-layer matrices + token_embd + output
}

TEST(GgufTools, InfoOutput) {
  Writer w;
  w.add_str("general.architecture", "llama");
  w.add_f32("x.eps", 1e-5f);
  w.add_f32_array("x.scores", {0.5f, -1.0f, 2.0f});
  std::vector<std::string> many;
  for (int i = 0; i < 20; ++i) many.push_back(std::string("t").append(std::to_string(i)));
  w.add_str_array("x.tokens", many);
  w.add_str("x.tmpl", "line1\nline2 \"q\"");
  std::vector<uint8_t> data(2 * 18 * 2, 0);
  w.add_tensor("blk.0.w", DType::Q4_0, {64, 2}, data);
  const auto bytes = w.to_bytes();
  GgufError err;
  auto f = File::from_memory(bytes, "mem.gguf", &err);
  ASSERT_TRUE(f) << err.message;
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  InfoOptions opt;
  opt.max_array_items = 4;
  print_info(*f, out, opt);
  std::fclose(out);
  const std::string s(buf, len);
  std::free(buf);
  for (const char* want :
       {"version:      3", "1e-05", "[f32 × 3] 0.5, -1, 2",
        "[string × 20] \"t0\", \"t1\", \"t2\", \"t3\", ...", "\"line1\\nline2 \\\"q\\\"\"",
        "blk.0.w", "q4_0", "[64, 2]", "parameters:  128", "bytes:       72"})
    EXPECT_NE(s.find(want), std::string::npos) << "missing: " << want << "\n" << s;
}

// The tool itself: exit codes 0 / 1 / 2.
int run(const std::string& args) {
  const std::string cmd = std::string(CKE_GGUF_TOOL) + " " + args + " >/dev/null 2>&1";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(GgufTool, ExitCodes) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  CKE_REQUIRE_SHARED(v1, "models/stories260K-ggufv1-crabml.gguf");
  TempFile out("cli");
  EXPECT_EQ(run("info " + model), 0);
  EXPECT_EQ(run("--help"), 0);
  EXPECT_EQ(run("info " + v1), 1);
  EXPECT_EQ(run("info /nonexistent.gguf"), 1);
  EXPECT_EQ(run(""), 2);
  EXPECT_EQ(run("frobnicate"), 2);
  EXPECT_EQ(run("info"), 2);
  EXPECT_EQ(run("quantize " + model + " " + out.path + " q9_9"), 2);
  EXPECT_EQ(run("quantize " + v1 + " " + out.path + " q8_0"), 1);
  EXPECT_EQ(run("synth --preset nope -o " + out.path), 2);
  EXPECT_EQ(run("synth --preset tiny --dims n_head=5 -o " + out.path), 1);
  EXPECT_EQ(run("synth --preset tiny --vocab-from /nonexistent.gguf -o " + out.path), 1);
  EXPECT_EQ(run("quantize " + model + " " + out.path + " q8_0"), 0);
  EXPECT_EQ(run("info " + out.path), 0);
  EXPECT_EQ(run("synth --arch llama --preset tiny --type q8_0 --vocab-from " + model +
                " --seed 1 -o " + out.path),
            0);
  EXPECT_EQ(run("info " + out.path), 0);
}

}  // namespace
}  // namespace cke::gguf
