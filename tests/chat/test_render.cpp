// Rendered prompts of the repository's templates against prompts written out by hand from
// llama.cpp's built-in templates (src/llama-chat.cpp) and the models' Jinja templates.
#include <gtest/gtest.h>

#include "tests/chat/chat_test_util.h"

namespace cke {
namespace {

using test::render;
using test::repo_template;

const std::vector<ChatMessage> kFull = {{"system", "You are terse."},
                                        {"user", "Hi"},
                                        {"assistant", "Hello!"},
                                        {"user", "Tell me a joke"}};
const std::vector<ChatMessage> kNoSystem = {{"user", "Hi"}};
const std::vector<ChatMessage> kMultiline = {{"system", "Rule one.\nRule two."},
                                             {"user", "  line one\nline two\n\nline four \n"},
                                             {"assistant", "\nok\n"},
                                             {"user", "bye"}};

TEST(ChatRender, ChatMLFullConversation) {
  EXPECT_EQ(render(repo_template("chatml"), kFull),
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nTell me a joke<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatRender, ChatMLNoSystemNoGenerationPrompt) {
  EXPECT_EQ(render(repo_template("chatml"), kNoSystem),
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render(repo_template("chatml"), kNoSystem, false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatRender, ChatMLKeepsContentAsWritten) {
  EXPECT_EQ(render(repo_template("chatml"), kMultiline),
            "<|im_start|>system\nRule one.\nRule two.<|im_end|>\n"
            "<|im_start|>user\n  line one\nline two\n\nline four \n<|im_end|>\n"
            "<|im_start|>assistant\n\nok\n<|im_end|>\n"
            "<|im_start|>user\nbye<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatRender, GemmaFoldsSystemIntoFirstUserTurnAndNamesTheModel) {
  EXPECT_EQ(render(repo_template("gemma"), kFull),
            "<start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nTell me a joke<end_of_turn>\n"
            "<start_of_turn>model\n");
}

TEST(ChatRender, GemmaNoSystem) {
  EXPECT_EQ(render(repo_template("gemma"), kNoSystem),
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatRender, GemmaTrimsContentButKeepsInnerLines) {
  EXPECT_EQ(render(repo_template("gemma"), kMultiline),
            "<start_of_turn>user\nRule one.\nRule two.\n\nline one\nline two\n\nline four"
            "<end_of_turn>\n"
            "<start_of_turn>model\nok<end_of_turn>\n"
            "<start_of_turn>user\nbye<end_of_turn>\n"
            "<start_of_turn>model\n");
}

TEST(ChatRender, GemmaSystemWaitsForTheNextUserMessage) {
  const ChatTemplate g = repo_template("gemma");
  // Alone, a system message renders nothing (llama.cpp drops it too).
  EXPECT_EQ(render(g, {{"system", "S"}}, false), "");
  // Two system messages concatenate; one placed late opens the following user turn.
  EXPECT_EQ(render(g, {{"system", " A "}, {"system", "B"}, {"user", "u"}}, false),
            "<start_of_turn>user\nAB\n\nu<end_of_turn>\n");
  EXPECT_EQ(
      render(g, {{"user", "u1"}, {"assistant", "a1"}, {"system", "S"}, {"user", "u2"}}, false),
      "<start_of_turn>user\nu1<end_of_turn>\n<start_of_turn>model\na1<end_of_turn>\n"
      "<start_of_turn>user\nS\n\nu2<end_of_turn>\n");
}

TEST(ChatRender, Llama3FullConversation) {
  EXPECT_EQ(render(repo_template("llama3"), kFull),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nTell me a joke<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatRender, Llama3NoSystemAndTrimmedMultiline) {
  EXPECT_EQ(render(repo_template("llama3"), kNoSystem),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render(repo_template("llama3"), kMultiline, false),
            "<|start_header_id|>system<|end_header_id|>\n\nRule one.\nRule two.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nline one\nline two\n\nline four<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nok<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nbye<|eot_id|>");
}

TEST(ChatRender, BosAndStopMarkers) {
  // BOS is a token, not text: the Gemma and Llama 3 Jinja templates write bos_token once.
  EXPECT_EQ(repo_template("chatml").bos, ChatBos::kTokenizer);
  EXPECT_EQ(repo_template("gemma").bos, ChatBos::kAlways);
  EXPECT_EQ(repo_template("llama3").bos, ChatBos::kAlways);
  EXPECT_EQ(repo_template("chatml").stop, std::vector<std::string>{"<|im_end|>"});
  EXPECT_EQ(repo_template("gemma").stop, std::vector<std::string>{"<end_of_turn>"});
  EXPECT_EQ(repo_template("llama3").stop, std::vector<std::string>{"<|eot_id|>"});
}

// The chat loop renders the whole conversation every turn and evaluates only what is new:
// that needs each rendering (without the generation prompt) to extend the previous one.
TEST(ChatRender, EachTurnExtendsThePreviousRendering) {
  for (const char* name : {"chatml", "gemma", "llama3"}) {
    const ChatTemplate t = repo_template(name);
    for (const auto* conv : {&kFull, &kMultiline}) {
      for (size_t k = 0; k < conv->size(); ++k) {
        std::vector<ChatMessage> before(conv->begin(), conv->begin() + k);
        std::vector<ChatMessage> after(conv->begin(), conv->begin() + k + 1);
        const std::string a = render(t, before, false), b = render(t, after, true);
        EXPECT_EQ(b.substr(0, a.size()), a) << name << " after " << k << " messages";
      }
    }
  }
}

TEST(ChatRender, UnknownRoleIsAnError) {
  std::string err;
  std::vector<ChatMessage> m = {{"user", "x"}, {"tool", "{}"}};
  EXPECT_FALSE(render_chat(repo_template("chatml"), m, true, &err));
  EXPECT_NE(err.find("message 1"), std::string::npos) << err;
  EXPECT_NE(err.find("'tool'"), std::string::npos) << err;
}

TEST(ChatRender, BeginIsWrittenOnce) {
  ChatTemplate t = repo_template("chatml");
  t.begin = "[gMASK]";
  EXPECT_EQ(render(t, {{"user", "a"}, {"assistant", "b"}, {"user", "c"}}, false),
            "[gMASK]<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
            "<|im_start|>user\nc<|im_end|>\n");
  EXPECT_EQ(render(t, {}, true), "[gMASK]<|im_start|>assistant\n");
}

}  // namespace
}  // namespace cke
