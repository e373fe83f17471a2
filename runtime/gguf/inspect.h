// Human-readable dump of a GGUF file (what `cke-gguf info` prints).
#pragma once

#include <cstdio>
#include <string>

#include "runtime/gguf/gguf.h"

namespace cke::gguf {

struct InfoOptions {
  size_t max_array_items = 8;    // arrays longer than this show their first items only
  size_t max_string_chars = 96;  // longer strings are cut (their length is shown)
};

// One value in one line: `42`, `"llama"`, `[f32 × 512] 0, -1000, ...`.
std::string format_value(const Value& v, const InfoOptions& opt = {});

// Header, metadata, tensor table and totals.
void print_info(const File& f, std::FILE* out, const InfoOptions& opt = {});

}  // namespace cke::gguf
