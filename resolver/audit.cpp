#include "resolver/audit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>

#include "resolver/circuit.h"
#include "resolver/data_file.h"
#include "resolver/features.h"
#include "resolver/yaml_fields.h"

namespace cke {

namespace {

std::vector<std::string> sorted(std::set<std::string> s) {
  return {s.begin(), s.end()};
}

std::vector<std::string> minus(const std::vector<std::string>& a,
                               const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Ops are counted with their variant: glu.swiglu and glu.geglu are different requirements.
std::string op_key(const std::string& op, const std::string& variant) {
  return variant.empty() ? op : op + "." + variant;
}

void check_circuits(const std::filesystem::path& dir, const Registry* reg, AuditReport* r,
                    std::set<std::string>* ops, std::set<std::string>* archs) {
  std::vector<LoadError> errs;
  for (const auto& path : list_yaml_files(dir, &errs)) {
    std::optional<Circuit> c = load_circuit(path, &errs);
    if (!c) continue;
    ++r->n_circuits;
    archs->insert(c->architecture);
    if (!circuit_stem_matches(path.stem().string(), c->architecture))
      r->errors.push_back(
          fmt::format("{}: architecture '{}' differs from the file name (<architecture>.yaml or "
                      "<architecture>.<name>.yaml)",
                      path.string(), c->architecture));
    for (const auto* section : {&c->header, &c->layer, &c->footer}) {
      for (const NodeSpec& n : *section) {
        ops->insert(op_key(n.op, n.variant));
        if (!reg) continue;
        bool has_contract = false;
        for (const Contract& k : reg->contracts())
          has_contract =
              has_contract || (k.op == n.op && k.variant == n.variant && k.profile == n.profile);
        if (!has_contract)
          r->errors.push_back(fmt::format(
              "{}: {} ({}): no contract for op {}{} with profile {}", path.string(), n.path, n.name,
              n.op, n.variant.empty() ? "" : " variant " + n.variant, n.profile));
        std::vector<std::string> words = {n.name, n.op, n.variant, n.profile};
        for (const PortEdge& e : n.ports) words.push_back(e.buffer);
        for (const std::string& w : words)
          if (!w.empty() && reg->find_map(w))
            r->errors.push_back(
                fmt::format("{}: {}: names provider '{}' (circuits state requirements, "
                            "never providers)",
                            path.string(), n.path, w));
      }
    }
  }
  for (const LoadError& e : errs) r->errors.push_back(e.str());
}

}  // namespace

// Families live in circuits/ only: the code that resolves and runs models (resolver/, jit/,
// kernels/, runtime/) must not spell an architecture name outside comments. Two folders of
// runtime/ are format libraries whose identifiers are GGUF vocabulary, not dispatch:
// runtime/tokenizer (tokenizer.ggml.model / .pre values such as "llama" = SentencePiece,
// "qwen2" = a pre-tokenizer regex set) and runtime/gguf (cke-gguf synth writes files of a
// named architecture); the cke-gguf CLI is their front end.
std::vector<std::string> find_architecture_names(const std::filesystem::path& root,
                                                 const std::set<std::string>& archs) {
  std::vector<std::string> hits;
  const std::vector<std::string> exempt = {"runtime/tokenizer/", "runtime/gguf/",
                                           "runtime/cli/cke_gguf.cpp"};
  std::vector<std::filesystem::path> files;
  for (const char* top : {"resolver", "jit", "kernels", "runtime"}) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root / top, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      const auto ext = it->path().extension();
      if (ext == ".cpp" || ext == ".h" || ext == ".c") files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const std::string rel = std::filesystem::relative(f, root).generic_string();
    bool skip = false;
    for (const auto& e : exempt) skip = skip || rel.rfind(e, 0) == 0;
    if (skip) continue;
    std::ifstream in(f);
    std::string line;
    bool in_block = false;
    for (int ln = 1; std::getline(in, line); ++ln) {
      // Drop comments (// and /* */), keep code and string literals.
      std::string code;
      for (size_t i = 0; i < line.size(); ++i) {
        if (in_block) {
          if (line.compare(i, 2, "*/") == 0) in_block = false, ++i;
          continue;
        }
        if (line.compare(i, 2, "/*") == 0) {
          in_block = true;
          ++i;
          continue;
        }
        if (line.compare(i, 2, "//") == 0) break;
        code += line[i];
      }
      for (const std::string& a : archs) {
        for (size_t pos = code.find(a); pos != std::string::npos; pos = code.find(a, pos + 1)) {
          auto word = [](char ch) {
            return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
          };
          const bool left = pos == 0 || !word(code[pos - 1]);
          const size_t end = pos + a.size();
          const bool right = end >= code.size() || !word(code[end]);
          // "llama.cpp" names the reference implementation, not an architecture.
          const bool is_project = code.compare(end, 4, ".cpp") == 0;
          if (left && right && !is_project) {
            hits.push_back(
                fmt::format("{}:{}: architecture name '{}' in code (families live in "
                            "circuits/ only)",
                            rel, ln, a));
            break;
          }
        }
      }
    }
  }
  return hits;
}

// Source text with comments and string/char literals blanked (newlines kept), so a
// commented-out TEST or one inside a string does not count.
std::string strip_comments_and_strings(const std::string& t) {
  std::string o = t;
  for (size_t i = 0; i < o.size();) {
    if (o.compare(i, 2, "//") == 0) {
      while (i < o.size() && o[i] != '\n') o[i++] = ' ';
    } else if (o.compare(i, 2, "/*") == 0) {
      const size_t e = o.find("*/", i + 2);
      const size_t end = e == std::string::npos ? o.size() : e + 2;
      for (; i < end; ++i)
        if (o[i] != '\n') o[i] = ' ';
    } else if (o[i] == '"' || o[i] == '\'') {
      const char q = o[i++];
      while (i < o.size() && o[i] != q && o[i] != '\n') {
        if (o[i] == '\\' && i + 1 < o.size()) o[i++] = ' ';
        o[i++] = ' ';
      }
      ++i;
    } else {
      ++i;
    }
  }
  return o;
}

// TEST names whose test can fail: not commented out, not DISABLED_, with a non-empty body.
std::vector<std::string> scan_test_names(const std::filesystem::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  static const std::regex kTest(R"(\bTEST(?:_F|_P)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{)");
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file() || it->path().extension() != ".cpp") continue;
    std::vector<LoadError> ignore;
    std::optional<std::string> raw = read_data_file(it->path(), &ignore);
    if (!raw) continue;
    const std::string text = strip_comments_and_strings(*raw);
    for (std::sregex_iterator m(text.begin(), text.end(), kTest), end; m != end; ++m) {
      const std::string suite = (*m)[1].str(), name = (*m)[2].str();
      if (suite.rfind("DISABLED_", 0) == 0 || name.rfind("DISABLED_", 0) == 0) continue;
      // The body up to its matching brace must hold a statement.
      size_t i = size_t(m->position(0) + m->length(0)), depth = 1;
      bool content = false;
      for (; i < text.size() && depth > 0; ++i) {
        if (text[i] == '{') ++depth;
        if (text[i] == '}') --depth;
        if (depth > 0 && !std::isspace(static_cast<unsigned char>(text[i]))) content = true;
      }
      if (content) names.insert(name);
    }
  }
  return sorted(names);
}

