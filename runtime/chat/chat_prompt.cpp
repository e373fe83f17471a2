#include "runtime/chat/chat_prompt.h"

#include <fmt/format.h>

#include "runtime/gguf/gguf.h"

namespace cke {

std::optional<ChatTemplate> chat_template_for_model(const std::string& model_path,
                                                    const std::string& name, std::string* err) {
  auto all = load_chat_templates(default_chat_template_dirs(), err);
  if (!all) return std::nullopt;
  std::optional<std::string_view> jinja;
  gguf::GgufError gerr;
  auto file = gguf::File::open(model_path, &gerr);
  if (!file) {
    *err = gerr.message;
    return std::nullopt;
  }
  if (file->has("tokenizer.chat_template")) {
    jinja = file->str("tokenizer.chat_template", &gerr);
    if (!jinja) {
      *err = gerr.message;
      return std::nullopt;
    }
  }
  return select_chat_template(*all, name, jinja, err);
}

bool encode_chat_text(const ChatTemplate& tmpl, const Tokenizer& tok, std::string_view text,
                      bool at_start, std::vector<int32_t>* ids, std::string* err) {
  ids->clear();
  if (at_start && tmpl.bos == ChatBos::kAlways) {
    if (tok.bos() < 0) {
      *err = fmt::format("chat template '{}' starts with BOS, but the vocab has no BOS token",
                         tmpl.name);
      return false;
    }
    ids->push_back(tok.bos());
  }
  const std::vector<int32_t> text_ids =
      tok.encode(text, at_start && tmpl.bos == ChatBos::kTokenizer, /*parse_special=*/true);
  ids->insert(ids->end(), text_ids.begin(), text_ids.end());
  return true;
}

bool chat_prompt_tokens(const ChatTemplate& tmpl, const Tokenizer& tok,
                        std::span<const ChatMessage> messages, std::vector<int32_t>* ids,
                        std::string* err) {
  std::optional<std::string> text = render_chat(tmpl, messages, true, err);
  return text && encode_chat_text(tmpl, tok, *text, /*at_start=*/true, ids, err);
}

}  // namespace cke
