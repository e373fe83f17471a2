// The C API's sessions: greedy text equals the C++ Session's (itself tested against the
// argmax oracle), stop strings and max_tokens pass through, bad arguments are error values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "runtime/capi/cke.h"
#include "runtime/chat/generate_session.h"
#include "tests/common/shared.h"

namespace {

int collect(void* user, int32_t, const char* text, int32_t len) {
  static_cast<std::string*>(user)->append(text, size_t(len));
  return 1;
}

TEST(SessionCApi, GreedyTextEqualsTheCppSession) {
  CKE_REQUIRE_SHARED(path, "models/stories260K.gguf");
  cke_options o{};
  o.n_ctx = 256;
  o.n_threads = 1;
  cke_engine* e = cke_engine_load(path.c_str(), &o);
  ASSERT_NE(e, nullptr) << cke_last_error();
  cke_session* s = cke_session_new(e);
  ASSERT_NE(s, nullptr);
  cke_generate_params p;
  cke_generate_params_default(&p);
  p.temperature = 0;
  p.max_tokens = 24;
  std::string text;
  cke_generate_result r{};
  ASSERT_EQ(cke_session_generate(s, "Once upon a time", &p, collect, &text, &r), 0)
      << cke_last_error();
  EXPECT_EQ(r.completion_tokens, 24);
  EXPECT_EQ(r.finish_reason, CKE_FINISH_LENGTH);

  cke::EngineOptions eo;
  eo.model_path = path;
  eo.n_ctx = 256;
  eo.n_threads = 1;
  std::string err;
  auto engine = cke::Engine::load(eo, &err);
  ASSERT_TRUE(engine) << err;
  cke::Session cs(*engine);
  cke::GenerateParams gp;
  gp.sampling.temp = 0;
  gp.max_tokens = 24;
  cke::GenerateResult want;
  ASSERT_TRUE(cs.generate_text("Once upon a time", gp, nullptr, &want, &err)) << err;
  EXPECT_EQ(text, want.text);

  // A stop string from the text cuts it there.
  const std::string stop = want.text.substr(want.text.size() / 2, 4);
  const char* stops[] = {stop.c_str()};
  p.stop = stops;
  p.n_stop = 1;
  std::string cut;
  ASSERT_EQ(cke_session_generate(s, "Once upon a time", &p, collect, &cut, &r), 0);
  EXPECT_EQ(r.finish_reason, CKE_FINISH_STOP);
  EXPECT_EQ(cut, want.text.substr(0, want.text.find(stop)));
  EXPECT_GT(r.cached_tokens, 0);  // the same prompt: the cache is reused

  // Errors as values.
  EXPECT_EQ(cke_session_new(nullptr), nullptr);
  EXPECT_EQ(cke_session_generate(nullptr, "x", &p, nullptr, nullptr, nullptr), -1);
  EXPECT_EQ(cke_session_generate(s, nullptr, &p, nullptr, nullptr, nullptr), -1);
  p.n_stop = 2;
  p.stop = nullptr;
  EXPECT_EQ(cke_session_generate(s, "x", &p, nullptr, nullptr, nullptr), -1);
  EXPECT_NE(std::string(cke_last_error()).find("bad argument"), std::string::npos);
  // Sampling numbers out of range, NaN included (the sampler would divide by a NaN
  // temperature): an error naming the field, nothing generated.
  p.n_stop = 0;
  for (int field = 0; field < 4; ++field) {
    cke_generate_params q = p;
    const float nan = std::nanf("");
    if (field == 0) q.temperature = nan;
    if (field == 1) q.top_p = 1.5f;
    if (field == 2) q.min_p = nan;
    if (field == 3) q.presence_penalty = -INFINITY;
    const char* name[] = {"temperature", "top_p", "min_p", "presence_penalty"};
    int calls = 0;
    EXPECT_EQ(cke_session_generate(
                  s, "x", &q,
                  [](void* u, int32_t, const char*, int32_t) { return ++*static_cast<int*>(u), 1; },
                  &calls, nullptr),
              -1)
        << name[field];
    EXPECT_NE(std::string(cke_last_error()).find(std::string(name[field]) + " "), std::string::npos)
        << cke_last_error();
    EXPECT_EQ(calls, 0) << name[field];
  }
  cke_session_free(s);
  cke_engine_free(e);
}

}  // namespace
