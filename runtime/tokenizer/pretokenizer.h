// BPE pre-tokenizers (internal): which regexes and flags each tokenizer.ggml.pre selects,
// and the regex splitter that cuts text into words.
//
// The splitter reproduces llama.cpp's unicode_regex_split, not a plain Unicode regex
// engine, because the two differ:
//   - The regexes run one after the other; each one splits every piece the previous left,
//     and text a regex does not match stays a piece of its own (it is not dropped).
//   - A regex that uses \p{L}, \p{N}, \p{P}, \p{M}, \p{S} (or \p{Lu} ...) runs on a
//     "collapsed" copy of the text: ASCII stays as is, every other code point becomes one
//     byte naming its class (0x0B for whitespace, 0xD1 number, 0xD2 letter, 0xD3
//     punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 anything else), and each \p{X} becomes
//     [<class byte><ASCII members>]. Consequences: \p{Lu}/\p{Ll}/... all mean "any letter",
//     ASCII '~' is neither \p{P} nor \p{S}, and \s is ASCII whitespace plus every non-ASCII
//     White_Space code point.
//   - Any other regex runs on the code points with non-ASCII whitespace replaced by 0x0B
//     and ASCII-only \s, \d, \w (std::wregex in the "C" locale).
//   - '$' matches only at the end of a piece (ECMAScript), never before a final newline.
// Both forms run on PCRE2 (byte mode for collapsed text, UTF mode otherwise). llama.cpp's
// hand-written fast paths for the GPT-2 and Llama-3 regexes give the same splits as the
// regexes themselves, so they need no special case here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cke::tok {

// What llama.cpp derives from tokenizer.ggml.pre for a BPE vocab.
struct PreConfig {
  std::string name;  // the pre-tokenizer type ("default" when the key is absent)
  std::vector<std::string> regexes;
  bool byte_encode = true;          // GPT-2 byte-level encoding of words
  bool ignore_merges = false;       // a word that is a token is taken whole
  bool clean_spaces = true;         // clean_up_tokenization_spaces in decode
  bool escape_whitespaces = false;  // ' ' -> U+2581 before splitting (gemma4)
  bool add_bos = false;             // default for tokenizer.ggml.add_bos_token
  bool add_sep = false;             // default for tokenizer.ggml.add_sep_token
  bool no_bos = false;              // the pre type unsets the BOS id (chatglm)
  bool newline_words = false;       // gemma4: a word of only '\n' that is a token stays whole
};

// nullopt and *err for pre-tokenizers this engine does not implement.
std::optional<PreConfig> bpe_pre_config(std::string_view pre, std::string* err);

class RegexSplitter {
 public:
  static std::optional<RegexSplitter> create(const std::vector<std::string>& regexes,
                                             std::string* err);
  // Splits `text` into words. Words are re-encoded from code points (malformed UTF-8 has
  // become U+FFFD) and, with byte_encode, mapped byte by byte to GPT-2's alphabet.
  std::vector<std::string> split(std::string_view text, bool byte_encode) const;

  struct Compiled;

 private:
  explicit RegexSplitter(std::shared_ptr<const Compiled> c) : c_(std::move(c)) {}
  std::shared_ptr<const Compiled> c_;
};

// Exposed for tests: the collapsed form of a regex (see above), and whether a regex uses
// Unicode categories (and so runs collapsed).
bool regex_uses_categories(std::string_view re);
std::string collapse_regex(std::string_view re);

}  // namespace cke::tok