TestResults scan_test_results(const std::filesystem::path& dir) {
  TestResults r;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return r;
  static const std::regex kCase(R"re(<testcase\s+name="(\w+)"[^>]*?status="(\w+)"[^>]*?(/?)>)re");
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".xml") continue;
    std::vector<LoadError> ignore;
    std::optional<std::string> text = read_data_file(e.path(), &ignore);
    if (!text) continue;
    ++r.reports;
    for (std::sregex_iterator m(text->begin(), text->end(), kCase), end; m != end; ++m) {
      const std::string name = (*m)[1].str();
      if ((*m)[2].str() != "run") continue;  // disabled / not run
      bool failed = false;
      if ((*m)[3].str().empty()) {  // a body: failures are listed before </testcase>
        const size_t body = size_t(m->position(0) + m->length(0));
        const size_t close = text->find("</testcase>", body);
        failed = text->substr(body, close - body).find("<failure") != std::string::npos;
      }
      (failed ? r.failed : r.ok).insert(name);
    }
  }
  return r;
}

std::optional<RatchetState> load_ratchet(const std::filesystem::path& path,
                                         std::vector<LoadError>* errors) {
  std::optional<std::string> text = read_data_file(path, errors);
  if (!text) return std::nullopt;
  detail::ErrorSink sink(path.string(), errors);
  std::optional<YAML::Node> doc = detail::parse_yaml(*text, &sink);
  if (!doc) return std::nullopt;
  detail::Fields f(*doc, "", &sink);
  RatchetState r;
  if (auto s = f.str("schema", true); s && *s != "cke.ratchet/1")
    sink.error("schema", "expected cke.ratchet/1");
  auto ids = [&](const char* key, std::vector<std::string>* out) {
    YAML::Node n = f.get(key, true);
    if (!n.IsDefined()) return;
    if (n.IsNull()) return;
    if (!n.IsSequence()) {
      sink.error(key, "expected a list of ids", n);
      return;
    }
    for (size_t i = 0; i < n.size(); ++i)
      if (auto s = detail::to_str(n[i], fmt::format("{}[{}]", key, i), &sink)) out->push_back(*s);
  };
  ids("parity_tested", &r.parity_tested);
  ids("production", &r.production);
  auto per_level = [&](const char* key, std::map<std::string, std::vector<std::string>>* out) {
    YAML::Node n = f.get(key, true);
    if (!n.IsDefined()) return;
    detail::Fields lf(n, key, &sink);
    for (std::string_view level : isa_level_names()) {
      std::string lk(level);
      YAML::Node l = lf.get(lk, true);
      std::vector<std::string>& v = (*out)[lk];
      if (!l.IsDefined() || l.IsNull()) continue;
      if (!l.IsSequence()) {
        sink.error(lf.sub(lk), "expected a list", l);
        continue;
      }
      for (size_t i = 0; i < l.size(); ++i)
        if (auto s = detail::to_str(l[i], fmt::format("{}[{}]", lf.sub(lk), i), &sink))
          v.push_back(*s);
    }
    lf.finish();
  };
  per_level("ops_without_production", &r.ops_without_production);
  per_level("reference_only", &r.reference_only);
  f.finish();
  if (sink.failed()) return std::nullopt;
  return r;
}

