// Streamed text in whole UTF-8 characters. A token can end in the middle of a character
// (byte-fallback tokens, BPE pieces of a multi-byte character); JSON needs whole ones, so
// an incomplete tail is held back until the next piece completes it (or the stream ends).
#pragma once

#include <string>
#include <string_view>

namespace cke::server {

// The length of the longest prefix of `s` that does not end inside a UTF-8 sequence which
// more bytes could still complete. (Invalid bytes are not held: the JSON writer replaces
// them with U+FFFD.)
size_t utf8_complete_prefix(std::string_view s);

class Utf8Holdback {
 public:
  // Adds a piece; returns the text that ends on a character boundary.
  std::string push(std::string_view piece);
  // Whatever is held back, when the stream ends.
  std::string flush();

 private:
  std::string held_;
};

}  // namespace cke::server
