// Every GGUF in ../shared/models opens (except the v1 file, which is rejected clearly),
// and facts stated in the models' READMEs hold.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "runtime/gguf/gguf.h"
#include "tests/common/shared.h"

namespace cke::gguf {
namespace {

std::unique_ptr<File> open_ok(const std::string& path) {
  GgufError err;
  auto f = File::open(path, &err);
  EXPECT_TRUE(f) << err.message;
  return f;
}

int64_t params(const File& f) {
  int64_t n = 0;
  for (const auto& t : f.tensors()) n += t.n_elements();
  return n;
}

TEST(GgufRealFiles, EveryFileOpens) {
  CKE_REQUIRE_SHARED(dir, "models");
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".gguf") continue;
    if (e.path().filename() == "stories260K-ggufv1-crabml.gguf") continue;
    SCOPED_TRACE(e.path().string());
    auto f = open_ok(e.path().string());
    if (!f) continue;
    ++n;
    EXPECT_TRUE(f->version() == 2 || f->version() == 3);
    GgufError err;
    EXPECT_TRUE(f->str("general.architecture", &err)) << err.message;
    // Every tensor's data lies inside the file.
    for (const auto& t : f->tensors()) {
      EXPECT_GE(t.data, f->bytes().data() + f->data_offset());
      EXPECT_LE(t.data + t.n_bytes, f->bytes().data() + f->file_size());
    }
  }
  EXPECT_GE(n, 2 + 15 + 24);  // two full models, 15 vocab files, 24 synthetic
}

TEST(GgufRealFiles, Version1IsRejected) {
  CKE_REQUIRE_SHARED(path, "models/stories260K-ggufv1-crabml.gguf");
  GgufError err;
  EXPECT_FALSE(File::open(path, &err));
  EXPECT_NE(err.message.find("unsupported GGUF version 1"), std::string::npos) << err.message;
  EXPECT_NE(err.message.find(path), std::string::npos) << err.message;
}

TEST(GgufRealFiles, Stories260K) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto f = open_ok(path);
  ASSERT_TRUE(f);
  GgufError err;
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->file_size(), 1185376u);
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(params(*f), 292800);
  for (const auto& t : f->tensors()) EXPECT_EQ(t.type, DType::F32) << t.name;
  EXPECT_EQ(f->str("general.architecture", &err).value_or(""), "llama");
  EXPECT_EQ(f->u32("llama.embedding_length", &err).value_or(0), 64u);
  EXPECT_EQ(f->u32("llama.block_count", &err).value_or(0), 5u);
  EXPECT_EQ(f->u32("llama.attention.head_count", &err).value_or(0), 8u);
  EXPECT_EQ(f->u32("llama.attention.head_count_kv", &err).value_or(0), 4u);
  EXPECT_EQ(f->u32("llama.feed_forward_length", &err).value_or(0), 172u);
  EXPECT_EQ(f->u32("llama.rope.dimension_count", &err).value_or(0), 8u);
  EXPECT_EQ(f->u32("llama.context_length", &err).value_or(0), 2048u);
  EXPECT_FLOAT_EQ(f->real("llama.attention.layer_norm_rms_epsilon", &err).value_or(0), 1e-5f);
  EXPECT_FALSE(f->has("llama.rope.freq_base"));
  EXPECT_FALSE(f->has("tokenizer.ggml.pre"));
  EXPECT_EQ(f->str("tokenizer.ggml.model", &err).value_or(""), "llama");
  const auto* tokens = f->str_array("tokenizer.ggml.tokens", &err);
  ASSERT_TRUE(tokens) << err.message;
  EXPECT_EQ(tokens->size(), 512u);
  const Value* scores = f->array("tokenizer.ggml.scores", &err, ValueType::F32);
  ASSERT_TRUE(scores) << err.message;
  EXPECT_EQ(scores->reals.size(), 512u);
  EXPECT_EQ(scores->array_size(), 512u);
  EXPECT_EQ(f->u32("tokenizer.ggml.bos_token_id", &err).value_or(0), 1u);
  EXPECT_EQ(f->u32("tokenizer.ggml.eos_token_id", &err).value_or(0), 2u);
  EXPECT_EQ(f->u32("tokenizer.ggml.unknown_token_id", &err).value_or(9), 0u);
  EXPECT_EQ(f->u32("tokenizer.ggml.padding_token_id", &err).value_or(0), 0xFFFFFFFFu);
  const TensorInfo* emb = f->tensor("token_embd.weight");
  ASSERT_TRUE(emb);
  EXPECT_EQ(emb->n_dims, 2u);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->n_bytes, 64u * 512 * 4);
  // output.weight holds the same values as token_embd.weight (README).
  const TensorInfo* out = f->tensor("output.weight");
  ASSERT_TRUE(out);
  ASSERT_EQ(out->n_bytes, emb->n_bytes);
  EXPECT_EQ(std::memcmp(out->data, emb->data, emb->n_bytes), 0);
  // The tensor data is byte-for-byte the v1 file's (README): the v1 file's last bytes are
  // the same tensor data, so the mapping points at the real payload.
  EXPECT_EQ(f->data_offset() % f->alignment(), 0u);
}

