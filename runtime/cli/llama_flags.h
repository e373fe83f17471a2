// llama.cpp's multi-letter short flags (-ctk, -ctv, -fa, -np, -pg) as CKE's tools accept them.
// CLI11 allows one-letter short names only, so these are rewritten to their long names before
// parsing; everything else passes through unchanged. Any other multi-letter short flag
// (llama.cpp's -ngl, -ub, -mmp, ...) is named by report_unknown_flag(): CLI11 would read "-ngl 99"
// as -n with the value "gl" and then complain about -n, not about the flag CKE lacks.
#pragma once

#include <cstdio>
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
      else {
        store_.emplace_back(a);
        if (i > 0 && unknown_.empty() && multi_letter_short(a)) unknown_ = std::string(a);
      }
    }
    for (std::string& s : store_) ptrs_.push_back(s.data());
  }
  int argc() const { return int(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }
  // The first multi-letter short flag (a dash, then two or more letters, words joined by
  // dashes: -ngl, -no-cnv) that is not one of the five above, named on stderr as `tool`'s
  // error ("cke-run: unknown flag -ngl: ..."); false if there is none. Call before parsing.
  bool report_unknown_flag(std::string_view tool) const {
    if (unknown_.empty()) return false;
    std::fprintf(stderr,
                 "%.*s: unknown flag %s: short flags are one letter, plus llama.cpp's -ctk, -ctv, "
                 "-fa, -np and -pg (--help lists them all)\n",
                 int(tool.size()), tool.data(), unknown_.c_str());
    return true;
  }

 private:
  static bool multi_letter_short(std::string_view a) {
    if (a.size() < 3 || a[0] != '-' || a[1] == '-') return false;
    bool prev_letter = false;
    for (size_t i = 1; i < a.size(); ++i) {
      const char c = a[i];
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (!letter && !(c == '-' && prev_letter && i + 1 < a.size())) return false;
      prev_letter = letter;
    }
    return true;
  }

  std::vector<std::string> store_;
  std::string unknown_;
  std::vector<char*> ptrs_;
};

}  // namespace cke::cli
