#include "runtime/server/utf8_holdback.h"

#include <algorithm>

#include "runtime/tokenizer/unicode.h"

namespace cke::server {

size_t utf8_complete_prefix(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    const char c = s[s.size() - back];
    const auto u = static_cast<unsigned char>(c);
    if ((u & 0xC0) == 0x80) continue;           // a continuation byte
    if (u < 0xC2 || u > 0xF4) return s.size();  // no sequence starts with it
    return tok::utf8_len(c) > back ? s.size() - back : s.size();
  }
  return s.size();
}

std::string Utf8Holdback::push(std::string_view piece) {
  held_.append(piece);
  const size_t n = utf8_complete_prefix(held_);
  std::string out = held_.substr(0, n);
  held_.erase(0, n);
  return out;
}

std::string Utf8Holdback::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace cke::server
