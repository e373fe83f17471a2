// Chat templates as data: one YAML file per prompt style (circuits/chat_templates/*.yaml),
// loaded strictly, recognised from the Jinja text in a GGUF's `tokenizer.chat_template`, and
// rendered into the prompt string the model was trained on.
//
//   auto all = cke::load_chat_templates(cke::default_chat_template_dirs(), &err);
//   auto t = cke::select_chat_template(*all, /*name=*/"", jinja_text_or_nullopt, &err);
//   std::string prompt = cke::render_chat(*t, messages, /*add_generation_prompt=*/true, &err);
//
// This is not a Jinja interpreter. Like llama.cpp's llm_chat_detect_template /
// llm_chat_apply_template, a style is recognised by substrings of the Jinja text and
// rendered by a fixed rule; here the rule's strings live in the data, not in the code.
// The file format is described in docs/chat.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cke {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// Who writes the BOS token at the start of a conversation.
enum class ChatBos {
  kTokenizer,  // the tokenizer, as its vocab says (tokenizer.ggml.add_bos_token)
  kAlways,     // the template: BOS once, whatever the vocab's add_bos flag says
  kNever,      // nobody
};

// Where a system message goes.
enum class ChatSystemMode {
  kOwnTurn,        // its own turn: roles.system prefix + content + suffix
  kPrependToUser,  // no system turn: its text + separator opens the next user message
};

struct ChatRoleFormat {
  std::string prefix;  // before the content
  std::string suffix;  // after the content
};

struct ChatTemplate {
  std::string name;  // == the file's stem; what --chat-template takes
  std::string description;
  std::string file;  // where it was loaded from (for messages)
  // Recognition in tokenizer.chat_template: every `all_of` substring present and no
  // `none_of` substring; of several matching templates the highest priority wins.
  int32_t priority = 0;
  std::vector<std::string> detect_all_of;
  std::vector<std::string> detect_none_of;
  ChatBos bos = ChatBos::kTokenizer;
  std::string begin;          // written once, at the start of the conversation
  bool trim_content = false;  // strip ASCII whitespace around every message's content
  ChatSystemMode system_mode = ChatSystemMode::kOwnTurn;
  std::string system_separator;  // kPrependToUser: between the system text and the user's
  ChatRoleFormat system;         // kOwnTurn only
  ChatRoleFormat user;
  ChatRoleFormat assistant;
  std::string generation_prompt;  // opens the assistant's turn (add_generation_prompt)
  // End-of-turn markers: generation stops when the text contains one, or when a token whose
  // text is exactly one of them is sampled (besides the tokenizer's end-of-generation ids).
  std::vector<std::string> stop;
};

// Parses one template. `file` names it in errors and its stem must equal `name`
// (pass "" to skip that check). Every field is required and unknown fields are errors;
// *err lists every problem, one "<file>: <field>: <reason>" per line.
std::optional<ChatTemplate> parse_chat_template(std::string_view yaml_text, const std::string& file,
                                                std::string* err);
std::optional<ChatTemplate> load_chat_template(const std::filesystem::path& path, std::string* err);

// Every *.yaml directly in each dir, sorted by name. A name found in an earlier dir hides
// the same name in a later one. Any invalid file, a missing dir or no template at all is
// an error.
std::optional<std::vector<ChatTemplate>> load_chat_templates(
    const std::vector<std::filesystem::path>& dirs, std::string* err);

// CKE_CHAT_TEMPLATES (colon-separated dirs) if set, else <data>/circuits/chat_templates
// (the data root of resolver/data_dirs.h: the source tree, or <prefix>/share/cke installed).
std::vector<std::filesystem::path> default_chat_template_dirs();

// "chatml, gemma, llama3": the names, for error messages.
std::string chat_template_names(std::span<const ChatTemplate> templates);

// Recognises the style of a Jinja chat template (or a template name stored in its place, as
// llama.cpp accepts). nullptr with *err when nothing matches or the top priority is tied.
const ChatTemplate* detect_chat_template(std::span<const ChatTemplate> templates,
                                         std::string_view jinja, std::string* err);

// The template to use: `name` if given (a template name, or a path to a .yaml file),
// else the one recognised from `jinja` (the model's tokenizer.chat_template). With neither,
// or an unknown name, or unrecognised Jinja: nullopt and *err listing the available names.
std::optional<ChatTemplate> select_chat_template(std::span<const ChatTemplate> templates,
                                                 const std::string& name,
                                                 std::optional<std::string_view> jinja,
                                                 std::string* err);

// The prompt for `messages`, plus the generation prompt if asked. A system message under
// kPrependToUser waits for the next user message (alone it renders nothing). Fails only
// on a role other than system/user/assistant.
std::optional<std::string> render_chat(const ChatTemplate& t, std::span<const ChatMessage> messages,
                                       bool add_generation_prompt, std::string* err);

}  // namespace cke
