// ChatSession on real models: the KV cache is reused between turns (turn 2 evaluates only
// what is new), the result equals evaluating the same tokens from scratch, BOS comes once,
// and a full context ends the conversation cleanly.
#include <gtest/gtest.h>

#include "runtime/chat/session.h"
#include "tests/chat/chat_test_util.h"
#include "tests/common/engine_load.h"

namespace cke {
namespace {

std::unique_ptr<Engine> load(const std::string& path, int32_t n_ctx) {
  return test::load_engine(path, n_ctx);
}

SamplerParams greedy() {
  SamplerParams p;
  p.temp = 0;
  return p;
}

struct Turn {
  ChatTurnStats st;
  std::string shown;
};

Turn send(ChatSession& chat, const std::string& text) {
  Turn t;
  std::string err;
  EXPECT_TRUE(chat.send(
      text, [&](std::string_view s) { t.shown += s; }, &t.st, &err))
      << err;
  return t;
}

// The conversation up to the last reply, rendered, must be what the KV cache holds.
void expect_kv_holds_the_conversation(const ChatSession& chat) {
  std::vector<ChatMessage> m = chat.messages();
  ASSERT_FALSE(m.empty());
  ASSERT_EQ(m.back().role, "assistant");
  m.pop_back();
  const std::string prompt = test::render(chat.chat_template(), m, true);
  EXPECT_EQ(chat.kv_text().substr(0, prompt.size()), prompt);
}

TEST(ChatSession, SecondTurnReusesTheKvCacheAndMatchesAFreshEvaluation) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path, 512);
  ASSERT_TRUE(engine);
  ChatSession chat(*engine, test::repo_template("chatml"), greedy(),
                   {.system = "Tell a story.", .n_predict = 8});
  const Turn t1 = send(chat, "Once upon a time");
  const Turn t2 = send(chat, "Lily went to the park");
  ASSERT_GT(t1.st.generated, 0);

  // Turn 1 starts empty; every generated token but the last is in the cache.
  EXPECT_EQ(t1.st.kv_before, 0);
  EXPECT_EQ(t1.st.kv_reused, 0);
  EXPECT_EQ(t1.st.kv_after, t1.st.prompt_tokens + t1.st.generated - 1);
  // Turn 2 keeps all of turn 1 and evaluates only the new part.
  EXPECT_EQ(t2.st.kv_before, t1.st.kv_after);
  EXPECT_EQ(t2.st.kv_reused, t1.st.kv_after);
  EXPECT_EQ(t2.st.kv_after, t2.st.kv_reused + t2.st.prompt_tokens + t2.st.generated - 1);
  EXPECT_LT(t2.st.prompt_tokens, t2.st.kv_reused);
  EXPECT_EQ(int32_t(chat.kv_tokens().size()), engine->pos());
  EXPECT_EQ(std::count(chat.kv_tokens().begin(), chat.kv_tokens().end(), 1), 1);  // one BOS
  EXPECT_EQ(chat.kv_tokens().front(), 1);
  EXPECT_EQ(chat.messages().size(), 5u);  // system, user, assistant, user, assistant
  EXPECT_EQ(chat.messages()[2].content, t1.shown);
  EXPECT_EQ(chat.messages()[4].content, t2.shown);
  expect_kv_holds_the_conversation(chat);

  // Oracle: a fresh engine evaluates the same prompt tokens in one go and decodes greedily.
  auto fresh = load(path, 512);
  ASSERT_TRUE(fresh);
  const size_t n_prompt = size_t(t2.st.kv_reused + t2.st.prompt_tokens);
  std::vector<int32_t> prompt(chat.kv_tokens().begin(), chat.kv_tokens().begin() + n_prompt);
  std::vector<float> logits;
  std::string err;
  ASSERT_TRUE(fresh->eval(prompt, &logits, false, &err)) << err;
  std::string reply;
  for (int i = 0; i < 8; ++i) {
    const int32_t id = argmax(logits.data(), fresh->n_vocab());
    if (fresh->tokenizer().is_eog(id)) break;
    reply += fresh->tokenizer().token_to_piece(id);
    if (i + 1 < 8) {
      ASSERT_TRUE(fresh->eval({&id, 1}, &logits, false, &err)) << err;
    }
  }
  EXPECT_EQ(t2.shown, reply);
  EXPECT_FALSE(reply.empty());
}

// Llama 3 trims the reply when rendering it back: where the cache's text differs, the
// session rewinds to the last checkpoint inside the common prefix, never into turn 1's prompt.
TEST(ChatSession, TrimmingTemplateRewindsOnlyInsideTheReply) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path, 512);
  ASSERT_TRUE(engine);
  ChatSession chat(*engine, test::repo_template("llama3"), greedy(),
                   {.system = "", .n_predict = 6});
  const Turn t1 = send(chat, "  Once upon a time ");
  const Turn t2 = send(chat, "Then what?");
  const Turn t3 = send(chat, "The end.");
  EXPECT_GE(t2.st.kv_reused, t1.st.prompt_tokens);
  EXPECT_LE(t2.st.kv_reused, t1.st.kv_after);
  EXPECT_GE(t3.st.kv_reused, t2.st.kv_reused + t2.st.prompt_tokens);
  // bos: always -> exactly one BOS, first.
  EXPECT_EQ(chat.kv_tokens().front(), engine->tokenizer().bos());
  EXPECT_EQ(std::count(chat.kv_tokens().begin(), chat.kv_tokens().end(), engine->tokenizer().bos()),
            1);
  expect_kv_holds_the_conversation(chat);
  // Trimmed user content, turns in order.
  const size_t u1 = chat.kv_text().find("user<|end_header_id|>\n\nOnce upon a time<|eot_id|>");
  const size_t u3 = chat.kv_text().find("user<|end_header_id|>\n\nThe end.<|eot_id|>");
  EXPECT_NE(u1, std::string::npos);
  EXPECT_NE(u3, std::string::npos);
  EXPECT_LT(u1, u3);
}

TEST(ChatSession, FullContextEndsTheConversationCleanly) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path, 64);
  ASSERT_TRUE(engine);
  ChatSession chat(*engine, test::repo_template("chatml"), greedy(),
                   {.system = "", .n_predict = -1});
  bool full = false;
  std::string err;
  for (int turn = 0; turn < 4 && !full; ++turn) {
    ChatTurnStats st;
    const size_t before = chat.messages().size();
    const bool ok = chat.send("Once upon a time there was a dog", nullptr, &st, &err);
    EXPECT_LE(engine->pos(), engine->n_ctx());
    if (st.stop == ChatStop::kContextFull) {
      full = true;
      if (!ok) {
        EXPECT_NE(err.find("the context holds 64"), std::string::npos) << err;
        EXPECT_EQ(chat.messages().size(), before);  // the message that did not fit is dropped
      }
    } else {
      ASSERT_TRUE(ok) << err;
    }
  }
  EXPECT_TRUE(full);
}

}  // namespace
}  // namespace cke
