// Session on a real model (stories260K): greedy output equals an argmax loop over
// Engine::eval written here (the oracle); stop strings, max_tokens, a full context, a
// cancelling callback; the KV prefix reuse evaluates fewer tokens and gives what a fresh
// session gives; seeded sampling repeats; bad input is an error value.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/chat/chat_prompt.h"
#include "runtime/chat/generate_session.h"
#include "tests/common/engine_load.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

std::unique_ptr<Engine> load(const std::string& path, int32_t n_ctx = 256) {
  return test::load_engine(path, n_ctx);
}

GenerateParams greedy(int32_t max_tokens) {
  GenerateParams p;
  p.sampling.temp = 0;
  p.max_tokens = max_tokens;
  return p;
}

// The oracle: evaluate the prompt, then argmax and decode one token at a time.
struct Oracle {
  std::vector<int32_t> tokens;
  std::string text;
  bool eos = false;
};
Oracle argmax_loop(Engine& e, const std::vector<int32_t>& prompt, int32_t n) {
  Oracle o;
  e.rewind(0);
  std::vector<float> logits;
  std::string err;
  EXPECT_TRUE(e.eval(prompt, &logits, false, &err)) << err;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = argmax(logits.data(), e.n_vocab());
    if (e.tokenizer().is_eog(id)) {
      o.eos = true;
      break;
    }
    o.tokens.push_back(id);
    o.text += e.tokenizer().token_to_piece(id);
    if (i + 1 < n) {
      EXPECT_TRUE(e.eval({&id, 1}, &logits, false, &err)) << err;
    }
  }
  return o;
}

struct Generated {
  GenerateResult r;
  std::string streamed;
  bool ok = false;
  std::string err;
};
Generated run(Session& s, std::span<const int32_t> prompt, const GenerateParams& p) {
  Generated x;
  x.ok = s.generate(
      prompt, p,
      [&](int32_t, std::string_view t) {
        x.streamed += t;
        return true;
      },
      &x.r, &x.err);
  return x;
}

std::vector<int32_t> encode(Engine& e, const std::string& text) {
  return e.tokenizer().encode(text, true, true);
}

TEST(Session, GreedyEqualsTheArgmaxOracle) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  auto oracle_engine = load(path);
  ASSERT_TRUE(engine && oracle_engine);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  const Oracle want = argmax_loop(*oracle_engine, prompt, 48);
  Session s(*engine);
  const Generated got = run(s, prompt, greedy(48));
  ASSERT_TRUE(got.ok) << got.err;
  EXPECT_EQ(got.r.tokens, want.tokens);
  EXPECT_EQ(got.r.text, want.text);
  EXPECT_EQ(got.streamed, want.text);
  EXPECT_FALSE(want.text.empty());
  EXPECT_EQ(got.r.finish, want.eos ? FinishReason::kEos : FinishReason::kLength);
  EXPECT_EQ(got.r.prompt_tokens, int32_t(prompt.size()));
  EXPECT_EQ(got.r.cached_tokens, 0);
  // Every sampled token but the last is in the cache.
  EXPECT_EQ(engine->pos(), int32_t(prompt.size()) + got.r.completion_tokens - 1);
}

TEST(Session, MaxTokensCutsTheGreedyStream) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  ASSERT_TRUE(engine);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  Session s(*engine);
  const Generated full = run(s, prompt, greedy(32));
  const Generated cut = run(s, prompt, greedy(5));
  ASSERT_TRUE(full.ok && cut.ok);
  ASSERT_GE(full.r.tokens.size(), 5u);
  EXPECT_EQ(cut.r.finish, FinishReason::kLength);
  EXPECT_EQ(cut.r.completion_tokens, 5);
  EXPECT_EQ(cut.r.tokens, std::vector<int32_t>(full.r.tokens.begin(), full.r.tokens.begin() + 5));
  const Generated none = run(s, prompt, greedy(0));
  ASSERT_TRUE(none.ok);
  EXPECT_EQ(none.r.completion_tokens, 0);
  EXPECT_TRUE(none.r.text.empty());
}

