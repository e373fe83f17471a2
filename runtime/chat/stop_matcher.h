// Stop strings over streamed text. Generated pieces go in; what comes out is the text that
// can no longer be part of a stop string, so a reply is shown as it is produced but never
// shows the start of an end-of-turn marker ("<|im_" of "<|im_end|>").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cke {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Adds a piece; returns the text now safe to show. After a stop string is found, returns
  // the text before it, and stopped() is true (later pieces are ignored).
  std::string push(std::string_view piece);
  // The text held back (a possible start of a stop string) when generation ends otherwise.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace cke
