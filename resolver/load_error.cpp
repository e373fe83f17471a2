#include "resolver/load_error.h"

#include <fmt/format.h>

namespace cke {

std::string LoadError::str() const {
  std::string s = file;
  if (line > 0) s += fmt::format(":{}", line);
  if (!path.empty()) s += ": " + path;
  return s + ": " + reason;
}

std::string format_errors(const std::vector<LoadError>& errors) {
  std::string s;
  for (const LoadError& e : errors) s += e.str() + "\n";
  return s;
}

}  // namespace cke
