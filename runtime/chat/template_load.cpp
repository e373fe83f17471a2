// Strict loading of chat template files: every field required, unknown fields and wrong
// types rejected, each error naming the file and the field path.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "resolver/data_dirs.h"
#include "runtime/chat/chat_template.h"

namespace cke {

namespace {

constexpr std::string_view kSchema = "cke.chat_template/1";

// Collects "<file>: <field>: <reason>" lines.
struct Errors {
  std::string file;
  std::vector<std::string> lines;
  void add(const std::string& field, const std::string& reason) {
    lines.push_back(file + ": " + (field.empty() ? "" : field + ": ") + reason);
  }
};

std::string join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// A mapping whose keys are checked against an allowed set; getters report missing fields.
class Fields {
 public:
  Fields(const YAML::Node& node, std::string path, Errors* errs,
         std::initializer_list<const char*> allowed)
      : node_(node), path_(std::move(path)), errs_(errs) {
    if (!node_.IsMap()) {
      errs_->add(path_, "expected a mapping");
      ok_ = false;
      return;
    }
    std::set<std::string> known(allowed.begin(), allowed.end());
    for (const auto& kv : node_) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (!known.count(key)) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        errs_->add(join(path_, key), "unknown field (expected one of: " + list + ")");
      }
    }
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }
  Errors* errs() const { return errs_; }

  // The child node, or an undefined node after recording "missing".
  YAML::Node get(const char* key) const {
    if (!ok_) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node n = node_[key];
    if (!n.IsDefined()) errs_->add(join(path_, key), "missing field");
    return n;
  }

  std::optional<std::string> str(const char* key) const {
    YAML::Node n = get(key);
    if (!n.IsDefined()) return std::nullopt;
    if (!n.IsScalar()) {
      errs_->add(join(path_, key), "expected a string");
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<bool> boolean(const char* key) const {
    YAML::Node n = get(key);
    if (!n.IsDefined()) return std::nullopt;
    if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false"))
      return n.Scalar() == "true";
    errs_->add(join(path_, key), "expected true or false");
    return std::nullopt;
  }

  std::optional<int32_t> integer(const char* key) const {
    YAML::Node n = get(key);
    if (!n.IsDefined()) return std::nullopt;
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      int32_t v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && p == s.data() + s.size() && !s.empty()) return v;
    }
    errs_->add(join(path_, key), "expected an integer");
    return std::nullopt;
  }

  // A list of non-empty strings.
  std::optional<std::vector<std::string>> strings(const char* key) const {
    YAML::Node n = get(key);
    if (!n.IsDefined()) return std::nullopt;
    if (!n.IsSequence()) {
      errs_->add(join(path_, key), "expected a list of strings");
      return std::nullopt;
    }
    std::vector<std::string> out;
    bool good = true;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string field = join(path_, key) + "[" + std::to_string(i) + "]";
      if (!n[i].IsScalar()) {
        errs_->add(field, "expected a string");
        good = false;
      } else if (n[i].Scalar().empty()) {
        errs_->add(field, "empty string (it would match everything)");
        good = false;
      } else {
        out.push_back(n[i].Scalar());
      }
    }
    if (!good) return std::nullopt;
    return out;
  }

  // One of `choices`.
  template <typename E>
  std::optional<E> choice(const char* key, const std::map<std::string, E>& choices) const {
    std::optional<std::string> s = str(key);
    if (!s) return std::nullopt;
    if (auto it = choices.find(*s); it != choices.end()) return it->second;
    std::string list;
    for (const auto& [k, v] : choices) list += (list.empty() ? "" : ", ") + k;
    errs_->add(join(path_, key), "'" + *s + "' is not one of: " + list);
    return std::nullopt;
  }

 private:
  YAML::Node node_;
  std::string path_;
  Errors* errs_;
  bool ok_ = true;
};

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  });
}

void read_role(const Fields& roles, const char* key, ChatRoleFormat* out) {
  YAML::Node n = roles.get(key);
  if (!n.IsDefined()) return;
  Fields f(n, join(roles.path(), key), roles.errs(), {"prefix", "suffix"});
  if (!f.ok()) return;
  if (auto s = f.str("prefix")) out->prefix = *s;
  if (auto s = f.str("suffix")) out->suffix = *s;
}

