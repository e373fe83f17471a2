// Recognising a style from the Jinja text of tokenizer.chat_template: the real templates
// carried by the vocab GGUFs in shared/models/llama-vocab, and the published Gemma and
// Llama 3 Jinja templates written out here (no shared file carries them).
#include <gtest/gtest.h>

#include "runtime/gguf/gguf.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab_gguf.h"
#include "tests/chat/chat_test_util.h"

namespace cke {
namespace {

std::vector<ChatTemplate> repo_templates() {
  std::string err;
  auto all = load_chat_templates({test::chat_template_dir()}, &err);
  EXPECT_TRUE(all) << err;
  return all ? *all : std::vector<ChatTemplate>{};
}

// google/gemma-*-it tokenizer_config.json chat_template.
const char* kGemmaJinja =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
    "supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}"
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";

// meta-llama/Meta-Llama-3-8B-Instruct chat_template.
const char* kLlama3Jinja =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}"
    "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

struct GgufTemplate {
  std::unique_ptr<gguf::File> file;
  std::optional<std::string_view> jinja;  // nullopt: the file has no chat template
};

GgufTemplate open_template(const std::string& path) {
  gguf::GgufError gerr;
  GgufTemplate g;
  g.file = gguf::File::open(path, &gerr);
  EXPECT_TRUE(g.file) << gerr.message;
  if (g.file && g.file->has("tokenizer.chat_template"))
    g.jinja = g.file->str("tokenizer.chat_template", &gerr);
  return g;
}

std::string detected(std::string_view jinja) {
  const auto all = repo_templates();
  std::string err;
  const ChatTemplate* t = detect_chat_template(all, jinja, &err);
  return t ? t->name : "error: " + err;
}

TEST(ChatDetect, Qwen2VocabTemplateIsChatML) {
  for (const char* f :
       {"models/llama-vocab/ggml-vocab-qwen2.gguf", "models/llama-vocab/ggml-vocab-qwen35.gguf"}) {
    CKE_REQUIRE_SHARED(path, f);
    GgufTemplate g = open_template(path);
    ASSERT_TRUE(g.jinja) << path << " has no tokenizer.chat_template";
    EXPECT_EQ(detected(*g.jinja), "chatml") << path;
  }
}

TEST(ChatDetect, OtherStylesInRealVocabsAreNotMistaken) {
  // Phi-3 (<|user|> ... <|end|>) and Gemma 4 (<|turn>) are none of the three styles.
  for (const char* f :
       {"models/llama-vocab/ggml-vocab-phi-3.gguf", "models/llama-vocab/ggml-vocab-gemma-4.gguf"}) {
    CKE_REQUIRE_SHARED(path, f);
    GgufTemplate g = open_template(path);
    ASSERT_TRUE(g.jinja) << path << " has no tokenizer.chat_template";
    const std::string r = detected(*g.jinja);
    EXPECT_NE(r.find("not recognised"), std::string::npos) << path << ": " << r;
    EXPECT_NE(r.find("available: chatml, gemma, llama3"), std::string::npos) << r;
  }
}

TEST(ChatDetect, VocabWithoutTemplateNeedsAName) {
  CKE_REQUIRE_SHARED(path, "models/llama-vocab/ggml-vocab-llama-bpe.gguf");
  GgufTemplate g = open_template(path);
  EXPECT_FALSE(g.jinja) << "expected no tokenizer.chat_template in " << path;
  const auto all = repo_templates();
  std::string err;
  EXPECT_FALSE(select_chat_template(all, "", g.jinja, &err));
  EXPECT_NE(err.find("no tokenizer.chat_template"), std::string::npos) << err;
  EXPECT_NE(err.find("chatml, gemma, llama3"), std::string::npos) << err;
  auto t = select_chat_template(all, "llama3", g.jinja, &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->name, "llama3");
}

TEST(ChatDetect, PublishedGemmaAndLlama3Templates) {
  EXPECT_EQ(detected(kGemmaJinja), "gemma");
  EXPECT_EQ(detected(kLlama3Jinja), "llama3");
}

TEST(ChatDetect, MarkersRulesAndPrecedence) {
  EXPECT_EQ(detected("{{'<|im_start|>' + role}}"), "chatml");
  // Phi-4 and SmolVLM use <|im_start|> without being ChatML.
  EXPECT_NE(detected("<|im_start|>{{role}}<|im_sep|>").find("not recognised"), std::string::npos);
  EXPECT_NE(detected("<|im_start|>User:<end_of_utterance>").find("not recognised"),
            std::string::npos);
  // Llama 3 needs both header markers.
  EXPECT_NE(detected("<|start_header_id|>").find("not recognised"), std::string::npos);
  // llama.cpp's order when several match: ChatML, then Gemma, then Llama 3.
  EXPECT_EQ(detected("<|im_start|><start_of_turn><|start_header_id|><|end_header_id|>"), "chatml");
  EXPECT_EQ(detected("<start_of_turn><|start_header_id|><|end_header_id|>"), "gemma");
  // A template name stored instead of Jinja (llama.cpp accepts that too).
  EXPECT_EQ(detected("gemma"), "gemma");
}

TEST(ChatDetect, TiedPriorityIsAnError) {
  auto all = repo_templates();
  ASSERT_GE(all.size(), 2u);
  all[1].priority = all[0].priority;
  all[1].detect_all_of = all[0].detect_all_of;
  all[1].detect_none_of = {};
  std::string err;
  EXPECT_EQ(detect_chat_template(all, all[0].detect_all_of[0], &err), nullptr);
  EXPECT_NE(err.find("same priority"), std::string::npos) << err;
}

TEST(ChatDetect, OverrideByNameOrFile) {
  const auto all = repo_templates();
  std::string err;
  auto t = select_chat_template(all, "gemma", std::string_view(kLlama3Jinja), &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->name, "gemma");  // the name wins over the model's template
  EXPECT_FALSE(select_chat_template(all, "vicuna", std::nullopt, &err));
  EXPECT_NE(err.find("no chat template named 'vicuna'"), std::string::npos) << err;
  EXPECT_NE(err.find("available: chatml, gemma, llama3"), std::string::npos) << err;
  t = select_chat_template(all, test::chat_template_dir() + "/llama3.yaml", std::nullopt, &err);
  ASSERT_TRUE(t) << err;
  EXPECT_EQ(t->name, "llama3");
  EXPECT_FALSE(select_chat_template(all, "/nonexistent/x.yaml", std::nullopt, &err));
  EXPECT_NE(err.find("/nonexistent/x.yaml"), std::string::npos) << err;
}

// With the real Qwen2 vocab the ChatML markers are single control tokens, and the end
// marker is an end-of-generation token: the template's strings and the vocab agree.
TEST(ChatDetect, ChatMLMarkersAreQwen2Tokens) {
  CKE_REQUIRE_SHARED(path, "models/llama-vocab/ggml-vocab-qwen2.gguf");
  GgufTemplate g = open_template(path);
  std::string err;
  auto vocab = vocab_from_gguf(*g.file, &err);
  ASSERT_TRUE(vocab) << err;
  auto tok = Tokenizer::create(std::move(*vocab), &err);
  ASSERT_TRUE(tok) << err;
  const ChatTemplate t = test::repo_template("chatml");
  const std::string prompt = test::render(t, {{"system", "S"}, {"user", "Hi"}});
  const std::vector<int32_t> ids = tok->encode(prompt, false, /*parse_special=*/true);
  const auto start = tok->find_token("<|im_start|>"), end = tok->find_token("<|im_end|>");
  ASSERT_TRUE(start && end);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *start), 3);  // system, user, generation prompt
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *end), 2);
  EXPECT_EQ(ids.front(), *start);
  EXPECT_TRUE(tok->is_eog(*end));
  EXPECT_EQ(tok->decode(ids, false, /*unparse_special=*/true), prompt);
}

}  // namespace
}  // namespace cke