TEST(Session, StopStringEndsTheTextBeforeIt) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  ASSERT_TRUE(engine);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  Session s(*engine);
  const Generated full = run(s, prompt, greedy(48));
  ASSERT_TRUE(full.ok);
  // A stop string from the middle of the greedy text (it spans token boundaries).
  const std::string& t = full.r.text;
  ASSERT_GT(t.size(), 40u);
  const std::string stop = t.substr(t.size() / 2, 6);
  GenerateParams p = greedy(48);
  p.stop = {"never appears \x01", stop};
  const Generated got = run(s, prompt, p);
  ASSERT_TRUE(got.ok) << got.err;
  EXPECT_EQ(got.r.finish, FinishReason::kStop);
  EXPECT_EQ(got.r.text, t.substr(0, t.find(stop)));
  EXPECT_EQ(got.streamed, got.r.text);  // the held-back start of the stop is never shown
  EXPECT_LT(got.r.completion_tokens, full.r.completion_tokens);
}

TEST(Session, PrefixReuseEvaluatesLessAndMatchesAFreshSession) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  auto fresh_engine = load(path);
  ASSERT_TRUE(engine && fresh_engine);
  Session s(*engine);
  const std::vector<int32_t> p1 = encode(*engine, "Once upon a time, there was a dog");
  const Generated r1 = run(s, p1, greedy(12));
  ASSERT_TRUE(r1.ok);

  // The same prompt extended: everything held is reused.
  std::vector<int32_t> p2 = encode(*engine, "Once upon a time, there was a dog named Max. He");
  ASSERT_EQ(std::vector<int32_t>(p2.begin(), p2.begin() + p1.size()), p1);
  const size_t held = s.cached_prefix(p2);
  EXPECT_GE(held, p1.size());
  const Generated r2 = run(s, p2, greedy(12));
  ASSERT_TRUE(r2.ok);
  EXPECT_EQ(r2.r.cached_tokens, int32_t(held));
  EXPECT_LT(r2.r.prompt_tokens - r2.r.cached_tokens, int32_t(p2.size()));
  Session fresh(*fresh_engine);
  const Generated f2 = run(fresh, p2, greedy(12));
  EXPECT_EQ(r2.r.tokens, f2.r.tokens);
  EXPECT_EQ(r2.r.text, f2.r.text);

  // A prompt that differs early: the cache is rewound to the common prefix.
  const std::vector<int32_t> p3 = encode(*engine, "Once upon a time, there was a cat");
  const size_t common = s.cached_prefix(p3);
  EXPECT_LT(common, p3.size());
  const Generated r3 = run(s, p3, greedy(12));
  const Generated f3 = run(fresh, p3, greedy(12));
  EXPECT_EQ(r3.r.cached_tokens, int32_t(common));
  EXPECT_EQ(r3.r.tokens, f3.r.tokens);
  EXPECT_EQ(std::vector<int32_t>(s.kv_tokens().begin(), s.kv_tokens().begin() + p3.size()), p3);

  // The same prompt again: only its last token is evaluated again, same result.
  const Generated r4 = run(s, p3, greedy(12));
  EXPECT_EQ(r4.r.cached_tokens, int32_t(p3.size()) - 1);
  EXPECT_EQ(r4.r.tokens, r3.r.tokens);
}

// Evaluating or rewinding the engine behind the session's back: the next call does not
// trust the cache and gives what a fresh session gives.
TEST(Session, AnEngineChangedBehindItsBackIsNotTrusted) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  ASSERT_TRUE(engine);
  Session s(*engine);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  const Generated first = run(s, prompt, greedy(8));
  engine->rewind(2);
  std::vector<float> logits;
  std::string err;
  const int32_t junk[] = {100, 200, 300};
  ASSERT_TRUE(engine->eval(junk, &logits, false, &err)) << err;
  const Generated again = run(s, prompt, greedy(8));
  ASSERT_TRUE(again.ok) << again.err;
  EXPECT_EQ(again.r.cached_tokens, 0);
  EXPECT_EQ(again.r.tokens, first.r.tokens);
}

TEST(Session, FullContextEndsTheGeneration) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path, 24);
  ASSERT_TRUE(engine);
  Session s(*engine);
  const std::vector<int32_t> prompt = encode(*engine, "Once upon a time");
  GenerateParams p = greedy(-1);
  p.sampling.logit_bias = {{engine->tokenizer().eos(), -INFINITY}};  // no early end
  const Generated got = run(s, prompt, p);
  ASSERT_TRUE(got.ok) << got.err;
  EXPECT_EQ(got.r.finish, FinishReason::kContext);
  EXPECT_EQ(engine->pos(), engine->n_ctx());
  // Every cell filled, and the token sampled from the last one.
  EXPECT_EQ(got.r.completion_tokens, 24 - int32_t(prompt.size()) + 1);
}

