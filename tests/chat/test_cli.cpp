// cke-run --chat end to end: stdin from a pipe, two turns on a real model, the KV cache
// growing across turns with turn 1 not evaluated again, template selection and its errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "runtime/gguf/gguf.h"
#include "tests/chat/chat_test_util.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

struct CliResult {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// cke-run with `args`, `input` piped into stdin.
CliResult run(const std::string& args, const std::string& input) {
  const fs::path dir = fs::temp_directory_path() / ("cke_chat_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "in") << input;
  const std::string cmd = "cat " + quote((dir / "in").string()) + " | " + CKE_RUN_BIN + " " + args +
                          " >" + quote((dir / "out").string()) + " 2>" +
                          quote((dir / "err").string());
  CliResult r;
  const int st = std::system(cmd.c_str());
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

struct TurnLine {
  int turn, reused, before, evaluated, generated, kv, n_ctx;
};

std::vector<TurnLine> turn_lines(const std::string& err) {
  static const std::regex re(
      R"(turn (\d+): KV reused (\d+) of (\d+), evaluated (\d+) new tokens [^,]*, generated (\d+) .*, KV (\d+)/(\d+))");
  std::vector<TurnLine> out;
  for (std::sregex_iterator m(err.begin(), err.end(), re), end; m != end; ++m)
    out.push_back({std::stoi((*m)[1]), std::stoi((*m)[2]), std::stoi((*m)[3]), std::stoi((*m)[4]),
                   std::stoi((*m)[5]), std::stoi((*m)[6]), std::stoi((*m)[7])});
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

const char* kModel = "models/synthetic/synth-qwen2-Q8_0.gguf";

TEST(ChatCli, TwoTurnsReuseTheKvCache) {
  CKE_REQUIRE_SHARED(m, kModel);
  const CliResult r =
      run("-m " + m + " --chat --chat-template chatml -n 4 --temp 0 -t 1 --system 'Be brief.'",
          "Hello there\nAnd again\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("chat template 'chatml'"), std::string::npos) << r.err;
  const auto t = turn_lines(r.err);
  ASSERT_EQ(t.size(), 2u) << r.err;
  EXPECT_EQ(t[0].turn, 1);
  EXPECT_EQ(t[0].reused, 0);
  EXPECT_EQ(t[0].generated, 4);
  EXPECT_EQ(t[0].kv, t[0].evaluated + t[0].generated - 1);
  // Turn 2 keeps every cell of turn 1 and evaluates only its own tokens.
  EXPECT_EQ(t[1].before, t[0].kv);
  EXPECT_EQ(t[1].reused, t[0].kv);
  EXPECT_EQ(t[1].kv, t[1].reused + t[1].evaluated + t[1].generated - 1);
  EXPECT_GT(t[1].kv, t[0].kv);
  EXPECT_LT(t[1].evaluated, t[0].evaluated);  // turn 1 carried the system message too
  EXPECT_EQ(count(r.err, "> "), 3u);          // two messages, then EOF
  EXPECT_GE(count(r.out, "\n"), 2u);          // each reply ends its line
}

TEST(ChatCli, PromptIsTheFirstMessageThenStdinContinues) {
  CKE_REQUIRE_SHARED(m, kModel);
  const CliResult r = run("-m " + m + " --chat --chat-template chatml -n 2 --temp 0 -t 1 -p Hi",
                          "first line\\\nsecond line\n");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto t = turn_lines(r.err);
  ASSERT_EQ(t.size(), 2u) << r.err;  // -p, then one message spread over two lines
  EXPECT_EQ(t[1].reused, t[0].kv);
  EXPECT_EQ(count(r.err, ". "), 1u);  // the continuation prompt
}

TEST(ChatCli, RecognisesTheTemplateFromTheModel) {
  CKE_REQUIRE_SHARED(m, kModel);
  CKE_REQUIRE_SHARED(vocab, "models/llama-vocab/ggml-vocab-qwen2.gguf");
  gguf::GgufError gerr;
  auto v = gguf::File::open(vocab, &gerr);
  ASSERT_TRUE(v) << gerr.message;
  auto jinja = v->str("tokenizer.chat_template", &gerr);
  ASSERT_TRUE(jinja) << gerr.message;
  auto src = gguf::File::open(m, &gerr);
  ASSERT_TRUE(src) << gerr.message;
  gguf::Writer w;
  for (const auto& [k, val] : src->metadata()) w.add_value(std::string(k), val);
  w.add_str("tokenizer.chat_template", std::string(*jinja));
  for (const auto& t : src->tensors())
    w.add_tensor(std::string(t.name), t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                 {t.data, t.n_bytes});
  const std::string path =
      (fs::temp_directory_path() / ("cke_chat_qwen2_tmpl_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  ASSERT_TRUE(w.write(path, &gerr)) << gerr.message;
  const CliResult r = run("-m " + path + " --chat -n 2 --temp 0 -t 1", "Hello\n");
  fs::remove(path);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("chat template 'chatml'"), std::string::npos) << r.err;
  EXPECT_EQ(turn_lines(r.err).size(), 1u) << r.err;
}

TEST(ChatCli, NoTemplateOrUnknownNameListsTheAvailableOnes) {
  CKE_REQUIRE_SHARED(m, kModel);
  CliResult r = run("-m " + m + " --chat -n 2", "Hello\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no tokenizer.chat_template"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chatml, gemma, llama3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--chat-template NAME"), std::string::npos) << r.err;
  r = run("-m " + m + " --chat --chat-template zephyr -n 2", "Hello\n");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no chat template named 'zephyr'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chatml, gemma, llama3"), std::string::npos) << r.err;
}

TEST(ChatCli, ChatFlagsNeedChatAndExcludeParityFlags) {
  CKE_REQUIRE_SHARED(m, kModel);
  for (const std::string bad : {"--system hi -p x", "--chat-template chatml -p x",
                                "--chat --chat-template chatml --prompt-tokens 1,2",
                                "--chat --chat-template chatml --logits-out /dev/null"}) {
    const CliResult r = run("-m " + m + " " + bad, "");
    EXPECT_EQ(r.rc, 2) << bad << "\n" << r.err;
  }
}

TEST(ChatCli, FullContextEndsWithAMessage) {
  CKE_REQUIRE_SHARED(m, kModel);
  const CliResult r = run("-m " + m + " --chat --chat-template chatml -n 4 --temp 0 -t 1 -c 64",
                          "Hello there\nAnd again\nAnd once more\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("context full"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use -c"), std::string::npos) << r.err;
  for (const auto& t : turn_lines(r.err)) EXPECT_LE(t.kv, 64);
}

TEST(ChatCli, EmptyInputEndsAtOnce) {
  CKE_REQUIRE_SHARED(m, kModel);
  const CliResult r = run("-m " + m + " --chat --chat-template chatml -n 2 -t 1", "\n\n");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(turn_lines(r.err).empty()) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace cke