std::vector<std::filesystem::path> split_dirs(const std::string& v) {
  std::vector<std::filesystem::path> out;
  size_t b = 0;
  while (b <= v.size()) {
    size_t e = v.find(':', b);
    if (e == std::string::npos) e = v.size();
    if (e > b) out.emplace_back(v.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += (s.empty() ? "" : "\n") + l;
  return s;
}

}  // namespace

std::optional<ChatTemplate> parse_chat_template(std::string_view yaml_text, const std::string& file,
                                                std::string* err) {
  Errors errs{file.empty() ? "<chat template>" : file, {}};
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    errs.add("", "YAML syntax error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
    *err = joined(errs.lines);
    return std::nullopt;
  }
  ChatTemplate t;
  t.file = file;
  Fields top(doc, "", &errs,
             {"schema", "name", "description", "detect", "bos", "begin", "trim_content", "system",
              "roles", "generation_prompt", "stop"});
  if (top.ok()) {
    if (auto s = top.str("schema"); s && *s != kSchema)
      errs.add("schema", "'" + *s + "' is not " + std::string(kSchema));
    if (auto s = top.str("name")) {
      t.name = *s;
      if (!valid_name(t.name)) errs.add("name", "'" + t.name + "' must be non-empty [a-z0-9._-]");
      const std::string stem = std::filesystem::path(file).stem().string();
      if (!file.empty() && stem != t.name)
        errs.add("name", "'" + t.name + "' differs from the file name '" + stem + "'");
    }
    if (auto s = top.str("description")) t.description = *s;
    if (YAML::Node n = top.get("detect"); n.IsDefined()) {
      Fields d(n, "detect", &errs, {"priority", "all_of", "none_of"});
      if (d.ok()) {
        if (auto v = d.integer("priority")) t.priority = *v;
        if (auto v = d.strings("all_of")) {
          t.detect_all_of = *v;
          if (v->empty()) errs.add("detect.all_of", "needs at least one marker");
        }
        if (auto v = d.strings("none_of")) t.detect_none_of = *v;
      }
    }
    if (auto v = top.choice<ChatBos>("bos", {{"tokenizer", ChatBos::kTokenizer},
                                             {"always", ChatBos::kAlways},
                                             {"never", ChatBos::kNever}}))
      t.bos = *v;
    if (auto s = top.str("begin")) t.begin = *s;
    if (auto v = top.boolean("trim_content")) t.trim_content = *v;
    if (YAML::Node n = top.get("system"); n.IsDefined()) {
      Fields s(n, "system", &errs, {"mode", "separator"});
      if (s.ok()) {
        if (auto v = s.choice<ChatSystemMode>(
                "mode", {{"own_turn", ChatSystemMode::kOwnTurn},
                         {"prepend_to_user", ChatSystemMode::kPrependToUser}}))
          t.system_mode = *v;
        if (auto v = s.str("separator")) t.system_separator = *v;
      }
    }
    if (YAML::Node n = top.get("roles"); n.IsDefined()) {
      // roles.system exists exactly when the system message has its own turn.
      const bool own = t.system_mode == ChatSystemMode::kOwnTurn;
      Fields r(n, "roles", &errs, {"system", "user", "assistant"});
      if (r.ok()) {
        if (own) read_role(r, "system", &t.system);
        if (!own && std::as_const(n)["system"].IsDefined())
          errs.add("roles.system",
                   "not used: system.mode is prepend_to_user (the system text opens the next "
                   "user message)");
        read_role(r, "user", &t.user);
        read_role(r, "assistant", &t.assistant);
      }
    }
    if (auto s = top.str("generation_prompt")) t.generation_prompt = *s;
    if (auto v = top.strings("stop")) t.stop = *v;
  }
  if (!errs.lines.empty()) {
    *err = joined(errs.lines);
    return std::nullopt;
  }
  return t;
}

std::optional<ChatTemplate> load_chat_template(const std::filesystem::path& path,
                                               std::string* err) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *err = path.string() + ": cannot read the file";
    return std::nullopt;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_chat_template(ss.str(), path.string(), err);
}

std::optional<std::vector<ChatTemplate>> load_chat_templates(
    const std::vector<std::filesystem::path>& dirs, std::string* err) {
  std::vector<ChatTemplate> out;
  std::set<std::string> seen;
  std::vector<std::string> errors;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      errors.push_back(dir.string() + ": not a directory of chat templates");
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      std::string e;
      std::optional<ChatTemplate> t = load_chat_template(p, &e);
      if (!t) {
        errors.push_back(e);
        continue;
      }
      if (seen.insert(t->name).second) out.push_back(std::move(*t));
    }
  }
  if (errors.empty() && out.empty()) errors.push_back("no chat templates found");
  if (!errors.empty()) {
    *err = joined(errors);
    return std::nullopt;
  }
  std::sort(out.begin(), out.end(),
            [](const ChatTemplate& a, const ChatTemplate& b) { return a.name < b.name; });
  return out;
}

std::vector<std::filesystem::path> default_chat_template_dirs() {
  if (const char* e = std::getenv("CKE_CHAT_TEMPLATES"); e && *e) return split_dirs(e);
  return {compiled_data_dir() / "circuits" / "chat_templates"};
}

std::string chat_template_names(std::span<const ChatTemplate> templates) {
  std::string s;
  for (const auto& t : templates) s += (s.empty() ? "" : ", ") + t.name;
  return s.empty() ? "none" : s;
}

}  // namespace cke
