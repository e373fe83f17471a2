// Strict reading of YAML data files (internal to cke_resolver).
//
// Every loader reads its mapping through `Fields`, which records the keys it consumed;
// `finish()` reports every key left over as unknown. Types are checked without yaml-cpp's
// lenient conversions: an integer is a plain (unquoted) scalar of digits, a boolean is
// `true`/`false`, a string field may not be a list or mapping. Errors go to an ErrorSink
// with the field path and line, and loading continues so one run reports all of them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/expr.h"
#include "resolver/load_error.h"

namespace cke::detail {

class ErrorSink {
 public:
  ErrorSink(std::string file, std::vector<LoadError>* out) : file_(std::move(file)), out_(out) {}
  void error(const std::string& path, const std::string& reason, const YAML::Node& at = {});
  void error_at(const std::string& path, const std::string& reason, int line);
  bool failed() const { return n_ > 0; }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<LoadError>* out_;
  int n_ = 0;
};

std::string join_path(const std::string& base, const std::string& key);
bool is_identifier(std::string_view s);  // [A-Za-z_][A-Za-z0-9_]*
// Parses a whole document; nullopt (and an error with the line) on a syntax error.
std::optional<YAML::Node> parse_yaml(std::string_view text, ErrorSink* sink);

// Typed conversions of one node; each reports a wrong type at `path`.
std::optional<std::string> to_str(const YAML::Node& n, const std::string& path, ErrorSink* sink);
std::optional<int64_t> to_i64(const YAML::Node& n, const std::string& path, ErrorSink* sink);
std::optional<double> to_f64(const YAML::Node& n, const std::string& path, ErrorSink* sink);
std::optional<bool> to_bool(const YAML::Node& n, const std::string& path, ErrorSink* sink);
std::optional<std::string> to_ident(const YAML::Node& n, const std::string& path, ErrorSink* sink);
std::optional<std::string> to_enum(const YAML::Node& n,
                                   const std::vector<std::string_view>& allowed,
                                   const std::string& path, ErrorSink* sink);
// A scalar parsed as an expression (numbers are expressions too).
std::optional<Expr> to_expr(const YAML::Node& n, const std::string& path, ErrorSink* sink);
// A sequence of expressions (a symbolic shape).
std::optional<std::vector<Expr>> to_shape(const YAML::Node& n, const std::string& path,
                                          ErrorSink* sink);
// A sequence of identifiers.
std::optional<std::vector<std::string>> to_ident_list(const YAML::Node& n, const std::string& path,
                                                      ErrorSink* sink);

class Fields {
 public:
  // Reports "expected a mapping" when `node` is not one (then every getter returns empty).
  Fields(const YAML::Node& node, std::string path, ErrorSink* sink);
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& key) const { return join_path(path_, key); }
  bool has(const std::string& key) const;
  // All keys in document order (marks none consumed).
  std::vector<std::string> keys() const;

  // Marks `key` consumed. A missing required key is an error; returns an undefined node.
  YAML::Node get(const std::string& key, bool required);
  std::optional<std::string> str(const std::string& key, bool required);
  std::optional<std::string> ident(const std::string& key, bool required);
  std::optional<int64_t> i64(const std::string& key, bool required);
  std::optional<double> f64(const std::string& key, bool required);
  std::optional<bool> boolean(const std::string& key, bool required);
  std::optional<std::string> enumeration(const std::string& key,
                                         const std::vector<std::string_view>& allowed,
                                         bool required);
  // Reports every key not consumed by a getter as unknown.
  void finish();

 private:
  // The mapping's entries, read once: yaml-cpp makes a node pair (and counts references)
  // at every step of an iteration, and each getter would iterate again.
  struct Entry {
    std::string key;  // "?" for a key that is not a scalar
    YAML::Node key_node;
    YAML::Node value;
  };
  YAML::Node node_;
  std::vector<Entry> entries_;
  std::string path_;
  ErrorSink* sink_;
  bool ok_ = false;
  std::vector<std::string> consumed_;
};

}  // namespace cke::detail
