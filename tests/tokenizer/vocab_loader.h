// Test helper: a Tokenizer from a GGUF file (cached per path within the process).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/gguf/gguf.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab_gguf.h"

namespace cke::test {

// nullptr and *err on failure.
inline std::shared_ptr<const Tokenizer> load_tokenizer(const std::string& path, std::string* err) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  gguf::GgufError gerr;
  const auto file = gguf::File::open(path, &gerr);
  if (!file) {
    *err = gerr.message;
    return nullptr;
  }
  auto vocab = vocab_from_gguf(*file, err);
  if (!vocab) return nullptr;
  auto tok = Tokenizer::create(std::move(*vocab), err);
  if (!tok) return nullptr;
  auto p = std::make_shared<const Tokenizer>(std::move(*tok));
  cache[path] = p;
  return p;
}

}  // namespace cke::test
