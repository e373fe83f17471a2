// Rendering a conversation with a chat template: the strings come from the data, the rule
// is fixed (prefix + content + suffix per message; a system message either has its own turn
// or opens the next user message, as llama.cpp's built-in templates do).
#include "runtime/chat/chat_template.h"

namespace cke {

namespace {

// llama.cpp's trim(): ASCII whitespace (isspace in the C locale) at both ends.
std::string_view trim(std::string_view s) {
  auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  };
  size_t b = 0, e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::optional<std::string> render_chat(const ChatTemplate& t, std::span<const ChatMessage> messages,
                                       bool add_generation_prompt, std::string* err) {
  std::string out = t.begin;
  std::string pending_system;  // kPrependToUser: waits for the next user message
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string_view content = t.trim_content ? trim(m.content) : std::string_view(m.content);
    if (m.role == "system") {
      if (t.system_mode == ChatSystemMode::kOwnTurn) {
        out.append(t.system.prefix).append(content).append(t.system.suffix);
      } else {
        pending_system.append(content);  // several system messages concatenate
      }
      continue;
    }
    const ChatRoleFormat* f = m.role == "user"        ? &t.user
                              : m.role == "assistant" ? &t.assistant
                                                      : nullptr;
    if (!f) {
      *err = "message " + std::to_string(i) + ": role '" + m.role +
             "' is not system, user or assistant";
      return std::nullopt;
    }
    out.append(f->prefix);
    if (f == &t.user && !pending_system.empty()) {
      out.append(pending_system).append(t.system_separator);
      pending_system.clear();
    }
    out.append(content).append(f->suffix);
  }
  if (add_generation_prompt) out.append(t.generation_prompt);
  return out;
}

}  // namespace cke
