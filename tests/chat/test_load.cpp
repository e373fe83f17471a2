// Strict loading: every field required, unknown fields, wrong types and bad values rejected
// with the file and the field named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "resolver/data_file.h"
#include "tests/chat/chat_test_util.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

const std::string kValid = R"(schema: cke.chat_template/1
name: demo
description: "a test template"
detect:
  priority: 5
  all_of: ["<demo>"]
  none_of: ["<not-demo>"]
bos: never
begin: "[B]"
trim_content: true
system:
  mode: own_turn
  separator: ""
roles:
  system: {prefix: "S:", suffix: ";"}
  user: {prefix: "U:", suffix: ";"}
  assistant: {prefix: "A:", suffix: ";"}
generation_prompt: "A:"
stop: [";", "</demo>"]
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The error for `text` loaded as demo.yaml (empty if it loads).
std::string error_of(const std::string& text) {
  std::string err;
  auto t = parse_chat_template(text, "dir/demo.yaml", &err);
  return t ? std::string() : err;
}

void expect_error(const std::string& text, const std::string& field, const std::string& reason) {
  const std::string err = error_of(text);
  ASSERT_FALSE(err.empty()) << "loaded but should fail on " << field;
  EXPECT_NE(err.find("dir/demo.yaml: " + field + ": "), std::string::npos) << err;
  EXPECT_NE(err.find(reason), std::string::npos) << err;
}

TEST(ChatLoad, ValidFileGivesEveryField) {
  std::string err;
  auto t = parse_chat_template(kValid, "dir/demo.yaml", &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->name, "demo");
  EXPECT_EQ(t->file, "dir/demo.yaml");
  EXPECT_EQ(t->priority, 5);
  EXPECT_EQ(t->detect_all_of, std::vector<std::string>{"<demo>"});
  EXPECT_EQ(t->detect_none_of, std::vector<std::string>{"<not-demo>"});
  EXPECT_EQ(t->bos, ChatBos::kNever);
  EXPECT_EQ(t->begin, "[B]");
  EXPECT_TRUE(t->trim_content);
  EXPECT_EQ(t->system_mode, ChatSystemMode::kOwnTurn);
  EXPECT_EQ(t->system.prefix, "S:");
  EXPECT_EQ(t->assistant.suffix, ";");
  EXPECT_EQ(t->generation_prompt, "A:");
  EXPECT_EQ(t->stop, (std::vector<std::string>{";", "</demo>"}));
  EXPECT_EQ(test::render(*t, {{"system", " s "}, {"user", "u"}}), "[B]S:s;U:u;A:");
}

TEST(ChatLoad, UnknownFieldsAreNamed) {
  expect_error(kValid + "colour: red\n", "colour", "unknown field");
  expect_error(replaced(kValid, "prefix: \"U:\"", "prefx: \"U:\""), "roles.user.prefx",
               "unknown field");
  expect_error(replaced(kValid, "  priority: 5", "  priority: 5\n  any_of: [x]"), "detect.any_of",
               "unknown field");
  expect_error(
      replaced(kValid, "  assistant:", "  tool: {prefix: \"T\", suffix: \"\"}\n  assistant:"),
      "roles.tool", "unknown field");
}

TEST(ChatLoad, MissingFieldsAreNamed) {
  expect_error(replaced(kValid, "begin: \"[B]\"\n", ""), "begin", "missing field");
  expect_error(replaced(kValid, "stop: [\";\", \"</demo>\"]\n", ""), "stop", "missing field");
  expect_error(replaced(kValid, ", suffix: \";\"}\n  assistant", "}\n  assistant"),
               "roles.user.suffix", "missing field");
  expect_error(replaced(kValid, "  none_of: [\"<not-demo>\"]\n", ""), "detect.none_of",
               "missing field");
  expect_error(replaced(kValid, "  system: {prefix: \"S:\", suffix: \";\"}\n", ""), "roles.system",
               "missing field");
}

TEST(ChatLoad, WrongTypesAndValuesAreNamed) {
  expect_error(replaced(kValid, "trim_content: true", "trim_content: yes"), "trim_content",
               "expected true or false");
  expect_error(replaced(kValid, "priority: 5", "priority: high"), "detect.priority",
               "expected an integer");
  expect_error(replaced(kValid, "stop: [\";\", \"</demo>\"]", "stop: \";\""), "stop",
               "expected a list of strings");
  expect_error(replaced(kValid, "stop: [\";\", \"</demo>\"]", "stop: [\";\", \"\"]"), "stop[1]",
               "empty string");
  expect_error(replaced(kValid, "begin: \"[B]\"", "begin:"), "begin", "expected a string");
  expect_error(replaced(kValid, "bos: never", "bos: sometimes"), "bos",
               "'sometimes' is not one of: always, never, tokenizer");
  expect_error(replaced(kValid, "mode: own_turn", "mode: merge"), "system.mode", "is not one of");
  expect_error(replaced(kValid, "all_of: [\"<demo>\"]", "all_of: []"), "detect.all_of",
               "at least one marker");
  expect_error(replaced(kValid, "schema: cke.chat_template/1", "schema: cke.chat_template/2"),
               "schema", "is not cke.chat_template/1");
  expect_error(replaced(kValid, "name: demo", "name: other"), "name",
               "differs from the file name 'demo'");
  expect_error(
      replaced(kValid, "system:\n  mode: own_turn\n  separator: \"\"\n", "system: [own_turn]\n"),
      "system", "expected a mapping");
}