TEST(GgufRealFiles, LlamaTinyRandomF16) {
  CKE_REQUIRE_SHARED(path, "models/llama-2-tiny-random.gguf");
  auto f = open_ok(path);
  ASSERT_TRUE(f);
  GgufError err;
  EXPECT_EQ(f->tensors().size(), 12u);
  EXPECT_EQ(params(*f), 513048);
  EXPECT_EQ(f->u32("general.file_type", &err).value_or(0), 1u);
  int f16 = 0, f32 = 0;
  for (const auto& t : f->tensors()) (t.type == DType::F16 ? f16 : f32) += 1;
  EXPECT_EQ(f16, 9);
  EXPECT_EQ(f32, 3);
  const TensorInfo* down = f->tensor("blk.0.ffn_down.weight");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->ne[0], 32);
  EXPECT_EQ(down->ne[1], 8);
  EXPECT_EQ(f->str_array("tokenizer.ggml.tokens", &err)->size(), 32000u);
  EXPECT_EQ(f->u32("llama.context_length", &err).value_or(0), 4096u);
}

TEST(GgufRealFiles, VocabFiles) {
  struct Row {
    const char* file;
    const char* arch;
    const char* model;
    size_t n_vocab;
    size_t merges;
  };
  const Row rows[] = {
      {"ggml-vocab-llama-spm.gguf", "llama", "llama", 32000, 0},
      {"ggml-vocab-phi-3.gguf", "phi3", "llama", 32064, 0},
      {"ggml-vocab-bert-bge.gguf", "bert", "bert", 30522, 0},
      {"ggml-vocab-gpt-2.gguf", "gpt2", "gpt2", 50257, 50000},
      {"ggml-vocab-falcon.gguf", "falcon", "gpt2", 65024, 64784},
      {"ggml-vocab-llama-bpe.gguf", "llama", "gpt2", 128256, 280147},
      {"ggml-vocab-qwen2.gguf", "qwen2", "gpt2", 151936, 151387},
      {"ggml-vocab-gemma-4.gguf", "gemma4", "gemma4", 262144, 514906},
  };
  for (const Row& r : rows) {
    CKE_REQUIRE_SHARED(path, std::string("models/llama-vocab/") + r.file);
    SCOPED_TRACE(r.file);
    auto f = open_ok(path);
    if (!f) continue;
    GgufError err;
    EXPECT_EQ(f->tensors().size(), 0u);
    EXPECT_EQ(f->str("general.architecture", &err).value_or(""), r.arch) << err.message;
    EXPECT_EQ(f->str("tokenizer.ggml.model", &err).value_or(""), r.model) << err.message;
    const auto* tokens = f->str_array("tokenizer.ggml.tokens", &err);
    ASSERT_TRUE(tokens) << err.message;
    EXPECT_EQ(tokens->size(), r.n_vocab);
    const auto* merges = f->str_array("tokenizer.ggml.merges", nullptr);
    EXPECT_EQ(merges ? merges->size() : 0, r.merges);
  }
}

TEST(GgufRealFiles, SyntheticTypes) {
  struct Count {
    const char* file;
    size_t n;
    std::vector<std::pair<DType, int>> counts;
  };
  const Count rows[] = {
      {"stories260K-Q4_0.gguf",
       48,
       {{DType::Q4_0, 31}, {DType::Q8_0, 1}, {DType::F16, 5}, {DType::F32, 11}}},
      {"stories260K-BF16.gguf", 48, {{DType::BF16, 37}, {DType::F32, 11}}},
      {"synth-llama-Q4_K_M.gguf", 21, {{DType::Q4_K, 13}, {DType::Q6_K, 3}, {DType::F32, 5}}},
      {"synth-llama-Q2_K.gguf",
       21,
       {{DType::Q2_K, 9}, {DType::Q3_K, 6}, {DType::Q6_K, 1}, {DType::F32, 5}}},
      {"synth-qwen2-Q8_0.gguf", 27, {{DType::Q8_0, 16}, {DType::F32, 11}}},
      {"synth-gemma3-F32.gguf", 28, {{DType::F32, 28}}},
  };
  for (const Count& r : rows) {
    CKE_REQUIRE_SHARED(path, std::string("models/synthetic/") + r.file);
    SCOPED_TRACE(r.file);
    auto f = open_ok(path);
    if (!f) continue;
    EXPECT_EQ(f->tensors().size(), r.n);
    for (auto [type, n] : r.counts) {
      int got = 0;
      for (const auto& t : f->tensors()) got += t.type == type;
      EXPECT_EQ(got, n) << dtype_name(type);
    }
  }
  CKE_REQUIRE_SHARED(llama, "models/synthetic/synth-llama-F32.gguf");
  auto f = open_ok(llama);
  ASSERT_TRUE(f);
  GgufError err;
  EXPECT_EQ(f->u32("llama.embedding_length", &err).value_or(0), 256u);
  EXPECT_EQ(f->u32("llama.block_count", &err).value_or(0), 2u);
  EXPECT_EQ(f->u32("llama.feed_forward_length", &err).value_or(0), 768u);
  EXPECT_EQ(f->u32("llama.context_length", &err).value_or(0), 4096u);
  const TensorInfo* emb = f->tensor("token_embd.weight");
  ASSERT_TRUE(emb);
  EXPECT_EQ(emb->ne[0], 256);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(f->tensor("blk.0.ffn_gate.weight")->ne[1], 768);
  EXPECT_EQ(f->tensor("blk.0.attn_k.weight")->ne[1], 128);
}

}  // namespace
}  // namespace cke::gguf
