// cke-server end to end: the binary on a free loopback port with stories260K, spoken to over
// HTTP (httplib's client). Greedy completions are compared with a cke::Session run in this
// process (the Session is tested against an argmax oracle in test_session); streaming
// chunks must concatenate to the same text; errors must carry OpenAI's JSON shape.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "runtime/chat/chat_prompt.h"
#include "runtime/chat/generate_session.h"
#include "runtime/server/utf8_holdback.h"
#include "tests/common/shared.h"
#include "tests/runtime/cli_runner.h"
#include "tests/server/server_http.h"
#include "tests/server/server_process.h"

namespace cke {
namespace {

using nlohmann::json;
using test::metric;
using test::parse_sse;
using test::Sse;

constexpr int kCtx = 1024;
const char* kModel = "models/stories260K.gguf";

// What the server must answer for a greedy prompt: a Session over an Engine of our own.
GenerateResult local_greedy(const std::string& text, int32_t max_tokens,
                            const std::vector<ChatMessage>* chat = nullptr) {
  EngineOptions o;
  o.model_path = test::shared_path(kModel);
  o.n_ctx = kCtx;
  o.n_threads = 1;
  std::string err;
  auto e = Engine::load(o, &err);
  EXPECT_TRUE(e) << err;
  GenerateParams p;
  p.sampling.temp = 0;
  p.max_tokens = max_tokens;
  GenerateResult r;
  if (!e) return r;
  if (chat) {
    auto t = load_chat_template(test::source_path("circuits/chat_templates/chatml.yaml"), &err);
    Session s(*e, *t);
    EXPECT_TRUE(s.generate_chat(*chat, p, nullptr, &r, &err)) << err;
  } else {
    Session s(*e);
    EXPECT_TRUE(s.generate_text(text, p, nullptr, &r, &err)) << err;
  }
  return r;
}

void expect_openai_error(const httplib::Result& r, int status, const std::string& words) {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  const json j = json::parse(r->body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
  EXPECT_EQ(j["error"]["code"], status);
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_NE(j["error"]["message"].get<std::string>().find(words), std::string::npos) << r->body;
}

TEST(Utf8Holdback, HoldsAnIncompleteCharacterUntilItIsWhole) {
  using server::utf8_complete_prefix;
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("a\xE2\x80"), 1u);         // 3-byte lead, 1 of 2 more seen
  EXPECT_EQ(utf8_complete_prefix("a\xE2\x80\x99"), 4u);     // complete
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);      // 4-byte lead, 2 of 3 more seen
  EXPECT_EQ(utf8_complete_prefix("\xE2\xE2"), 1u);          // the first can never complete
  EXPECT_EQ(utf8_complete_prefix("\x80\x80\x80\x80"), 4u);  // stray continuations: not held
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);             // no sequence starts with these:
  EXPECT_EQ(utf8_complete_prefix("a\xC0"), 2u);             // not held either
  EXPECT_EQ(utf8_complete_prefix("a\xF5\x80"), 3u);
  server::Utf8Holdback h;
  EXPECT_EQ(h.push("It"), "It");
  EXPECT_EQ(h.push("\xE2"), "");
  EXPECT_EQ(h.push("\x80"), "");
  EXPECT_EQ(h.push("\x99s"), "\xE2\x80\x99s");
  EXPECT_EQ(h.push("\xF0\x9F"), "");
  EXPECT_EQ(h.flush(), "\xF0\x9F");
}

class Server : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::shared_path(kModel))) return;
    server_ = new test::ServerProcess;
    ASSERT_TRUE(
        server_->start({"-m", test::shared_path(kModel), "--parallel", "2", "-t", "1", "-c",
                        std::to_string(kCtx), "--chat-template", "chatml", "--max-body", "65536"}))
        << server_->log();
  }
  static void TearDownTestSuite() {
    if (!server_) return;
    EXPECT_EQ(server_->stop(), 0) << server_->log();  // SIGTERM: a clean exit
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!server_) GTEST_SKIP() << "shared test data absent: " << test::shared_path(kModel);
  }
  httplib::Client client() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    return c;
  }
  httplib::Result post(const std::string& path, const json& body) {
    return client().Post(path, body.dump(), "application/json");
  }
  static test::ServerProcess* server_;
};
test::ServerProcess* Server::server_ = nullptr;

TEST_F(Server, HealthAndModels) {
  auto c = client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  const json j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "stories260K");
  EXPECT_EQ(j["data"][0]["meta"]["n_ctx"], kCtx);
  EXPECT_EQ(j["data"][0]["meta"]["slots"], 2);
}

