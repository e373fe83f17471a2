// Session: text generation over one Engine. It owns the sampler chain, the stop strings,
// the chat template (optional) and the token stream, and reuses the KV cache between calls:
// a prompt is evaluated only from where it stops agreeing with the tokens the cache holds.
//
//   cke::Session s(*engine, tmpl_or_nullopt);
//   cke::GenerateParams p;  p.sampling.temp = 0;  p.max_tokens = 32;  p.stop = {"\n\n"};
//   cke::GenerateResult r;
//   s.generate_text("Once upon a time", p, [](int32_t, std::string_view t) {
//     fwrite(t.data(), 1, t.size(), stdout); return true; }, &r, &err);
//
// cke-run (plain and --chat through ChatSession) and cke-server generate through it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/core/engine.h"
#include "runtime/core/sampler.h"

namespace cke {

struct GenerateParams {
  SamplerParams sampling;   // temperature, top_k, top_p, min_p, penalties, seed, logit_bias
  int32_t max_tokens = -1;  // tokens to sample (-1: until end of generation or context)
  // Generation stops when the text contains one of these (the string is not part of the
  // result) or when a token whose text is exactly one of them is sampled.
  std::vector<std::string> stop;
};

enum class FinishReason {
  kStop,       // a stop string appeared in the text
  kEos,        // an end-of-generation token, or a token spelling a stop string
  kLength,     // max_tokens
  kContext,    // the KV cache is full
  kCancelled,  // the token callback returned false
};
const char* finish_reason_name(FinishReason r);  // "stop", "eos", "length", "context", ...

struct GenerateResult {
  std::string text;             // generated text without the stop string
  std::vector<int32_t> tokens;  // sampled tokens, without a final end-of-generation token
  FinishReason finish = FinishReason::kEos;
  int32_t prompt_tokens = 0;      // tokens of the prompt
  int32_t cached_tokens = 0;      // prompt tokens the KV cache already held (not evaluated)
  int32_t completion_tokens = 0;  // tokens sampled (an end-of-generation token included)
  double prompt_ms = 0;
  double generate_ms = 0;
};

// Called with each sampled token and the text it makes safe to show (may be empty while a
// possible stop string is held back). Returning false cancels the generation.
using TokenCallback = std::function<bool(int32_t id, std::string_view text)>;
// Called with the logits every Engine::eval returns (n rows of n_vocab), for parity tools.
using LogitsObserver = std::function<void(const std::vector<float>& rows)>;

// How a Session's tokens reach its engine: Engine::eval of its sequence, unless it is given
// an evaluator — cke-server's scheduler, which batches the decode steps of its slots'
// sessions into one plan call (runtime/server/batch_scheduler.h). Same arguments, same
// logits as Engine::eval(seq, ...).
class SequenceEvaluator {
 public:
  virtual ~SequenceEvaluator() = default;
  virtual bool eval(int32_t seq, std::span<const int32_t> ids, std::vector<float>* logits,
                    bool all_logits, std::string* err) = 0;
};

class Session {
 public:
  // The engine must outlive the session. The session empties the KV cells of the engine's
  // sequence `seq` and owns them from then on. `tmpl` is needed only by generate_chat().
  // `via` (optional, must outlive the session) evaluates its tokens instead of the engine.
  explicit Session(Engine& engine, std::optional<ChatTemplate> tmpl = std::nullopt, int32_t seq = 0,
                   SequenceEvaluator* via = nullptr);

  // Generates after `prompt` (token ids, used as given). Returns false with *err on an
  // engine error, a token id out of the vocab, an empty prompt or a prompt that does not
  // fit the context (the cache is then left as it was).
  bool generate(std::span<const int32_t> prompt, const GenerateParams& params,
                const TokenCallback& on_token, GenerateResult* result, std::string* err);
  // The text tokenized with the vocab's BOS and control tokens parsed.
  bool generate_text(std::string_view prompt, const GenerateParams& params,
                     const TokenCallback& on_token, GenerateResult* result, std::string* err);
  // The conversation rendered through the chat template with the generation prompt; the
  // template's stop strings are added to params.stop.
  bool generate_chat(std::span<const ChatMessage> messages, const GenerateParams& params,
                     const TokenCallback& on_token, GenerateResult* result, std::string* err);

  // The prompt ids generate_chat() would use (false and *err without a template).
  bool chat_prompt(std::span<const ChatMessage> messages, std::vector<int32_t>* ids,
                   std::string* err) const;

  // Evaluates `ids` after what the cache holds (no sampling): parity tools feed tokens
  // one decode step at a time with one_at_a_time.
  bool append(std::span<const int32_t> ids, bool one_at_a_time, std::string* err);

  // How many leading tokens of `prompt` the KV cache already holds.
  size_t cached_prefix(std::span<const int32_t> prompt) const;

  // Every eval's logits go to `obs` too; all_prompt_logits asks for every prompt row.
  void set_logits_observer(LogitsObserver obs, bool all_prompt_logits);

  Engine& engine() { return engine_; }
  int32_t sequence() const { return seq_; }
  const std::optional<ChatTemplate>& chat_template() const { return tmpl_; }
  const std::vector<int32_t>& kv_tokens() const { return kv_tokens_; }  // in position order

 private:
  bool eval(std::span<const int32_t> ids, bool all_logits, std::string* err);

  Engine& engine_;
  std::optional<ChatTemplate> tmpl_;
  int32_t seq_ = 0;
  SequenceEvaluator* via_ = nullptr;
  std::vector<int32_t> kv_tokens_;
  std::vector<float> logits_;  // of the last evaluated token, valid while have_logits_
  bool have_logits_ = false;
  LogitsObserver observer_;
  bool all_prompt_logits_ = false;
};

}  // namespace cke
