// Errors of data loading (kernel maps, contracts, circuits, graph instantiation): values,
// never exceptions. Each names the file, the field path inside it and the reason.
#pragma once

#include <string>
#include <vector>

namespace cke {

struct LoadError {
  std::string file;    // the data file (or circuit) the error is about
  std::string path;    // field path, e.g. "ports.weights.w.dtype"; empty for the whole file
  std::string reason;  // what is wrong, in words
  int line = 0;        // 1-based line in the file when known, else 0

  // "file:line: path: reason"
  std::string str() const;
};

// All errors, one per line.
std::string format_errors(const std::vector<LoadError>& errors);

}  // namespace cke