TEST_F(Server, GreedyCompletionEqualsTheSession) {
  const GenerateResult want = local_greedy("Once upon a time", 40);
  auto r = post("/v1/completions", {{"model", "stories260K"},
                                    {"prompt", "Once upon a time"},
                                    {"max_tokens", 40},
                                    {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], want.text);
  EXPECT_EQ(j["choices"][0]["finish_reason"],
            want.finish == FinishReason::kLength ? "length" : "stop");
  EXPECT_EQ(j["usage"]["prompt_tokens"], want.prompt_tokens);
  EXPECT_EQ(j["usage"]["completion_tokens"], want.completion_tokens);
  EXPECT_FALSE(want.text.empty());
  // The file name is accepted as the model name too; a prompt given as token ids as well.
  auto t = post("/tokenize", {{"content", "Once upon a time"}, {"add_special", true}});
  ASSERT_TRUE(t);
  const json ids = json::parse(t->body)["tokens"];
  auto r2 = post(
      "/v1/completions",
      {{"model", "stories260K.gguf"}, {"prompt", ids}, {"max_tokens", 40}, {"temperature", 0}});
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  EXPECT_EQ(json::parse(r2->body)["choices"][0]["text"], want.text);
}

TEST_F(Server, StreamingChunksConcatenateToTheSameText) {
  const GenerateResult want = local_greedy("Once upon a time", 40);
  auto r = post(
      "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  const Sse s = parse_sse(r->body);
  EXPECT_TRUE(s.well_formed) << r->body;
  EXPECT_TRUE(s.done);
  ASSERT_GE(s.chunks.size(), 2u);
  std::string text;
  for (const json& c : s.chunks) {
    EXPECT_EQ(c["object"], "text_completion");
    text += c["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, want.text);
  EXPECT_GT(s.chunks.size(), 5u);  // streamed, not one piece
  EXPECT_EQ(s.chunks.back()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.chunks.back()["usage"]["completion_tokens"], 40);
}

TEST_F(Server, ChatCompletionUsesTheTemplate) {
  const std::vector<ChatMessage> msgs = {{"system", "Tell a story."}, {"user", "Once upon"}};
  const GenerateResult want = local_greedy("", 24, &msgs);
  const json body = {{"messages",
                      {{{"role", "system"}, {"content", "Tell a story."}},
                       {{"role", "user"}, {"content", "Once upon"}}}},
                     {"max_tokens", 24},
                     {"temperature", 0}};
  auto r = post("/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], want.text);
  EXPECT_EQ(j["usage"]["prompt_tokens"], want.prompt_tokens);

  json sb = body;
  sb["stream"] = true;
  auto st = post("/v1/chat/completions", sb);
  ASSERT_TRUE(st);
  const Sse s = parse_sse(st->body);
  EXPECT_TRUE(s.done && s.well_formed);
  std::string text;
  for (const json& c : s.chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    const json& d = c["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(text, want.text);
}

TEST_F(Server, TokenizeAndDetokenizeRoundTrip) {
  EngineOptions o;
  o.model_path = test::shared_path(kModel);
  std::string err;
  auto e = Engine::load(o, &err);
  ASSERT_TRUE(e) << err;
  const std::string text = "Lily saw a big dog.";
  auto t = post("/tokenize", {{"content", text}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  const std::vector<int32_t> ids = json::parse(t->body)["tokens"];
  EXPECT_EQ(ids, e->tokenizer().encode(text, false, true));
  auto d = post("/detokenize", {{"tokens", ids}});
  ASSERT_TRUE(d);
  ASSERT_EQ(d->status, 200) << d->body;
  EXPECT_EQ(json::parse(d->body)["content"], e->tokenizer().decode(ids));
  expect_openai_error(post("/detokenize", {{"tokens", {1, 99999999}}}), 400, "token ids");
  expect_openai_error(post("/tokenize", {{"text", "x"}}), 400, "content");
}

TEST_F(Server, BadRequestsGetOpenAiErrors) {
  auto c = client();
  expect_openai_error(c.Post("/v1/completions", "{not json", "application/json"), 400,
                      "not valid JSON");
  expect_openai_error(post("/v1/completions", {{"max_tokens", 4}}), 400, "'prompt' is required");
  expect_openai_error(post("/v1/chat/completions", {{"prompt", "x"}}), 400,
                      "'messages' is required");
  expect_openai_error(post("/v1/completions", {{"prompt", 42}}), 400, "'prompt' must be");
  expect_openai_error(post("/v1/completions", {{"prompt", "x"}, {"temperature", "hot"}}), 400,
                      "'temperature' must be a number");
  expect_openai_error(post("/v1/completions", {{"prompt", "x"}, {"top_p", 1.5}}), 400,
                      "'top_p' must be in");
  expect_openai_error(post("/v1/completions", {{"prompt", "x"}, {"n", 2}}), 400, "'n'");
  expect_openai_error(
      post("/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}), 400,
      "wizard");
  expect_openai_error(post("/v1/completions", {{"prompt", "x"}, {"model", "gpt-4"}}), 404,
                      "'gpt-4' does not exist");
  expect_openai_error(c.Get("/v1/nothing"), 404, "no route");
  // Over the context (1024 tokens): a clear 400.
  std::string lng;
  for (int i = 0; i < 1200; ++i) lng += " dog";
  expect_openai_error(post("/v1/completions", {{"prompt", lng}}), 400, "the context holds 1024");
  // Over --max-body (65536 bytes): 413.
  expect_openai_error(c.Post("/v1/completions", std::string(70000, ' '), "application/json"), 413,
                      "exceeds 65536 bytes");
}

TEST_F(Server, ConcurrentClientsAllCompleteWithTheSameGreedyText) {
  const GenerateResult want = local_greedy("Once upon a time", 32);
  constexpr int kClients = 12;
  std::vector<std::string> texts(kClients);
  std::vector<int> status(kClients, 0);
  std::vector<std::thread> th;
  for (int i = 0; i < kClients; ++i)
    th.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_read_timeout(60, 0);
      const json body = {{"prompt", "Once upon a time"},
                         {"max_tokens", 32},
                         {"temperature", 0},
                         {"stream", i % 2 == 1}};
      auto r = c.Post("/v1/completions", body.dump(), "application/json");
      if (!r) return;
      status[i] = r->status;
      if (i % 2 == 0) {
        texts[i] = json::parse(r->body)["choices"][0]["text"];
      } else {
        for (const json& ch : parse_sse(r->body).chunks)
          texts[i] += ch["choices"][0]["text"].get<std::string>();
      }
    });
  for (auto& t : th) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(status[i], 200) << "client " << i;
    EXPECT_EQ(texts[i], want.text) << "client " << i;
  }
}

// Two clients at once are decoded together: the scheduler's steps carry both slots' tokens
// (/metrics: tokens per decode step > 1, a step of 2), and each text is the one the same
// request gets alone (a decode step of one token: the decode plan, not the batch plan).
TEST_F(Server, ConcurrentClientsAreDecodedInBatchedSteps) {
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog"};
  const json no_eos = test::ban_eos(test::shared_path(kModel));
  auto request = [&](const std::string& prompt) {
    const json body = {
        {"prompt", prompt}, {"max_tokens", 900}, {"temperature", 0}, {"logit_bias", no_eos}};
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200);
    return r && r->status == 200 ? json::parse(r->body)["choices"][0]["text"].get<std::string>()
                                 : std::string();
  };
  std::vector<std::string> alone;
  for (const std::string& p : prompts) alone.push_back(request(p));
  auto c = client();
  const double steps0 = metric(c, "cke_decode_steps_total"),
               tokens0 = metric(c, "cke_decode_step_tokens_total"),
               batched0 = metric(c, "cke_decode_batched_steps_total");
  ASSERT_GE(steps0, 0);
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> th;
  for (size_t i = 0; i < prompts.size(); ++i)
    th.emplace_back([&, i] { together[i] = request(prompts[i]); });
  for (auto& t : th) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(together[i], alone[i]) << prompts[i];
  const double steps = metric(c, "cke_decode_steps_total") - steps0,
               tokens = metric(c, "cke_decode_step_tokens_total") - tokens0;
  EXPECT_GT(metric(c, "cke_decode_batched_steps_total") - batched0, 0);
  EXPECT_GE(metric(c, "cke_decode_batch_max"), 2);
  ASSERT_GT(steps, 0);
  EXPECT_GT(tokens / steps, 1.2) << tokens << " tokens in " << steps << " steps";
}

// A streaming client that goes away cancels its generation: the slot is free again long
// before the 1000 tokens it asked for (EOS banned through logit_bias) could be generated.
TEST_F(Server, DisconnectDuringStreamingFreesTheSlot) {
  auto c = client();
  const double generated_before = metric(c, "cke_generated_tokens_total");
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = json{
      {"prompt", "Once upon a time"},
      {"max_tokens", 1000},
      {"temperature", 0},
      {"logit_bias", test::ban_eos(test::shared_path(kModel))},
      {"stream",
       true}}.dump();
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  httplib::Client sc("127.0.0.1", server_->port());
  auto r = sc.send(req);
  EXPECT_GE(chunks, 3);
  sc.stop();
  double busy = -1;
  for (int i = 0; i < 250; ++i) {
    busy = metric(c, "cke_slots_busy");
    if (busy == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(busy, 0);
  const double generated = metric(c, "cke_generated_tokens_total") - generated_before;
  EXPECT_GT(generated, 0);
  EXPECT_LT(generated, 1000);
  // And the server still answers.
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// Two slots, two different prompts in turn: each comes back to the slot that holds it, so
// its whole prompt is found in the cache (but the last token, evaluated again for logits).
TEST_F(Server, RequestsGoToTheSlotHoldingTheirPrefix) {
  const std::string a = "Once upon a time, there was a little dog named Max.";
  const std::string b = "The big red ball rolled down the hill and into the pond.";
  auto complete = [&](const std::string& p) {
    auto r = post("/v1/completions", {{"prompt", p}, {"max_tokens", 4}, {"temperature", 0}});
    EXPECT_TRUE(r && r->status == 200);
    return r ? json::parse(r->body)["usage"] : json();
  };
  complete(a);
  complete(b);
  for (const std::string& p : {a, b}) {
    const json u = complete(p);
    EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"].get<int>(),
              u["prompt_tokens"].get<int>() - 1)
        << p;
  }
}

// Byte tokens that never make a valid character (0xE2 0xE2 ...): the server answers valid
// JSON with U+FFFD for them, streamed or not, the same text both ways, and lives on.
TEST_F(Server, InvalidUtf8FromTheModelBecomesReplacementCharacters) {
  EngineOptions o;
  o.model_path = test::shared_path(kModel);
  std::string err;
  auto e = Engine::load(o, &err);
  ASSERT_TRUE(e) << err;
  const std::optional<int32_t> byte = e->tokenizer().find_token("<0xE2>");
  ASSERT_TRUE(byte) << "stories260K has byte-fallback tokens";
  const json body = {{"prompt", "Once"},
                     {"max_tokens", 3},
                     {"temperature", 0},
                     {"logit_bias", {{std::to_string(*byte), 100}}}};
  auto r = post("/v1/completions", body);
  ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server_->log();
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string text = json::parse(r->body)["choices"][0]["text"];
  EXPECT_EQ(text, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // three U+FFFD
  json sb = body;
  sb["stream"] = true;
  auto st = post("/v1/completions", sb);
  ASSERT_TRUE(st);
  const Sse s = parse_sse(st->body);
  EXPECT_TRUE(s.done && s.well_formed) << st->body;
  std::string streamed;
  for (const json& c : s.chunks) streamed += c["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(streamed, text);
  auto h = client().Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST_F(Server, MetricsCountRequestsAndTokens) {
  auto c = client();
  const double prompt0 = metric(c, "cke_prompt_tokens_total");
  const double gen0 = metric(c, "cke_generated_tokens_total");
  ASSERT_GE(prompt0, 0);
  auto r =
      post("/v1/completions", {{"prompt", "The cat sat"}, {"max_tokens", 7}, {"temperature", 0}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const json u = json::parse(r->body)["usage"];
  const int evaluated =
      u["prompt_tokens"].get<int>() - u["prompt_tokens_details"]["cached_tokens"].get<int>();
  EXPECT_EQ(metric(c, "cke_prompt_tokens_total") - prompt0, evaluated);
  EXPECT_EQ(metric(c, "cke_generated_tokens_total") - gen0, u["completion_tokens"].get<int>());
  // A request is counted once its response has been written, so the count may come a
  // moment after the client has the response.
  const std::regex ok200(R"(cke_requests_total\{endpoint="/v1/completions",status="200"\} (\d+))");
  std::string text;
  std::smatch sm;
  for (int i = 0; i < 100; ++i) {
    auto m = c.Get("/metrics");
    ASSERT_TRUE(m);
    text = m->body;
    if (std::regex_search(text, sm, ok200)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::regex_search(text, sm, ok200)) << text;
  EXPECT_GE(std::stoi(sm[1]), 1);
  EXPECT_NE(text.find("# TYPE cke_requests_total counter"), std::string::npos);
  EXPECT_NE(text.find("cke_queue_length 0"), std::string::npos);
  EXPECT_GE(metric(c, "cke_generation_tokens_per_second"), 0);
}

// --api-key: 401 without or with a wrong key, 200 with it; /health stays open.
// Float flags take finite numbers only: a usage error before any model is read.
TEST(ServerCli, NonFiniteFlagValuesAreUsageErrors) {
  for (const char* bad : {"--temp nan", "--top-p nan", "--min-p inf", "--grace nan"}) {
    const test::CliResult r =
        test::run_tool(CKE_SERVER_BIN, std::string("-m none.gguf ") + bad, "2>&1");
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("is not a finite number"), std::string::npos) << bad << ": " << r.out;
  }
}

TEST(ServerAuth, ApiKeyIsRequiredExceptForHealth) {
  CKE_REQUIRE_SHARED(path, kModel);
  test::ServerProcess s;
  ASSERT_TRUE(s.start({"-m", path, "-t", "1", "-c", "256", "--api-key", "sesame"})) << s.log();
  httplib::Client c("127.0.0.1", s.port());
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();
  expect_openai_error(c.Post("/v1/completions", body, "application/json"), 401, "API key");
  expect_openai_error(
      c.Post("/v1/completions", {{"Authorization", "Bearer wrong"}}, body, "application/json"), 401,
      "API key");
  expect_openai_error(c.Get("/v1/models"), 401, "API key");
  auto ok =
      c.Post("/v1/completions", {{"Authorization", "Bearer sesame"}}, body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  // No chat template in stories260K and none named: chat requests are a clear 400.
  expect_openai_error(c.Post("/v1/chat/completions", {{"Authorization", "Bearer sesame"}},
                             json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump(),
                             "application/json"),
                      400, "no chat template");
  EXPECT_EQ(s.stop(), 0);
}

// One slot, a queue of one: of many simultaneous long requests the first runs, one waits,
// the rest get 503 at once; the waiting one completes.
TEST(ServerQueue, BeyondTheQueueIs503) {
  CKE_REQUIRE_SHARED(path, kModel);
  test::ServerProcess s;
  ASSERT_TRUE(s.start({"-m", path, "-t", "1", "-c", "2048", "--parallel", "1", "--queue", "1"}))
      << s.log();
  constexpr int kClients = 8;
  const json bias = test::ban_eos(test::shared_path(kModel));
  std::vector<int> status(kClients, 0);
  std::vector<std::string> bodies(kClients);
  std::vector<std::thread> th;
  for (int i = 0; i < kClients; ++i)
    th.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(120, 0);
      const json body = {{"prompt", "Once upon a time"},
                         {"max_tokens", 1500},
                         {"temperature", 0},
                         {"logit_bias", bias}};
      auto r = c.Post("/v1/completions", body.dump(), "application/json");
      if (r) status[i] = r->status, bodies[i] = r->body;
    });
  for (auto& t : th) t.join();
  int ok = 0, busy = 0;
  for (int i = 0; i < kClients; ++i) {
    if (status[i] == 200) ++ok;
    if (status[i] == 503) {
      ++busy;
      const json j = json::parse(bodies[i]);
      EXPECT_EQ(j["error"]["code"], 503);
      EXPECT_NE(j["error"]["message"].get<std::string>().find("queue is full"), std::string::npos);
    }
  }
  EXPECT_EQ(ok + busy, kClients);
  EXPECT_GE(ok, 2);  // the one running and the one queued
  EXPECT_GE(busy, 1);
  EXPECT_EQ(s.stop(), 0);
}

// SIGTERM while a request is in flight: it still completes, then the server exits 0.
TEST(ServerShutdown, InFlightRequestFinishesThenExitZero) {
  CKE_REQUIRE_SHARED(path, kModel);
  test::ServerProcess s;
  ASSERT_TRUE(s.start({"-m", path, "-t", "1", "-c", "2048", "--grace", "20"})) << s.log();
  std::atomic<int> status{0};
  std::string text;
  const json bias = test::ban_eos(test::shared_path(kModel));
  std::thread t([&] {
    httplib::Client c("127.0.0.1", s.port());
    c.set_read_timeout(60, 0);
    auto r = c.Post("/v1/completions",
                    json{{"prompt", "Once upon a time"},
                         {"max_tokens", 600},
                         {"temperature", 0},
                         {"logit_bias", bias}}
                        .dump(),
                    "application/json");
    if (r) {
      text = r->body;
      status = r->status;
    }
  });
  // Wait until it is generating, then ask the server to stop.
  httplib::Client c("127.0.0.1", s.port());
  for (int i = 0; i < 500 && metric(c, "cke_slots_busy") != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const int code = s.stop();
  t.join();
  EXPECT_EQ(code, 0) << s.log();
  EXPECT_EQ(status, 200);
  if (status == 200) {
    EXPECT_EQ(json::parse(text)["usage"]["completion_tokens"], 600);
  }
  EXPECT_NE(s.log().find("SIGTERM"), std::string::npos) << s.log();
}

}  // namespace
}  // namespace cke