std::string format_ratchet(const RatchetState& r) {
  auto list = [](const std::vector<std::string>& v, const char* indent) {
    if (v.empty()) return std::string(" []\n");
    std::string s = "\n";
    for (const std::string& x : v) s += fmt::format("{}- {}\n", indent, x);
    return s;
  };
  std::string s =
      "# The ratchet: what may only improve. Checked by cke-audit (ctest `audit`).\n"
      "# parity_tested and production may only grow; ops_without_production and\n"
      "# reference_only (contracts whose only production provider on that ISA level is the\n"
      "# scalar reference kernel) may only shrink, per ISA level.\n"
      "# Tighten it after an improvement with: cke-audit --update-ratchet\n"
      "schema: cke.ratchet/1\n";
  s += "parity_tested:" + list(r.parity_tested, "  ");
  s += "production:" + list(r.production, "  ");
  for (auto [key, m] : {std::pair{"ops_without_production", &r.ops_without_production},
                        std::pair{"reference_only", &r.reference_only}}) {
    s += std::string(key) + ":\n";
    for (std::string_view level : isa_level_names()) {
      auto it = m->find(std::string(level));
      s += fmt::format("  {}:", level) +
           list(it == m->end() ? std::vector<std::string>{} : it->second, "    ");
    }
  }
  return s;
}

