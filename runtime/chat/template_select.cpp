// Choosing a chat template: by name (or file), else by recognising the model's Jinja text.
#include <algorithm>

#include "runtime/chat/chat_template.h"

namespace cke {

namespace {

bool matches(const ChatTemplate& t, std::string_view jinja) {
  for (const auto& s : t.detect_all_of)
    if (jinja.find(s) == std::string_view::npos) return false;
  for (const auto& s : t.detect_none_of)
    if (jinja.find(s) != std::string_view::npos) return false;
  return true;
}

}  // namespace

const ChatTemplate* detect_chat_template(std::span<const ChatTemplate> templates,
                                         std::string_view jinja, std::string* err) {
  // llama.cpp also accepts a template name written where the Jinja text would be.
  for (const auto& t : templates)
    if (jinja == t.name) return &t;
  std::vector<const ChatTemplate*> hits;
  for (const auto& t : templates)
    if (matches(t, jinja)) hits.push_back(&t);
  if (hits.empty()) {
    *err = "tokenizer.chat_template is not recognised by any chat template (available: " +
           chat_template_names(templates) + ")";
    return nullptr;
  }
  std::stable_sort(hits.begin(), hits.end(), [](const ChatTemplate* a, const ChatTemplate* b) {
    return a->priority > b->priority;
  });
  if (hits.size() > 1 && hits[0]->priority == hits[1]->priority) {
    *err = "tokenizer.chat_template matches '" + hits[0]->name + "' and '" + hits[1]->name +
           "' with the same priority " + std::to_string(hits[0]->priority) +
           " (choose one by name)";
    return nullptr;
  }
  return hits[0];
}

std::optional<ChatTemplate> select_chat_template(std::span<const ChatTemplate> templates,
                                                 const std::string& name,
                                                 std::optional<std::string_view> jinja,
                                                 std::string* err) {
  if (!name.empty()) {
    // A path to a template file, or a name.
    if (name.find('/') != std::string::npos || name.ends_with(".yaml"))
      return load_chat_template(name, err);
    for (const auto& t : templates)
      if (t.name == name) return t;
    *err =
        "no chat template named '" + name + "' (available: " + chat_template_names(templates) + ")";
    return std::nullopt;
  }
  if (!jinja || jinja->empty()) {
    *err = "the model has no tokenizer.chat_template (available chat templates: " +
           chat_template_names(templates) + ")";
    return std::nullopt;
  }
  const ChatTemplate* t = detect_chat_template(templates, *jinja, err);
  if (!t) return std::nullopt;
  return *t;
}

}  // namespace cke
