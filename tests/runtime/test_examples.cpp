// The examples build, run a real model and print llama.cpp's greedy continuation (the C
// one and the C++ one alike); the C API reports errors through cke_last_error() instead of
// crashing.
#include <gtest/gtest.h>

#include "runtime/capi/cke.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

// What an example prints on stdout for stories260K, "Once upon a time", 32 tokens.
std::string example_output(const std::string& bin, const std::string& model) {
  const std::string cmd = bin + " " + model + " \"Once upon a time\" 32 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "popen failed: " + cmd;
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  if (pclose(p) != 0) out += "[exit status not 0]";
  return out;
}

const char* kGreedy32 =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park. One day, she saw\n";

TEST(Examples, SimpleCGeneratesTheReferenceText) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  EXPECT_EQ(example_output(CKE_EXAMPLE_BIN, model), kGreedy32);
}

TEST(Examples, SimpleCppGeneratesTheSameText) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  EXPECT_EQ(example_output(CKE_EXAMPLE_CPP_BIN, model), kGreedy32);
}

TEST(CApi, ErrorsAreValues) {
  EXPECT_EQ(cke_engine_load(nullptr, nullptr), nullptr);
  EXPECT_NE(std::string(cke_last_error()), "");
  EXPECT_EQ(cke_engine_load("/nonexistent.gguf", nullptr), nullptr);
  EXPECT_NE(std::string(cke_last_error()).find("/nonexistent.gguf"), std::string::npos);
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  cke_options o = {8, 0, 1, nullptr};
  cke_engine* e = cke_engine_load(model.c_str(), &o);
  ASSERT_NE(e, nullptr) << cke_last_error();
  int32_t ids[4];
  EXPECT_LT(cke_tokenize(e, "Once upon a time there", 1, ids, 4), 0);  // -(needed)
  int32_t many[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(cke_eval(e, many, 9, nullptr), -1);  // longer than the context of 8
  EXPECT_NE(std::string(cke_last_error()).find("context"), std::string::npos);
  EXPECT_EQ(cke_eval(e, many, 3, nullptr), 0);
  EXPECT_EQ(cke_pos(e), 3);
  cke_engine_free(e);
}

}  // namespace
}  // namespace cke
