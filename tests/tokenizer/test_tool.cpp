// The cke-tokenize tool: output format, flags, and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/common/shared.h"

namespace {

struct Run {
  int status;
  std::string out;
};

// Runs the tool with `args` (already shell-quoted), capturing stdout; stderr is dropped.
Run run(const std::string& args) {
  const std::string cmd = std::string(CKE_TOKENIZE_BIN) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(CkeTokenize, PrintsIdsWithBos) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // Reference ids from llama.cpp (stories260K.reference.json), BOS = 1.
  auto r = run("-m '" + model + "' -p 'Once upon a time'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  r = run("-m '" + model + "' -p 'Once upon a time' --no-bos");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "403 407 261 378\n");
}

TEST(CkeTokenize, ParseSpecial) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  // "<s>" becomes BOS only with --parse-special; then "Once" gets the space prefix.
  auto r = run("-m '" + model + "' --no-bos --parse-special -p '<s>Once'");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "1 403\n");
  r = run("-m '" + model + "' --no-bos -p '<s>Once'");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.rfind("1 ", 0), 0u) << r.out;
}

TEST(CkeTokenize, FileIsReadByteForByte) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const auto path = std::filesystem::temp_directory_path() /
                    ("cke_tokenize_" + std::to_string(::getpid()) + ".txt");
  {
    std::ofstream f(path, std::ios::binary);
    f << "Once upon a time\n";  // the trailing newline is part of the text
  }
  const auto r = run("-m '" + model + "' --file '" + path.string() + "'");
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "1 403 407 261 378 13\n");  // 13 = <0x0A>
}

TEST(CkeTokenize, Errors) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  EXPECT_EQ(run("-m /nonexistent.gguf -p x").status, 1);
  EXPECT_EQ(run("-m '" + model + "' --file /nonexistent.txt").status, 1);
  EXPECT_EQ(run("-m '" + model + "'").status, 2);               // no text
  EXPECT_EQ(run("-m '" + model + "' -p x --bogus").status, 2);  // unknown flag
  EXPECT_EQ(run("-p x").status, 2);                             // no model
  EXPECT_EQ(run("-m '" + model + "' -p x -f y").status, 2);     // both texts
  // Not a GGUF file.
  EXPECT_EQ(
      run("-m '" + model.substr(0, model.rfind('/')) + "/stories260K.reference.json' -p x").status,
      1);
}

}  // namespace