AuditReport run_audit(const AuditOptions& o) {
  AuditReport r;
  const std::filesystem::path maps_dir = o.root / "kernel_maps";
  std::vector<LoadError> errs;
  std::optional<Registry> reg = Registry::load({maps_dir}, o.symbols, &errs);
  for (const LoadError& e : errs) r.errors.push_back(e.str());
  std::set<std::string> ops, archs;
  if (reg) {
    r.n_maps = reg->maps().size();
    r.n_contracts = reg->contracts().size();
    for (const Contract& c : reg->contracts()) ops.insert(op_key(c.op, c.variant));
  }
  check_circuits(o.root / "circuits", reg ? &*reg : nullptr, &r, &ops, &archs);
  for (std::string& h : find_architecture_names(o.root, archs)) r.errors.push_back(std::move(h));
  if (!reg) {
    r.errors.push_back("the kernel maps did not load; parity and ratchet checks skipped");
    return r;
  }

  // Parity tests by name.
  const std::vector<std::string> tests = scan_test_names(o.root / "tests");
  std::optional<TestResults> ran;
  if (!o.results.empty()) {
    ran = scan_test_results(o.results);
    if (ran->reports == 0)
      r.errors.push_back(
          fmt::format("--results {}: no GoogleTest XML reports", o.results.string()));
  }
  std::set<std::string> tested, production;
  for (const KernelMap& m : reg->maps()) {
    const bool can_fail = std::binary_search(tests.begin(), tests.end(), m.id);
    const bool passed = !ran || (ran->ok.count(m.id) && !ran->failed.count(m.id));
    if (can_fail && passed)
      tested.insert(m.id);
    else
      r.missing_parity.push_back(m.id);
    if (m.selection.status == Status::Production) production.insert(m.id);
  }
  r.current.parity_tested = sorted(tested);
  r.current.production = sorted(production);
  if (!r.missing_parity.empty())
    r.warnings.push_back(
        fmt::format("{} provider(s) without a parity test (TEST(<Suite>, <id>)): {}",
                    r.missing_parity.size(), join(r.missing_parity)));
  for (std::string_view level : isa_level_names()) {
    FeatureSet caps = *isa_level_features(level);
    std::set<std::string> without;
    for (const std::string& op : ops) {
      bool have = false;
      for (const KernelMap& m : reg->maps()) {
        const Contract* c = reg->find_contract(m.contract);
        if (op_key(m.op, c->variant) != op) continue;
        FeatureSet need;
        for (Feature f : m.isa) need.add(f);
        have = have || (m.selection.status == Status::Production && caps.contains(need));
      }
      if (!have) without.insert(op);
    }
    r.current.ops_without_production[std::string(level)] = sorted(without);
    std::set<std::string> ref_only;
    for (const Contract& c : reg->contracts()) {
      bool reference = false, other = false;
      for (const KernelMap& m : reg->maps()) {
        if (m.contract != c.id || m.selection.status != Status::Production) continue;
        FeatureSet need;
        for (Feature f : m.isa) need.add(f);
        if (!caps.contains(need)) continue;
        (m.id == c.reference ? reference : other) = true;
      }
      if (reference && !other) ref_only.insert(c.id);
    }
    r.current.reference_only[std::string(level)] = sorted(ref_only);
  }

  const std::filesystem::path ratchet_path = maps_dir / "ratchet.yaml";
  if (o.update_ratchet) {
    std::ofstream out(ratchet_path);
    out << format_ratchet(r.current);
    if (!out)
      r.errors.push_back(fmt::format("{}: cannot write", ratchet_path.string()));
    else
      r.notes.push_back(fmt::format("wrote {}", ratchet_path.string()));
    return r;
  }
  std::vector<LoadError> rerrs;
  std::optional<RatchetState> ratchet = load_ratchet(ratchet_path, &rerrs);
  for (const LoadError& e : rerrs) r.errors.push_back(e.str());
  if (!ratchet) return r;
  auto violation = [&](std::string s) {
    r.ratchet_violations.push_back(s);
    r.errors.push_back("ratchet: " + s);
  };
  auto improvement = [&](std::string s) {
    r.ratchet_improvements.push_back(s);
    r.notes.push_back("ratchet can be tightened (cke-audit --update-ratchet): " + s);
  };
  for (const std::string& id : minus(ratchet->parity_tested, r.current.parity_tested))
    violation(fmt::format("provider {} lost its parity test", id));
  for (const std::string& id : minus(r.current.parity_tested, ratchet->parity_tested))
    improvement(fmt::format("provider {} gained a parity test", id));
  for (const std::string& id : minus(ratchet->production, r.current.production))
    violation(fmt::format("provider {} is no longer production", id));
  for (const std::string& id : minus(r.current.production, ratchet->production))
    improvement(fmt::format("provider {} became production", id));
  for (std::string_view level : isa_level_names()) {
    const std::string l(level);
    const auto& was = ratchet->ops_without_production[l];
    const auto& now = r.current.ops_without_production[l];
    for (const std::string& op : minus(now, was))
      violation(fmt::format("op {} has no production provider on {} hosts", op, l));
    for (const std::string& op : minus(was, now))
      improvement(fmt::format("op {} gained a production provider on {} hosts", op, l));
    const auto& was_ref = ratchet->reference_only[l];
    const auto& now_ref = r.current.reference_only[l];
    for (const std::string& c : minus(now_ref, was_ref)) {
      // An op that had no production provider at all and now has its reference improved.
      const Contract* k = reg->find_contract(c);
      if (k && std::find(was.begin(), was.end(), op_key(k->op, k->variant)) != was.end()) continue;
      violation(fmt::format("contract {} runs only on its reference kernel on {} hosts", c, l));
    }
    for (const std::string& c : minus(was_ref, now_ref))
      improvement(fmt::format("contract {} gained a generated provider on {} hosts", c, l));
  }
  return r;
}