TEST(Session, CallbackReturningFalseCancels) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  ASSERT_TRUE(engine);
  Session s(*engine);
  GenerateResult r;
  std::string err;
  int calls = 0;
  ASSERT_TRUE(s.generate(
      encode(*engine, "Once upon a time"), greedy(40),
      [&](int32_t, std::string_view) { return ++calls < 3; }, &r, &err));
  EXPECT_EQ(r.finish, FinishReason::kCancelled);
  EXPECT_EQ(r.completion_tokens, 3);
}

TEST(Session, BadInputIsAnErrorAndLeavesTheCache) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path, 16);
  ASSERT_TRUE(engine);
  Session s(*engine);
  const std::vector<int32_t> ok_prompt = encode(*engine, "Once upon a time");
  ASSERT_TRUE(run(s, ok_prompt, greedy(2)).ok);
  const std::vector<int32_t> before = s.kv_tokens();
  Generated r = run(s, {}, greedy(2));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  const std::vector<int32_t> bad = {1, engine->n_vocab()};
  r = run(s, bad, greedy(2));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.err.find("out of range"), std::string::npos) << r.err;
  const std::vector<int32_t> long_prompt(17, 100);
  r = run(s, long_prompt, greedy(2));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.err.find("the context holds 16"), std::string::npos) << r.err;
  EXPECT_EQ(s.kv_tokens(), before);
  EXPECT_EQ(engine->pos(), int32_t(before.size()));
}

TEST(Session, SeededSamplingRepeatsAndDiffersFromGreedy) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto a = load(path), b = load(path);
  ASSERT_TRUE(a && b);
  Session sa(*a), sb(*b);
  GenerateParams p;
  p.sampling.temp = 1.5f;
  p.sampling.top_k = 0;
  p.sampling.top_p = 1;
  p.sampling.min_p = 0;
  p.sampling.seed = 1234;
  p.max_tokens = 40;
  const std::vector<int32_t> prompt = encode(*a, "Once upon a time");
  const Generated x = run(sa, prompt, p), y = run(sb, prompt, p);
  EXPECT_EQ(x.r.tokens, y.r.tokens);
  const Generated g = run(sa, prompt, greedy(40));
  EXPECT_NE(x.r.tokens, g.r.tokens);  // at temperature 1.5 over the whole vocab
}

TEST(Session, ChatRendersTheTemplateAndStopsAtItsMarkers) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  auto engine = load(path);
  ASSERT_TRUE(engine);
  std::string err;
  auto tmpl = load_chat_template(test::source_path("circuits/chat_templates/chatml.yaml"), &err);
  ASSERT_TRUE(tmpl) << err;
  Session plain(*engine);
  std::vector<int32_t> none;
  EXPECT_FALSE(plain.chat_prompt(std::vector<ChatMessage>{{"user", "Hi"}}, &none, &err));
  EXPECT_NE(err.find("chat template"), std::string::npos) << err;

  Session s(*engine, *tmpl);
  const std::vector<ChatMessage> msgs = {{"system", "Tell a story."}, {"user", "Once upon"}};
  std::vector<int32_t> ids;
  ASSERT_TRUE(s.chat_prompt(msgs, &ids, &err)) << err;
  // Independently: render, then tokenize with the vocab's BOS (chatml: bos: tokenizer).
  const std::string text =
      "<|im_start|>system\nTell a story.<|im_end|>\n<|im_start|>user\nOnce "
      "upon<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(ids, engine->tokenizer().encode(text, true, true));
  GenerateResult chat, direct;
  ASSERT_TRUE(s.generate_chat(msgs, greedy(16), nullptr, &chat, &err)) << err;
  GenerateParams p = greedy(16);
  p.stop = tmpl->stop;
  ASSERT_TRUE(s.generate(ids, p, nullptr, &direct, &err)) << err;
  EXPECT_EQ(chat.tokens, direct.tokens);
  EXPECT_EQ(chat.text, direct.text);
}

}  // namespace
}  // namespace cke
