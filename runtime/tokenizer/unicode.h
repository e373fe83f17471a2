// Unicode helpers for the tokenizer (internal).
//
// UTF-8 decoding follows llama.cpp's unicode_cpts_from_utf8 byte for byte, including its
// leniency: the sequence length comes from the lead byte alone, overlong forms and
// surrogates are accepted, and a malformed sequence becomes U+FFFD consuming one byte.
// Code point categories are the Unicode general categories as PCRE2 knows them (read once
// from PCRE2's own tables, see unicode.cpp); whitespace is the Unicode White_Space set,
// which is what llama.cpp's generated tables use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cke::tok {

// Length of the UTF-8 sequence starting with `lead`, from its high nibble (1..4);
// continuation bytes count as 1 (llama.cpp's unicode_len_utf8).
inline size_t utf8_len(char lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[static_cast<uint8_t>(lead) >> 4];
}

inline constexpr uint32_t kReplacementChar = 0xFFFD;

std::vector<uint32_t> utf8_to_cpts(std::string_view s);
// Appends the UTF-8 form of `cpt`; values above U+10FFFF (which the lenient decoder can
// produce from F5..F7 lead bytes) are written as U+FFFD.
void append_utf8(std::string& out, uint32_t cpt);

enum Category : uint8_t {
  kCatOther = 0,  // C* (control, format, unassigned, surrogate, private use) or undefined
  kCatNumber,     // N*
  kCatLetter,     // L*
  kCatPunct,      // P*
  kCatMark,       // M*
  kCatSymbol,     // S*
  kCatSeparator,  // Z*
};
Category cpt_category(uint32_t cpt);
bool cpt_is_whitespace(uint32_t cpt);

// GPT-2 byte-level encoding: each byte maps to one printable code point.
const std::string& byte_to_gpt2(uint8_t b);
// Inverse; nullopt for code points that are not the image of a byte.
std::optional<uint8_t> gpt2_to_byte(uint32_t cpt);

}  // namespace cke::tok
