// Tokenizer: text <-> token ids, matching llama.cpp's llama_tokenize / llama_token_to_piece /
// llama_detokenize for the vocab types it supports:
//   - SPM ("llama"): SentencePiece-style symbol merging by score, byte fallback <0xXX>.
//   - BPE ("gpt2", "gemma4"): regex pre-tokenizer chosen by tokenizer.ggml.pre, GPT-2 byte
//     encoding (not for gemma4), merges by rank.
// WordPiece ("bert"), Unigram ("t5"), RWKV and PLaMo-2 vocabs are rejected by create().
//
// A Tokenizer is immutable after create() and cheap to copy (shared state); encode/decode
// are safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/vocab.h"

namespace cke {

enum class VocabType { SPM, BPE };

class Tokenizer {
 public:
  // Validates the vocab and builds the lookup tables. On failure returns nullopt and sets
  // *err (if non-null) to a message naming the problem.
  static std::optional<Tokenizer> create(VocabData v, std::string* err);

  // Like llama_tokenize(text, add_special, parse_special). add_special adds BOS/EOS as the
  // vocab says (add_bos()/add_eos()). parse_special lets control tokens written in the text
  // (e.g. "<|im_start|>") become their ids; user-defined tokens are always matched.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Like llama_token_to_piece(id, lstrip = 0, special): the bytes of one token. Control and
  // unknown tokens give "" unless `special`. Out-of-range ids give "".
  std::string token_to_piece(int32_t id, bool special = false) const;

  // Like llama_detokenize(ids, remove_special, unparse_special): concatenates the pieces,
  // drops the leading space SPM adds (add_space_prefix), and applies the vocab's
  // clean_up_tokenization_spaces rule. remove_special drops a leading BOS / trailing EOS
  // when the vocab adds them.
  std::string decode(std::span<const int32_t> ids, bool remove_special = false,
                     bool unparse_special = false) const;

  int32_t n_vocab() const;
  VocabType type() const;
  const std::string& model() const;  // tokenizer.ggml.model
  const std::string& pre() const;    // effective pre-tokenizer name ("default" if none)

  // Special ids after llama.cpp's defaults and fix-ups; -1 when the vocab has none.
  int32_t bos() const;
  int32_t eos() const;
  int32_t eot() const;
  int32_t eom() const;
  int32_t unk() const;
  int32_t sep() const;
  int32_t pad() const;
  int32_t nl() const;  // the newline token
  int32_t fim_pre() const;
  int32_t fim_suf() const;
  int32_t fim_mid() const;
  int32_t fim_pad() const;
  int32_t fim_rep() const;
  int32_t fim_sep() const;
  bool is_eog(int32_t id) const;  // end-of-generation (EOS, EOT, EOM and llama.cpp's list)
  const std::vector<int32_t>& eog_ids() const;

  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;

  // Per-token data; ids out of range give "", 0 and kAttrUndefined.
  std::string_view token_text(int32_t id) const;
  float token_score(int32_t id) const;
  uint32_t token_attr(int32_t id) const;  // TokenAttr bits
  bool is_control(int32_t id) const;
  bool is_byte(int32_t id) const;
  std::optional<int32_t> find_token(std::string_view text) const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cke
