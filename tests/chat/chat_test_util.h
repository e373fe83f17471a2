// Helpers shared by the chat tests: the repository's templates, by name.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "tests/common/shared.h"

namespace cke::test {

inline std::string chat_template_dir() {
  return source_path("circuits/chat_templates");
}

// One of the repository's chat templates (fails the test if it does not load).
inline ChatTemplate repo_template(const std::string& name) {
  std::string err;
  auto t = load_chat_template(chat_template_dir() + "/" + name + ".yaml", &err);
  EXPECT_TRUE(t) << err;
  return t ? *t : ChatTemplate{};
}

inline std::string render(const ChatTemplate& t, const std::vector<ChatMessage>& msgs,
                          bool add_generation_prompt = true) {
  std::string err;
  auto s = render_chat(t, msgs, add_generation_prompt, &err);
  EXPECT_TRUE(s) << err;
  return s ? *s : std::string("<render failed>");
}

}  // namespace cke::test
