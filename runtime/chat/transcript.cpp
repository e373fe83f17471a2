#include "runtime/chat/transcript.h"

#include <algorithm>

namespace cke {

Transcript::Step Transcript::plan(std::string_view full) const {
  const size_t common =
      std::mismatch(text_.begin(), text_.end(), full.begin(), full.end()).first - text_.begin();
  // Checkpoints ascend in chars; take the last one inside the common prefix (and short of
  // the whole of `full`). The first checkpoint (0, 0) always qualifies.
  size_t i = checkpoints_.size() - 1;
  while (i > 0 && (checkpoints_[i].chars > common || checkpoints_[i].chars >= full.size())) --i;
  Step s;
  s.keep_chars = checkpoints_[i].chars;
  s.keep_pos = checkpoints_[i].pos;
  s.delta = std::string(full.substr(s.keep_chars));
  return s;
}

void Transcript::rewind(size_t chars, int32_t pos) {
  while (checkpoints_.size() > 1 &&
         (checkpoints_.back().chars > chars || checkpoints_.back().pos > pos))
    checkpoints_.pop_back();
  text_.resize(std::min(chars, text_.size()));
  // A rewind to a point that is not a checkpoint (not expected) still leaves a consistent one.
  if (checkpoints_.back().chars != text_.size() || checkpoints_.back().pos != pos)
    checkpoints_.push_back({text_.size(), pos});
}

void Transcript::append(std::string_view text, int32_t pos_after) {
  text_.append(text);
  checkpoints_.push_back({text_.size(), pos_after});
}

}  // namespace cke
