// llama.cpp's multi-letter short flags (-ctk, -ctv, -fa, -np, -pg) as CKE's tools accept them.
// CLI11 allows one-letter short names only, so these are rewritten to their long names before
// parsing; everything else passes through unchanged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cke::cli {

class LlamaArgs {
 public:
  LlamaArgs(int argc, char** argv) {
    for (int i = 0; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "-ctk")
        store_.emplace_back("--cache-type-k");
      else if (a == "-ctv")
        store_.emplace_back("--cache-type-v");
      else if (a == "-fa")
        store_.emplace_back("--flash-attn");
      else if (a == "-np")
        store_.emplace_back("--parallel");
      else if (a == "-pg")
        store_.emplace_back("--pg");
      else
        store_.emplace_back(a);
    }
    for (std::string& s : store_) ptrs_.push_back(s.data());
  }
  int argc() const { return int(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> store_;
  std::vector<char*> ptrs_;
};

}  // namespace cke::cli
