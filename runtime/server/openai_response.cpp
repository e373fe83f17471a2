#include "runtime/server/openai_response.h"

namespace cke::server {

using nlohmann::json;

namespace {

json usage(const GenerateResult& g) {
  return {{"prompt_tokens", g.prompt_tokens},
          {"completion_tokens", g.completion_tokens},
          {"total_tokens", g.prompt_tokens + g.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", g.cached_tokens}}}};
}

json timings(const GenerateResult& g) {
  const int32_t evaluated = g.prompt_tokens - g.cached_tokens;
  return {{"cache_n", g.cached_tokens},
          {"prompt_n", evaluated},
          {"prompt_ms", g.prompt_ms},
          {"prompt_per_second", g.prompt_ms > 0 ? evaluated * 1e3 / g.prompt_ms : 0.0},
          {"predicted_n", g.completion_tokens},
          {"predicted_ms", g.generate_ms},
          {"predicted_per_second",
           g.generate_ms > 0 ? g.completion_tokens * 1e3 / g.generate_ms : 0.0}};
}

// One choice: `text` as completions' "text", chat's "message" or a stream's "delta".
json choice(const ResponseHead& h, const std::string& text, const json& finish, bool delta) {
  json c = {{"index", 0}, {"finish_reason", finish}};
  if (!h.chat) {
    c["text"] = text;
    c["logprobs"] = nullptr;
  } else if (delta) {
    c["delta"] = text.empty() ? json::object() : json{{"content", text}};
  } else {
    c["message"] = {{"role", "assistant"}, {"content", text}};
  }
  return c;
}

json body(const ResponseHead& h, const char* object, json choice) {
  return {{"id", h.id},
          {"object", object},
          {"created", h.created},
          {"model", h.model},
          {"choices", json::array({std::move(choice)})}};
}

const char* chunk_object(const ResponseHead& h) {
  return h.chat ? "chat.completion.chunk" : "text_completion";
}

}  // namespace

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* openai_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
    case FinishReason::kEos:
      return "stop";
    case FinishReason::kLength:
    case FinishReason::kContext:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "stop";
}

json completion_body(const ResponseHead& h, const GenerateResult& g) {
  json b = body(h, h.chat ? "chat.completion" : "text_completion",
                choice(h, g.text, openai_finish_reason(g.finish), false));
  b["usage"] = usage(g);
  b["timings"] = timings(g);
  return b;
}

json role_chunk(const ResponseHead& h) {
  json c = choice(h, "", nullptr, true);
  c["delta"] = {{"role", "assistant"}, {"content", ""}};
  return body(h, chunk_object(h), std::move(c));
}

json text_chunk(const ResponseHead& h, const std::string& text) {
  return body(h, chunk_object(h), choice(h, text, nullptr, true));
}

json final_chunk(const ResponseHead& h, const GenerateResult& g) {
  json b = body(h, chunk_object(h), choice(h, "", openai_finish_reason(g.finish), true));
  b["usage"] = usage(g);
  b["timings"] = timings(g);
  return b;
}

}  // namespace cke::server
