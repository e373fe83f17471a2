// The bodies cke-server answers /v1/completions and /v1/chat/completions with, in OpenAI's
// shapes (plus llama-server's "timings"): the whole response, and the chunks of a stream.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/chat/generate_session.h"

namespace cke::server {

// What every body of one response repeats.
struct ResponseHead {
  bool chat = false;
  std::string id;  // "chatcmpl-7", "cmpl-8"
  int64_t created = 0;
  std::string model;
};

// Generated text may hold invalid UTF-8 (bytes the model made up, a character cut by
// max_tokens): such bytes become U+FFFD instead of an exception.
std::string dump_json(const nlohmann::json& j);

// "stop" (end of generation, stop string), "length" (max_tokens, full context), or
// "cancelled" (a shutdown's grace time ran out).
const char* openai_finish_reason(FinishReason r);

nlohmann::json completion_body(const ResponseHead& h, const GenerateResult& g);
// Stream chunks: chat's first announces the role; then text; the last has finish_reason,
// usage and timings.
nlohmann::json role_chunk(const ResponseHead& h);
nlohmann::json text_chunk(const ResponseHead& h, const std::string& text);
nlohmann::json final_chunk(const ResponseHead& h, const GenerateResult& g);

}  // namespace cke::server
