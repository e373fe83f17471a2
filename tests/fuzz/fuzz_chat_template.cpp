// libFuzzer target for chat templates (runtime/chat/template_*.cpp, chat_template.h) and the
// stop-string matcher (runtime/chat/stop_matcher.cpp).
//
// Input: <template YAML> NUL <message> NUL <message> ...; each message is one role byte
// (0 system, 1 user, 2 assistant, anything else an unknown role) and its content.
//   - the YAML loads into a template or fails with "<file>: <field>: <reason>" lines;
//   - the messages are rendered with it and with the repository's templates: rendering fails
//     exactly when a role is unknown, starts with `begin`, ends with the generation prompt
//     when asked, and each turn's rendering extends the previous one (what ChatSession needs);
//   - the rendering streams through a StopMatcher of the template's stop strings in pieces;
//   - the YAML text is also matched as a model's Jinja template against all of them.
//
//   fuzz_chat_template CORPUS_DIR tests/fuzz/corpus/chat_template -max_len=4096
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/chat/stop_matcher.h"
#include "tests/fuzz/fuzz_common.h"

using namespace cke;

namespace {

const std::vector<ChatTemplate>& repo_templates() {
  static const std::vector<ChatTemplate> all = [] {
    std::string err;
    auto t = load_chat_templates({std::string(CKE_SOURCE_DIR) + "/circuits/chat_templates"}, &err);
    if (!t) {
      std::fprintf(stderr, "fuzz_chat_template: repository templates not loaded: %s\n",
                   err.c_str());
      return std::vector<ChatTemplate>{};
    }
    return *t;
  }();
  return all;
}

bool is_role(const std::string& r) {
  return r == "system" || r == "user" || r == "assistant";
}

void check_stream(const std::vector<std::string>& stops, const std::string& text, uint8_t salt) {
  StopMatcher m(stops);
  std::string out;
  size_t step = 1 + salt % 7;
  for (size_t at = 0; at < text.size(); at += step, step = 1 + (step * 5 + salt) % 9)
    out += m.push(std::string_view(text).substr(at, step));
  const bool stopped = m.stopped();
  out += m.flush();
  size_t first = std::string::npos;
  for (const std::string& s : stops)
    if (!s.empty()) first = std::min(first, text.find(s));
  FUZZ_CHECK(stopped == (first != std::string::npos));
  FUZZ_CHECK(text.compare(0, out.size(), out) == 0 && out.size() <= text.size());
  if (!stopped) {
    FUZZ_CHECK(out == text);
    return;
  }
  // The text after what was shown starts with a stop string.
  bool at_stop = false;
  for (const std::string& s : stops)
    at_stop = at_stop || (!s.empty() && text.compare(out.size(), s.size(), s) == 0);
  FUZZ_CHECK(at_stop);
  // It is the earliest one unless a stop string lies inside another one (then the streamed
  // cut is at the first stop *completed*, which may start later).
  bool nested = false;
  for (const std::string& a : stops)
    for (const std::string& b : stops)
      nested = nested || (&a != &b && a.size() < b.size() && b.find(a, 1) != std::string::npos);
  if (!nested) FUZZ_CHECK(out.size() == first);
}

void check_render(const ChatTemplate& t, const std::vector<ChatMessage>& msgs, uint8_t salt) {
  bool roles_ok = true;
  for (const ChatMessage& m : msgs) roles_ok = roles_ok && is_role(m.role);
  std::string err;
  const std::optional<std::string> with = render_chat(t, msgs, true, &err);
  FUZZ_CHECK(with.has_value() == roles_ok);
  if (!with) {
    FUZZ_CHECK(err.rfind("message ", 0) == 0);
    return;
  }
  const std::optional<std::string> without = render_chat(t, msgs, false, &err);
  FUZZ_CHECK(without && with->rfind(t.begin, 0) == 0);
  FUZZ_CHECK(*with == *without + t.generation_prompt);
  const size_t n = std::min<size_t>(msgs.size(), 16);
  for (size_t k = 0; k < n; ++k) {
    const std::span<const ChatMessage> before(msgs.data(), k), after(msgs.data(), k + 1);
    const std::optional<std::string> a = render_chat(t, before, false, &err);
    const std::optional<std::string> b = render_chat(t, after, true, &err);
    FUZZ_CHECK(a && b && b->compare(0, a->size(), *a) == 0);
  }
  check_stream(t.stop, *with, salt);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = fuzz::as_text(data, size);
  const size_t nul = input.find('\0');
  const std::string_view yaml = input.substr(0, nul);
  std::vector<ChatMessage> msgs;
  if (nul != std::string_view::npos) {
    for (size_t at = nul + 1; at <= input.size();) {
      size_t end = input.find('\0', at);
      if (end == std::string_view::npos) end = input.size();
      const std::string_view m = input.substr(at, end - at);
      static const char* kRoles[] = {"system", "user", "assistant"};
      const uint8_t r = m.empty() ? 1 : static_cast<uint8_t>(m[0]);
      msgs.push_back({r < 3 ? kRoles[r] : std::string(m.substr(0, 1)) + "tool",
                      std::string(m.empty() ? m : m.substr(1))});
      at = end + 1;
    }
  }
  const uint8_t salt = size ? data[size - 1] : 0;

  std::string err;
  // No file name: `name` need not match one (the seeds are the repository's templates).
  std::optional<ChatTemplate> t = parse_chat_template(yaml, "", &err);
  FUZZ_CHECK(t.has_value() == err.empty());
  if (!t) {
    if (fuzz::debug()) std::fprintf(stderr, "%s\n", err.c_str());
    FUZZ_CHECK(err.rfind("<chat template>: ", 0) == 0);
  } else {
    FUZZ_CHECK(!t->name.empty() && !t->detect_all_of.empty());
    for (const std::string& s : t->stop) FUZZ_CHECK(!s.empty());
    check_render(*t, msgs, salt);
  }

  std::vector<ChatTemplate> all = repo_templates();
  for (const ChatTemplate& r : all) check_render(r, msgs, salt);
  if (t) all.push_back(*t);
  std::string derr;
  const ChatTemplate* hit = detect_chat_template(all, yaml, &derr);
  if (!hit) FUZZ_CHECK(!derr.empty());
  std::string serr;
  const std::optional<ChatTemplate> sel = select_chat_template(all, "", yaml, &serr);
  FUZZ_CHECK(sel.has_value() == (hit != nullptr));
  if (sel && hit) FUZZ_CHECK(sel->name == hit->name);
  return 0;
}
