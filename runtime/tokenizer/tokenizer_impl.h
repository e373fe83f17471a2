// Tokenizer internals shared by tokenizer.cpp, spm.cpp and bpe.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/pretokenizer.h"
#include "runtime/tokenizer/string_index.h"
#include "runtime/tokenizer/tokenizer.h"

namespace cke {

inline constexpr int32_t kNoToken = StringIndex::kAbsent;

struct Tokenizer::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;  // the indexes point at text and merges
  Impl& operator=(const Impl&) = delete;

  VocabType type = VocabType::SPM;
  std::string model;
  std::string pre;

  std::vector<std::string> text;  // token texts (empty ones renamed "[EMPTY_<id>]")
  std::vector<float> score;
  std::vector<uint32_t> attr;        // TokenAttr bits
  StringIndex token_index{&text};    // text -> id
  std::vector<std::string> merges;   // BPE merge lines "left right", by rank
  StringIndex merge_index{&merges};  // "left right" -> merge rank (the first of duplicates)

  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken;
  int32_t sep = kNoToken, pad = kNoToken, mask = kNoToken, nl = kNoToken;
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken, fim_pad = kNoToken;
  int32_t fim_rep = kNoToken, fim_sep = kNoToken;
  std::vector<int32_t> eog;  // sorted

  bool add_bos = false, add_eos = false, add_sep = false, add_space_prefix = false;
  bool clean_spaces = false;
  bool escape_whitespaces = false;  // BPE: ' ' -> U+2581 before splitting (gemma4)
  bool ignore_merges = false;
  bool byte_encode = true;
  bool newline_words = false;
  std::optional<tok::RegexSplitter> splitter;  // BPE only

  std::vector<int32_t> special_tokens;  // control/user-defined/unknown, longest text first

  int32_t n() const { return static_cast<int32_t>(text.size()); }
  bool valid(int32_t id) const { return id >= 0 && id < n(); }
  int32_t find(std::string_view s) const { return token_index.find(s); }
  // SPM: "<0xXX>", else the byte itself as a token; kNoToken if neither exists.
  int32_t spm_byte_to_token(uint8_t b) const;
  // token_to_piece(id, special = true): the token's bytes.
  std::string piece(int32_t id) const;
  int32_t bpe_rank(std::string_view left, std::string_view right, std::string& key) const;

  // Tokenize one piece of raw text (no special-token handling), appending to out.
  void spm_tokenize(const std::string& text, std::vector<int32_t>& out) const;
  void bpe_tokenize(const std::string& text, std::vector<int32_t>& out) const;
};

}  // namespace cke
