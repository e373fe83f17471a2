// From a conversation to token ids: the template a model uses, and the ids of rendered chat
// text with the BOS the template asks for. Shared by ChatSession, Session and cke-server.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"

namespace cke {

// The template named `name` (a name or a .yaml path), else the one recognised from the
// model file's tokenizer.chat_template. nullopt and *err (listing the available names) when
// there is neither, or the name or the Jinja text is unknown.
std::optional<ChatTemplate> chat_template_for_model(const std::string& model_path,
                                                    const std::string& name, std::string* err);

// The ids of rendered chat text. `at_start`: the text opens the conversation, so BOS comes
// first as the template says (kAlways: one BOS; kTokenizer: as the vocab says). Control
// tokens spelled in the text are parsed. False and *err when the template wants a BOS the
// vocab does not have.
bool encode_chat_text(const ChatTemplate& tmpl, const Tokenizer& tok, std::string_view text,
                      bool at_start, std::vector<int32_t>* ids, std::string* err);

// The ids of a conversation rendered with the generation prompt, opening the conversation.
bool chat_prompt_tokens(const ChatTemplate& tmpl, const Tokenizer& tok,
                        std::span<const ChatMessage> messages, std::vector<int32_t>* ids,
                        std::string* err);

}  // namespace cke
