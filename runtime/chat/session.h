// A multi-turn chat over one Engine: each user message renders the conversation again with
// the chat template, evaluates only the part the KV cache does not hold yet, and samples the
// reply until an end-of-generation token, a stop string of the template, the reply limit
// or a full context. The evaluation and sampling are a Session's; this class keeps the
// conversation and the transcript that maps the KV cache back to text.
//
//   cke::ChatSession chat(*engine, tmpl, sampler_params, {.system = "Be brief.", .n_predict = 64});
//   chat.send("Hello", [](std::string_view s) { fwrite(s.data(), 1, s.size(), stdout); },
//             &stats, &err);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/chat/generate_session.h"
#include "runtime/chat/transcript.h"
#include "runtime/core/engine.h"
#include "runtime/core/sampler.h"

namespace cke {

struct ChatOptions {
  std::string system;      // system message ("" = none)
  int32_t n_predict = -1;  // tokens per reply (-1: until the end of the turn or context)
};

enum class ChatStop {
  kEndOfGeneration,  // the tokenizer's EOG token, or a token spelling a stop string
  kStopString,       // a stop string appeared in the generated text
  kLimit,            // n_predict tokens
  kContextFull,      // the KV cache is full: the conversation cannot go on
};
const char* chat_stop_name(ChatStop s);

struct ChatTurnStats {
  int32_t kv_before = 0;      // KV cells at the start of the turn
  int32_t kv_reused = 0;      // cells kept from earlier turns (not evaluated again)
  int32_t prompt_tokens = 0;  // tokens evaluated for the new part of the prompt
  int32_t generated = 0;      // tokens sampled for the reply
  int32_t kv_after = 0;       // KV cells at the end of the turn
  double prompt_ms = 0;
  double generate_ms = 0;
  ChatStop stop = ChatStop::kEndOfGeneration;
};

class ChatSession {
 public:
  // The engine must outlive the session. The session empties the engine's KV cache and owns
  // it from then on.
  ChatSession(Engine& engine, ChatTemplate tmpl, const SamplerParams& sampling,
              ChatOptions options);

  // Adds a user message and produces the reply, passing its text to `on_text` as it is
  // generated (stop strings are never shown). Returns false with *err when the turn could
  // not run: an engine error, a template without BOS in the vocab, or a prompt that does
  // not fit the context (stats->stop == kContextFull; the message is then dropped).
  // A reply cut by a full context returns true with stats->stop == kContextFull.
  bool send(std::string_view user_text, const std::function<void(std::string_view)>& on_text,
            ChatTurnStats* stats, std::string* err);

  const ChatTemplate& chat_template() const { return tmpl_; }
  const std::vector<ChatMessage>& messages() const { return messages_; }
  // The tokens in the KV cache, in position order.
  const std::vector<int32_t>& kv_tokens() const { return session_.kv_tokens(); }
  // The text the KV cache holds (control tokens spelled out).
  const std::string& kv_text() const { return transcript_.text(); }

 private:
  Engine& engine_;
  ChatTemplate tmpl_;
  SamplerParams sampling_;
  ChatOptions opt_;
  Session session_;
  std::vector<ChatMessage> messages_;
  Transcript transcript_;
};

}  // namespace cke
