// Adapter: the tokenizer.* metadata of a GGUF file as VocabData.
#pragma once

#include <optional>
#include <string>

#include "runtime/gguf/gguf.h"
#include "runtime/tokenizer/vocab.h"

namespace cke {

// Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges}, the special token ids,
// the add_* flags, general.name and general.architecture. Absent optional keys stay unset.
// Fails (nullopt, *err naming the file and key) when tokenizer.ggml.model or .tokens is
// missing, when a key has the wrong type, or when a gpt2/gemma4 vocab has no merges.
// A special id that does not fit the vocab is treated as absent, as llama.cpp does.
std::optional<VocabData> vocab_from_gguf(const gguf::File& file, std::string* err);

}  // namespace cke
