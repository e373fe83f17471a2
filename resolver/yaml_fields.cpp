#include "resolver/yaml_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace cke::detail {

namespace {

int line_of(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? m.line + 1 : 0;
}

const char* type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "a scalar";
    default:
      return "nothing";
  }
}

// yaml-cpp tags plain scalars "?" and quoted ones "!": numbers and booleans must be plain.
bool plain(const YAML::Node& n) {
  return n.Tag() == "?";
}

}  // namespace

void ErrorSink::error(const std::string& path, const std::string& reason, const YAML::Node& at) {
  error_at(path, reason, line_of(at));
}

void ErrorSink::error_at(const std::string& path, const std::string& reason, int line) {
  ++n_;
  if (out_) out_->push_back(LoadError{file_, path, reason, line});
}

std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<YAML::Node> parse_yaml(std::string_view text, ErrorSink* sink) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    sink->error_at("", "YAML syntax error: " + e.msg, e.mark.line >= 0 ? e.mark.line + 1 : 0);
    return std::nullopt;
  }
}

std::optional<std::string> to_str(const YAML::Node& n, const std::string& path, ErrorSink* sink) {
  if (!n.IsScalar()) {
    sink->error(path, fmt::format("expected a string, got {}", type_name(n)), n);
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<int64_t> to_i64(const YAML::Node& n, const std::string& path, ErrorSink* sink) {
  if (n.IsScalar() && plain(n)) {
    const std::string& s = n.Scalar();
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return v;
  }
  sink->error(path,
              fmt::format("expected an integer, got {}{}", n.IsScalar() ? "'" : type_name(n),
                          n.IsScalar() ? n.Scalar() + "'" : ""),
              n);
  return std::nullopt;
}

std::optional<double> to_f64(const YAML::Node& n, const std::string& path, ErrorSink* sink) {
  if (n.IsScalar() && plain(n)) {
    const std::string& s = n.Scalar();
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return v;
  }
  sink->error(path,
              fmt::format("expected a number, got {}",
                          n.IsScalar() ? "'" + n.Scalar() + "'" : type_name(n)),
              n);
  return std::nullopt;
}

std::optional<bool> to_bool(const YAML::Node& n, const std::string& path, ErrorSink* sink) {
  if (n.IsScalar() && plain(n)) {
    if (n.Scalar() == "true") return true;
    if (n.Scalar() == "false") return false;
  }
  sink->error(path,
              fmt::format("expected true or false, got {}",
                          n.IsScalar() ? "'" + n.Scalar() + "'" : type_name(n)),
              n);
  return std::nullopt;
}

std::optional<std::string> to_ident(const YAML::Node& n, const std::string& path, ErrorSink* sink) {
  std::optional<std::string> s = to_str(n, path, sink);
  if (!s) return std::nullopt;
  if (!is_identifier(*s)) {
    sink->error(path, fmt::format("'{}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", *s), n);
    return std::nullopt;
  }
  return s;
}

std::optional<std::string> to_enum(const YAML::Node& n,
                                   const std::vector<std::string_view>& allowed,
                                   const std::string& path, ErrorSink* sink) {
  std::optional<std::string> s = to_str(n, path, sink);
  if (!s) return std::nullopt;
  if (std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    sink->error(path, fmt::format("unknown value '{}' (expected one of: {})", *s, list), n);
    return std::nullopt;
  }
  return s;
}

std::optional<Expr> to_expr(const YAML::Node& n, const std::string& path, ErrorSink* sink) {
  std::optional<std::string> s = to_str(n, path, sink);
  if (!s) return std::nullopt;
  std::string err;
  std::optional<Expr> e = Expr::parse(*s, &err);
  if (!e) sink->error(path, fmt::format("bad expression '{}': {}", *s, err), n);
  return e;
}

std::optional<std::vector<Expr>> to_shape(const YAML::Node& n, const std::string& path,
                                          ErrorSink* sink) {
  if (!n.IsSequence()) {
    sink->error(path, fmt::format("expected a shape list, got {}", type_name(n)), n);
    return std::nullopt;
  }
  std::vector<Expr> out;
  bool good = true;
  for (size_t i = 0; i < n.size(); ++i) {
    std::optional<Expr> e = to_expr(n[i], fmt::format("{}[{}]", path, i), sink);
    if (e)
      out.push_back(*e);
    else
      good = false;
  }
  if (!good) return std::nullopt;
  return out;
}

std::optional<std::vector<std::string>> to_ident_list(const YAML::Node& n, const std::string& path,
                                                      ErrorSink* sink) {
  if (!n.IsSequence()) {
    sink->error(path, fmt::format("expected a list, got {}", type_name(n)), n);
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool good = true;
  for (size_t i = 0; i < n.size(); ++i) {
    std::optional<std::string> s = to_ident(n[i], fmt::format("{}[{}]", path, i), sink);
    if (s)
      out.push_back(*s);
    else
      good = false;
  }
  if (!good) return std::nullopt;
  return out;
}

Fields::Fields(const YAML::Node& node, std::string path, ErrorSink* sink)
    : node_(node), path_(std::move(path)), sink_(sink) {
  ok_ = node.IsMap();
  if (!ok_) {
    sink_->error(path_, fmt::format("expected a mapping, got {}", type_name(node)), node);
    return;
  }
  for (const auto& kv : node_) {
    Entry e{kv.first.IsScalar() ? kv.first.Scalar() : "?", kv.first, kv.second};
    if (std::any_of(entries_.begin(), entries_.end(),
                    [&](const Entry& o) { return o.key == e.key; }))
      sink_->error(sub(e.key), "duplicate key", kv.first);
    entries_.push_back(std::move(e));
  }
}

bool Fields::has(const std::string& key) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.key == key && e.key_node.IsScalar(); });
}

std::vector<std::string> Fields::keys() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.key);
  return out;
}

YAML::Node Fields::get(const std::string& key, bool required) {
  if (!ok_) return YAML::Node(YAML::NodeType::Undefined);
  consumed_.push_back(key);
  for (const Entry& e : entries_)
    if (e.key == key && e.key_node.IsScalar()) return e.value;
  if (required) sink_->error(sub(key), "missing required field", node_);
  return YAML::Node(YAML::NodeType::Undefined);
}

std::optional<std::string> Fields::str(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  return n.IsDefined() ? to_str(n, sub(key), sink_) : std::nullopt;
}
std::optional<std::string> Fields::ident(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  return n.IsDefined() ? to_ident(n, sub(key), sink_) : std::nullopt;
}
std::optional<int64_t> Fields::i64(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  return n.IsDefined() ? to_i64(n, sub(key), sink_) : std::nullopt;
}
std::optional<double> Fields::f64(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  return n.IsDefined() ? to_f64(n, sub(key), sink_) : std::nullopt;
}
std::optional<bool> Fields::boolean(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  return n.IsDefined() ? to_bool(n, sub(key), sink_) : std::nullopt;
}
std::optional<std::string> Fields::enumeration(const std::string& key,
                                               const std::vector<std::string_view>& allowed,
                                               bool required) {
  YAML::Node n = get(key, required);
  return n.IsDefined() ? to_enum(n, allowed, sub(key), sink_) : std::nullopt;
}

void Fields::finish() {
  for (const Entry& e : entries_)
    if (std::find(consumed_.begin(), consumed_.end(), e.key) == consumed_.end())
      sink_->error(sub(e.key), "unknown field", e.key_node);
}

}  // namespace cke::detail