nlohmann::json AuditReport::to_json() const {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [level, v] : current.ops_without_production) ops[level] = v;
  nlohmann::json ref_only = nlohmann::json::object();
  for (const auto& [level, v] : current.reference_only) ref_only[level] = v;
  return {
      {"schema", "cke.audit/1"},
      {"ok", ok()},
      {"errors", errors},
      {"warnings", warnings},
      {"notes", notes},
      {"counts", {{"kernel_maps", n_maps}, {"contracts", n_contracts}, {"circuits", n_circuits}}},
      {"parity_tested", current.parity_tested},
      {"missing_parity", missing_parity},
      {"production", current.production},
      {"ops_without_production", ops},
      {"reference_only", ref_only},
      {"ratchet", {{"violations", ratchet_violations}, {"improvements", ratchet_improvements}}}};
}

std::string AuditReport::to_text() const {
  std::string s = fmt::format("cke-audit: {} kernel maps, {} contracts, {} circuits\n", n_maps,
                              n_contracts, n_circuits);
  s += fmt::format("  parity tests: {} of {} providers\n", current.parity_tested.size(),
                   current.parity_tested.size() + missing_parity.size());
  for (std::string_view level : isa_level_names()) {
    auto it = current.ops_without_production.find(std::string(level));
    if (it == current.ops_without_production.end()) continue;
    s += fmt::format("  ops without a production provider on {}: {}\n", level,
                     it->second.empty() ? "none" : join(it->second));
  }
  for (const std::string& e : errors) s += "error: " + e + "\n";
  for (const std::string& w : warnings) s += "warning: " + w + "\n";
  for (const std::string& n : notes) s += "note: " + n + "\n";
  s += ok() ? "audit passed\n" : fmt::format("audit FAILED ({} error(s))\n", errors.size());
  return s;
}

}  // namespace cke