TEST(ChatLoad, SystemTurnFormatOnlyWithOwnTurn) {
  const std::string prepend = replaced(kValid, "mode: own_turn", "mode: prepend_to_user");
  expect_error(prepend, "roles.system", "prepend_to_user");
  std::string err;
  auto t = parse_chat_template(replaced(prepend, "  system: {prefix: \"S:\", suffix: \";\"}\n", ""),
                               "demo.yaml", &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->system_mode, ChatSystemMode::kPrependToUser);
}

TEST(ChatLoad, EveryProblemIsListed) {
  const std::string bad =
      replaced(replaced(kValid, "bos: never", "bos: 3"), "generation_prompt: \"A:\"\n", "");
  const std::string err = error_of(bad + "extra: 1\n");
  EXPECT_NE(err.find("dir/demo.yaml: bos: "), std::string::npos) << err;
  EXPECT_NE(err.find("dir/demo.yaml: generation_prompt: missing field"), std::string::npos) << err;
  EXPECT_NE(err.find("dir/demo.yaml: extra: unknown field"), std::string::npos) << err;
}

TEST(ChatLoad, SyntaxErrorsAndNonMappings) {
  std::string err = error_of("name: [unclosed\n");
  EXPECT_NE(err.find("dir/demo.yaml: YAML syntax error at line"), std::string::npos) << err;
  err = error_of("- a\n- b\n");
  EXPECT_NE(err.find("expected a mapping"), std::string::npos) << err;
  err = error_of("");
  EXPECT_FALSE(err.empty());
}

TEST(ChatLoad, DirectoryLoadingNamesTheBadFileAndHonoursOrder) {
  const fs::path root = fs::temp_directory_path() / "cke_chat_load_test";
  fs::remove_all(root);
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  auto write = [](const fs::path& p, const std::string& s) { std::ofstream(p) << s; };
  write(root / "a" / "demo.yaml", replaced(kValid, "\"a test template\"", "\"from a\""));
  write(root / "b" / "demo.yaml", kValid);
  write(root / "b" / "other.yaml", replaced(kValid, "name: demo", "name: other"));
  write(root / "b" / "notes.txt", "not a template");
  std::string err;
  auto all = load_chat_templates({root / "a", root / "b"}, &err);
  ASSERT_TRUE(all) << err;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "demo");
  EXPECT_EQ((*all)[0].description, "from a");  // the earlier directory wins
  EXPECT_EQ((*all)[1].name, "other");
  EXPECT_EQ(chat_template_names(*all), "demo, other");

  write(root / "b" / "broken.yaml", replaced(kValid, "name: demo", "name: broken\nfoo: 1"));
  EXPECT_FALSE(load_chat_templates({root / "a", root / "b"}, &err));
  EXPECT_NE(err.find((root / "b" / "broken.yaml").string() + ": foo: unknown field"),
            std::string::npos)
      << err;
  EXPECT_FALSE(load_chat_templates({root / "missing"}, &err));
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
  fs::create_directories(root / "empty");
  EXPECT_FALSE(load_chat_templates({root / "empty"}, &err));
  EXPECT_NE(err.find("no chat templates"), std::string::npos) << err;
  fs::remove_all(root);
}

TEST(ChatLoad, RepositoryTemplatesLoad) {
  std::string err;
  auto all = load_chat_templates({test::chat_template_dir()}, &err);
  ASSERT_TRUE(all) << err;
  EXPECT_EQ(chat_template_names(*all), "chatml, gemma, llama3");
}

// The circuit loader (and cke-audit) read circuits/*.yaml only: the templates' subfolder
// must stay invisible to them.
TEST(ChatLoad, TemplatesAreNotSeenAsCircuits) {
  std::vector<LoadError> errs;
  const auto files = list_yaml_files(test::source_path("circuits"), &errs);
  EXPECT_TRUE(errs.empty());
  EXPECT_FALSE(files.empty());
  for (const auto& f : files)
    EXPECT_EQ(f.parent_path().filename(), "circuits") << f << " would be read as a circuit";
  EXPECT_TRUE(fs::is_directory(test::chat_template_dir()));
}

}  // namespace
}  // namespace cke
