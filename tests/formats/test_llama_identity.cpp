// Byte identity with llama-quantize (llama.cpp 81ff7abe, no imatrix).
//
// For every converted model in ../shared/models/synthetic, every tensor of a type CKE
// converts is re-quantized here from the F32 original (stories260K.gguf for stories260K-*,
// synth-<arch>-F32.gguf for synth-<arch>-*) with quantize_row and compared byte for byte
// with what llama-quantize stored. A second check decodes llama.cpp's own embedding lookup
// (GET_ROWS on a q4_K token_embd, dumped from the engine) with dequantize_row.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kernels/formats/quant.h"
#include "runtime/gguf/gguf.h"
#include "tests/common/shared.h"

namespace {

using cke::DType;

struct Pair {
  const char* quantized;  // relative to models/synthetic
  const char* original;   // relative to models
};

const Pair kPairs[] = {
    {"stories260K-F16.gguf", "stories260K.gguf"},
    {"stories260K-BF16.gguf", "stories260K.gguf"},
    {"stories260K-Q8_0.gguf", "stories260K.gguf"},
    {"stories260K-Q4_0.gguf", "stories260K.gguf"},
    {"stories260K-Q4_1.gguf", "stories260K.gguf"},
    {"stories260K-Q5_0.gguf", "stories260K.gguf"},
    {"stories260K-Q5_1.gguf", "stories260K.gguf"},
    {"synth-llama-BF16.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-llama-Q8_0.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-llama-Q6_K.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-llama-Q5_K_M.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-llama-Q4_K_M.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-llama-Q3_K_M.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-llama-Q2_K.gguf", "synthetic/synth-llama-F32.gguf"},
    {"synth-qwen2-Q8_0.gguf", "synthetic/synth-qwen2-F32.gguf"},
    {"synth-qwen2-Q4_K_M.gguf", "synthetic/synth-qwen2-F32.gguf"},
    {"synth-qwen3-Q8_0.gguf", "synthetic/synth-qwen3-F32.gguf"},
    {"synth-qwen3-Q4_K_M.gguf", "synthetic/synth-qwen3-F32.gguf"},
    {"synth-gemma3-Q8_0.gguf", "synthetic/synth-gemma3-F32.gguf"},
    {"synth-gemma3-Q4_K_M.gguf", "synthetic/synth-gemma3-F32.gguf"},
};

struct Totals {
  int files = 0;
  int tensors = 0;      // non-F32 tensors compared
  uint64_t bytes = 0;   // their stored bytes
  int f32_tensors = 0;  // F32 tensors compared (copied through unchanged)
  std::map<std::string, int> per_type;
};

// Compares every tensor of `qpath` with the re-quantized F32 original; returns false (with
// gtest failures) on the first mismatching tensor of each file.
void compare_file(const std::string& qpath, const std::string& fpath, Totals* tot) {
  cke::gguf::GgufError err;
  auto q = cke::gguf::File::open(qpath, &err);
  ASSERT_TRUE(q) << err.message;
  auto f = cke::gguf::File::open(fpath, &err);
  ASSERT_TRUE(f) << err.message;
  ++tot->files;
  int compared = 0;
  for (const cke::gguf::TensorInfo& t : q->tensors()) {
    const cke::gguf::TensorInfo* o = f->tensor(t.name);
    ASSERT_NE(o, nullptr) << qpath << ": no original for " << t.name;
    ASSERT_EQ(o->type, DType::F32) << t.name;
    ASSERT_EQ(o->n_elements(), t.n_elements()) << t.name;
    if (!cke::dtype_info(t.type).has_reference) {
      ADD_FAILURE() << qpath << ": " << t.name << " has unsupported type "
                    << cke::dtype_name(t.type);
      continue;
    }
    const int64_t n = t.n_elements();
    ASSERT_EQ(cke::row_bytes(t.type, n), t.n_bytes) << t.name;
    std::vector<float> src(static_cast<size_t>(n));
    std::memcpy(src.data(), o->data, static_cast<size_t>(n) * sizeof(float));
    std::vector<uint8_t> mine(t.n_bytes);
    ASSERT_TRUE(cke::quantize_row(t.type, src.data(), mine.data(), n)) << t.name;
    if (std::memcmp(mine.data(), t.data, t.n_bytes) != 0) {
      size_t first = 0;
      while (mine[first] == t.data[first]) ++first;
      const uint32_t ts = cke::dtype_info(t.type).type_size;
      ADD_FAILURE() << qpath << ": " << t.name << " (" << cke::dtype_name(t.type)
                    << ") differs from llama-quantize; first byte " << first << " (block "
                    << first / ts << ", byte " << first % ts << " in block): ours "
                    << int(mine[first]) << ", file " << int(t.data[first]);
      continue;
    }
    ++compared;
    if (t.type == DType::F32) {
      ++tot->f32_tensors;
    } else {
      ++tot->tensors;
      tot->bytes += t.n_bytes;
      ++tot->per_type[std::string(cke::dtype_name(t.type))];
    }
  }
  EXPECT_EQ(compared, static_cast<int>(q->tensors().size())) << qpath;
}

TEST(LlamaQuantizeIdentity, EveryTensorOfEveryConvertedModel) {
  CKE_REQUIRE_SHARED(dir, "models/synthetic");
  Totals tot;
  for (const Pair& p : kPairs) {
    const std::string qpath =
        cke::test::shared_path(std::string("models/synthetic/") + p.quantized);
    const std::string fpath = cke::test::shared_path(std::string("models/") + p.original);
    SCOPED_TRACE(p.quantized);
    compare_file(qpath, fpath, &tot);
  }
  std::string summary;
  for (const auto& [type, count] : tot.per_type)
    summary += " " + type + ":" + std::to_string(count);
  std::printf(
      "[ identity ] %d files, %d quantized tensors (%llu bytes) byte-identical,"
      " %d F32 tensors;%s\n",
      tot.files, tot.tensors, static_cast<unsigned long long>(tot.bytes), tot.f32_tensors,
      summary.c_str());
  RecordProperty("files", tot.files);
  RecordProperty("quantized_tensors", tot.tensors);
  RecordProperty("quantized_bytes", std::to_string(tot.bytes));
  EXPECT_EQ(tot.files, static_cast<int>(std::size(kPairs)));
  // Every format the files contain: f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K..q6_K.
  EXPECT_EQ(tot.per_type.size(), 12u);
}

// llama.cpp's GET_ROWS of token_embd (q4_K) for tokens 1 403 407 261 378, dumped from the
// engine (reference/checkpoints/synth-llama-Q4_K_M/embd.f32), against dequantize_row of
// the same rows: bit-identical (ggml's to_float for q4_K, no FMA).
TEST(LlamaQuantizeIdentity, DequantizeMatchesLlamaCppEmbeddingLookup) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q4_K_M.gguf");
  CKE_REQUIRE_SHARED(embd, "reference/checkpoints/synth-llama-Q4_K_M/embd.f32");
  cke::gguf::GgufError err;
  auto f = cke::gguf::File::open(model, &err);
  ASSERT_TRUE(f) << err.message;
  const cke::gguf::TensorInfo* t = f->tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->type, DType::Q4_K);
  const int64_t n_embd = t->ne[0];
  std::ifstream in(embd, std::ios::binary);
  std::vector<float> ref(static_cast<size_t>(5 * n_embd));
  in.read(reinterpret_cast<char*>(ref.data()), static_cast<std::streamsize>(ref.size() * 4));
  ASSERT_TRUE(in.good());
  const int tokens[] = {1, 403, 407, 261, 378};
  const size_t rb = cke::row_bytes(t->type, n_embd);
  for (int r = 0; r < 5; ++r) {
    std::vector<float> row(static_cast<size_t>(n_embd));
    ASSERT_TRUE(cke::dequantize_row(t->type, t->data + tokens[r] * rb, row.data(), n_embd));
    EXPECT_EQ(std::memcmp(row.data(), ref.data() + r * n_embd, row.size() * 4), 0)
        << "token " << tokens[r];
  }
}

}  // namespace
