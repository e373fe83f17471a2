// What the KV cache holds, as text, so a new turn evaluates only what is new.
//
// Each turn the whole conversation is rendered again. When the KV cache's text is a prefix
// of that rendering, only the rest is evaluated. When it is not (a template that trims the
// reply, or a reply cut inside a token), the cache is rewound to the last checkpoint that
// still is a prefix: a checkpoint (text length, KV position) is recorded after every eval.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cke {

class Transcript {
 public:
  struct Step {
    size_t keep_chars = 0;  // text kept
    int32_t keep_pos = 0;   // KV cells kept (rewind the engine to this)
    std::string delta;      // text to evaluate next (never empty if `full` is not)
  };
  // How to go from the cached text to `full`. The kept part is a prefix of `full` shorter
  // than it, so there is always something to evaluate and logits to sample from.
  Step plan(std::string_view full) const;
  // Forgets everything after a checkpoint (from plan()).
  void rewind(size_t chars, int32_t pos);
  // Records that `text` was evaluated, leaving the KV cache at `pos_after`.
  void append(std::string_view text, int32_t pos_after);

  const std::string& text() const { return text_; }
  int32_t pos() const { return checkpoints_.back().pos; }

 private:
  struct Checkpoint {
    size_t chars;
    int32_t pos;
  };
  std::string text_;
  std::vector<Checkpoint> checkpoints_{{0, 0}};
};

}  // namespace cke
