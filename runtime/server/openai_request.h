// The bodies of POST /v1/completions and /v1/chat/completions, parsed and checked: OpenAI's
// (and llama-server's) field names to GenerateParams, every wrong type or value a 400 with
// a message naming the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/chat/generate_session.h"

namespace cke::server {

// An HTTP error in OpenAI's shape: {"error": {"message", "type", "code"}}.
struct HttpError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
};
std::string error_body(const HttpError& e);

struct CompletionRequest {
  bool chat = false;
  std::string model;                   // "" when absent
  std::vector<ChatMessage> messages;   // chat
  std::string prompt;                  // completions: text ...
  std::vector<int32_t> prompt_tokens;  // ... or token ids (non-empty then)
  GenerateParams params;
  bool stream = false;
};

// `defaults` holds the server's sampling defaults (llama.cpp's). nullopt and *err (400) on
// bad JSON, a missing messages/prompt, a wrong type or a value out of range.
std::optional<CompletionRequest> parse_completion_request(const std::string& body, bool chat,
                                                          const GenerateParams& defaults,
                                                          HttpError* err);

}  // namespace cke::server
