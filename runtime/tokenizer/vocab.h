// VocabData: the tokenizer.* metadata of a model, as plain data.
//
// The tokenizer is built from this struct, so it does not depend on who read the file
// (runtime/tokenizer/vocab_gguf.h fills it from a GGUF file; tests build small ones by hand).
// Fields hold what the metadata says, nothing more: values that are absent stay "unset"
// (-1 or std::nullopt) and Tokenizer::create applies llama.cpp's defaults for the model type
// (see docs/tokenizer.md for the table).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cke {

// tokenizer.ggml.token_type values (llama.cpp's LLAMA_TOKEN_TYPE_*).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// Per-token attribute bits (llama.cpp's llama_token_attr); derived from TokenType and a few
// name-based fix-ups at create time.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrNormalized = 1u << 6,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
  kAttrSingleWord = 1u << 9,
};

struct VocabData {
  std::string model;  // tokenizer.ggml.model: "llama" (SPM), "gpt2" (BPE), "gemma4" (BPE)
  std::string pre;    // tokenizer.ggml.pre ("" if absent)
  // general.name / general.architecture: llama.cpp keys a few per-token attributes on
  // them (e.g. phi-3 strips whitespace after its special tokens).
  std::string name;
  std::string arch;

  std::vector<std::string> tokens;  // tokenizer.ggml.tokens
  std::vector<float> scores;        // tokenizer.ggml.scores (empty: all 0)
  std::vector<int32_t> types;       // tokenizer.ggml.token_type (empty: all Normal)
  std::vector<std::string> merges;  // tokenizer.ggml.merges ("left right", rank = index)

  // Special token ids; -1 = absent from the metadata (the model type's default applies).
  // An id outside [0, n_tokens) is treated like llama.cpp does: the default is kept.
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1, mask = -1;
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;

  // tokenizer.ggml.add_bos_token etc.; nullopt = absent (default per model type/pre).
  std::optional<bool> add_bos, add_eos, add_sep, add_space_prefix;
};

}  // namespace cke
