#include "resolver/kernel_map.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/formats/layouts.h"
#include "resolver/data_file.h"
#include "resolver/sha256.h"
#include "resolver/yaml_fields.h"

namespace cke {

using detail::ErrorSink;
using detail::Fields;

std::string_view status_name(Status s) {
  switch (s) {
    case Status::Production:
      return "production";
    case Status::Candidate:
      return "candidate";
    case Status::Diagnostic:
      return "diagnostic";
    case Status::Deprecated:
      return "deprecated";
  }
  return "?";
}

int lifecycle_rank(Status s) {
  return s == Status::Production ? 2 : s == Status::Candidate ? 1 : 0;
}

std::string_view role_name(PortRole r) {
  constexpr std::string_view k[] = {"input", "weight", "output", "state", "scratch"};
  return k[static_cast<int>(r)];
}
std::string_view access_name(Access a) {
  constexpr std::string_view k[] = {"read", "write", "read_write"};
  return k[static_cast<int>(a)];
}
std::string_view storage_name(Storage s) {
  constexpr std::string_view k[] = {"arena", "weights", "state", "scratch"};
  return k[static_cast<int>(s)];
}
std::string_view runtime_value_name(RuntimeValue r) {
  constexpr std::string_view k[] = {"pos0", "n_tokens", "n_kv", "out_first", "n_out", "seq"};
  return k[static_cast<int>(r)];
}

bool Selection::supports(Phase p) const {
  return std::find(phases.begin(), phases.end(), p) != phases.end();
}

const PortSpec* KernelMap::port(std::string_view name) const {
  for (const PortSpec& p : ports)
    if (p.name == name) return &p;
  return nullptr;
}

const ParamSpec* KernelMap::param(std::string_view name) const {
  for (const ParamSpec& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> KernelMap::shape_symbols() const {
  std::vector<std::string> out;
  for (const PortSpec& p : ports)
    for (const Expr& e : p.shape)
      for (const std::string& n : e.names())
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

namespace {

// The port categories: YAML key, role, default access, allowed accesses, storage.
struct Category {
  const char* key;
  PortRole role;
  Access default_access;
  std::vector<std::string_view> accesses;
  Storage storage;
};
const std::vector<Category>& categories() {
  static const std::vector<Category> k = {
      {"inputs", PortRole::Input, Access::Read, {"read"}, Storage::Arena},
      {"weights", PortRole::Weight, Access::Read, {"read"}, Storage::Weights},
      {"outputs", PortRole::Output, Access::Write, {"write", "read_write"}, Storage::Arena},
      {"state",
       PortRole::State,
       Access::ReadWrite,
       {"read", "write", "read_write"},
       Storage::State},
      {"scratch", PortRole::Scratch, Access::ReadWrite, {"read_write"}, Storage::Scratch},
  };
  return k;
}

// row_major (GGUF's blocks as stored) and, on weight ports, the repacked layouts a
// load-time step makes (kernels/formats/layouts.h).
std::vector<std::string_view> layout_names() {
  std::vector<std::string_view> k = {"row_major"};
  for (const WeightLayout& l : weight_layouts()) k.push_back(l.name);
  return k;
}

Access access_from(const std::string& s) {
  return s == "read" ? Access::Read : s == "write" ? Access::Write : Access::ReadWrite;
}

void parse_port(const YAML::Node& node, const std::string& name, const Category& cat,
                const std::string& path, ErrorSink* sink, KernelMap* m) {
  Fields f(node, path, sink);
  if (!f.ok()) return;
  PortSpec p;
  p.name = name;
  p.role = cat.role;
  p.access = cat.default_access;
  p.storage = cat.storage;
  p.layout = "row_major";
  if (auto s = f.str("dtype", true)) {
    std::optional<DType> d = dtype_from_name(*s);
    if (!d || dtype_name(*d) != *s)
      sink->error(f.sub("dtype"), fmt::format("unknown dtype '{}'", *s), f.get("dtype", false));
    else
      p.dtype = *d;
  }
  if (YAML::Node n = f.get("shape", true); n.IsDefined()) {
    if (auto sh = detail::to_shape(n, f.sub("shape"), sink)) p.shape = *sh;
  }
  if (auto s = f.enumeration("layout", layout_names(), false)) {
    p.layout = *s;
    if (const WeightLayout* l = find_weight_layout(*s)) {
      if (cat.role != PortRole::Weight)
        sink->error(f.sub("layout"),
                    fmt::format("layout '{}' is a repacked weight layout: only a weight port "
                                "may take it",
                                *s));
      else if (p.dtype != l->dtype)
        sink->error(f.sub("layout"), fmt::format("layout '{}' reorders {} weights, the port "
                                                 "takes {}",
                                                 *s, dtype_name(l->dtype), dtype_name(p.dtype)));
    }
  }
  if (auto s = f.enumeration("access", cat.accesses, false)) p.access = access_from(*s);
  if (auto s = f.enumeration("storage", {storage_name(cat.storage)}, false)) (void)s;
  if (auto s = f.ident("alias_of", false)) p.alias_of = *s;
  if (YAML::Node n = f.get("may_alias", false); n.IsDefined()) {
    if (auto l = detail::to_ident_list(n, f.sub("may_alias"), sink)) p.may_alias = *l;
  }
  f.finish();
  m->ports.push_back(std::move(p));
}

std::optional<AbiArg> parse_abi_arg(const std::string& text, const KernelMap& m,
                                    const std::string& path, ErrorSink* sink) {
  size_t colon = text.find(':');
  if (colon == std::string::npos) {
    sink->error(path, fmt::format("'{}' is not <source>:<name>", text));
    return std::nullopt;
  }
  std::string src = text.substr(0, colon), name = text.substr(colon + 1);
  AbiArg a;
  a.name = name;
  a.text = text;
  for (const Category& c : categories()) {
    if (src != role_name(c.role)) continue;
    a.source = AbiArg::Source::Port;
    a.role = c.role;
    const PortSpec* p = m.port(name);
    if (!p) {
      sink->error(path, fmt::format("'{}': no port '{}'", text, name));
      return std::nullopt;
    }
    if (p->role != c.role) {
      sink->error(path, fmt::format("'{}': port '{}' is a {} port, not {}", text, name,
                                    role_name(p->role), src));
      return std::nullopt;
    }
    return a;
  }
  if (src == "dim") {
    a.source = AbiArg::Source::Dim;
    std::vector<std::string> syms = m.shape_symbols();
    bool known = std::find(syms.begin(), syms.end(), name) != syms.end();
    for (const auto& d : m.dims) known = known || d.first == name;
    if (!known) {
      sink->error(path, fmt::format("'{}': '{}' is not a shape symbol or derived dim", text, name));
      return std::nullopt;
    }
    return a;
  }
  if (src == "param") {
    a.source = AbiArg::Source::Param;
    if (!m.param(name)) {
      sink->error(path, fmt::format("'{}': no param '{}' in params", text, name));
      return std::nullopt;
    }
    return a;
  }
  if (src == "runtime") {
    a.source = AbiArg::Source::Runtime;
    for (RuntimeValue r : {RuntimeValue::Pos0, RuntimeValue::NTokens, RuntimeValue::NKv})
      if (name == runtime_value_name(r)) {
        a.runtime = r;
        return a;
      }
    sink->error(path, fmt::format("'{}': unknown runtime value (pos0, n_tokens, n_kv)", text));
    return std::nullopt;
  }
  if (src == "range") {
    if (name == "begin" || name == "end") {
      a.source = name == "begin" ? AbiArg::Source::RangeBegin : AbiArg::Source::RangeEnd;
      return a;
    }
    sink->error(path, fmt::format("'{}': a range is range:begin or range:end", text));
    return std::nullopt;
  }
  sink->error(path, fmt::format("'{}': unknown source '{}' (input, weight, output, state, "
                                "scratch, dim, param, runtime, range)",
                                text, src));
  return std::nullopt;
}

}  // namespace

std::optional<KernelMap> parse_kernel_map(std::string_view yaml, const std::string& file,
                                          std::vector<LoadError>* errors) {
  ErrorSink sink(file, errors);
  std::optional<YAML::Node> doc = detail::parse_yaml(yaml, &sink);
  if (!doc) return std::nullopt;
  Fields f(*doc, "", &sink);
  if (!f.ok()) return std::nullopt;
  KernelMap m;
  m.file = file;
  m.sha256 = sha256_hex(yaml);

  if (auto s = f.str("schema", true); s && *s != "cke.kernel_map/1")
    sink.error("schema", fmt::format("unsupported schema '{}' (expected cke.kernel_map/1)", *s));
  if (auto s = f.str("id", true)) {
    m.id = *s;
    if (!detail::is_identifier(m.id) || !is_data_id(m.id))
      sink.error("id", fmt::format("'{}' is not a valid provider id (a C identifier starting "
                                   "with a lower-case letter)",
                                   m.id));
    std::filesystem::path fp(file);
    if (fp.extension() == ".yaml" && fp.stem().string() != m.id)
      sink.error("id", fmt::format("id '{}' differs from the file name '{}'", m.id,
                                   fp.filename().string()));
  }
  if (auto s = f.ident("op", true)) m.op = *s;
  if (auto s = f.str("interface", true)) {
    m.interface = *s;
    if (!is_data_id(m.interface)) sink.error("interface", fmt::format("bad interface '{}'", *s));
  }
  if (auto s = f.str("contract", true)) {
    m.contract = *s;
    if (!is_data_id(m.contract)) sink.error("contract", fmt::format("bad contract id '{}'", *s));
  }

  // selection: required and strict (a map that cannot be ranked must not load).
  if (YAML::Node n = f.get("selection", true); n.IsDefined()) {
    Fields s(n, "selection", &sink);
    if (auto st =
            s.enumeration("status", {"production", "candidate", "diagnostic", "deprecated"}, true))
      m.selection.status = *st == "production"   ? Status::Production
                           : *st == "candidate"  ? Status::Candidate
                           : *st == "diagnostic" ? Status::Diagnostic
                                                 : Status::Deprecated;
    if (auto p = s.i64("priority", true)) {
      if (*p < 0 || *p > 1000000) sink.error("selection.priority", "priority must be in [0, 1e6]");
      m.selection.priority = *p;
    }
    if (YAML::Node ph = s.get("phases", true); ph.IsDefined()) {
      if (!ph.IsSequence() || ph.size() == 0) {
        sink.error("selection.phases", "expected a non-empty list of phases", ph);
      } else {
        for (size_t i = 0; i < ph.size(); ++i) {
          std::string path = fmt::format("selection.phases[{}]", i);
          if (auto e = detail::to_enum(ph[i], {"prefill", "decode"}, path, &sink)) {
            Phase p = *phase_from_name(*e);
            if (m.selection.supports(p))
              sink.error(path, "duplicate phase", ph[i]);
            else
              m.selection.phases.push_back(p);
          }
        }
      }
    }
    if (auto b = s.boolean("decode_batch", false)) {
      m.selection.decode_batch = *b;
      if (*b && !m.selection.supports(Phase::Decode))
        sink.error("selection.decode_batch", "decode_batch needs the decode phase");
    }
    s.finish();
  }

  // ports (before everything that refers to port names or shape symbols).
  if (YAML::Node n = f.get("ports", true); n.IsDefined()) {
    Fields pf(n, "ports", &sink);
    for (const Category& c : categories()) {
      YAML::Node cn = pf.get(c.key, false);
      if (!cn.IsDefined()) continue;
      Fields cf(cn, pf.sub(c.key), &sink);
      for (const std::string& name : cf.keys()) {
        std::string path = cf.sub(name);
        if (!detail::is_identifier(name)) sink.error(path, "port name is not an identifier");
        if (m.port(name)) sink.error(path, "port name used twice");
        parse_port(cf.get(name, true), name, c, path, &sink, &m);
      }
      cf.finish();
    }
    pf.finish();
    if (pf.ok() && m.ports.empty()) sink.error("ports", "a map needs at least one port");
    bool has_out = false;
    for (const PortSpec& p : m.ports) has_out = has_out || p.access != Access::Read;
    if (pf.ok() && !m.ports.empty() && !has_out)
      sink.error("ports", "no port is written (outputs, or state with write access)");
    for (const PortSpec& p : m.ports) {
      std::string base = fmt::format("ports.{}s.{}", role_name(p.role), p.name);
      if (p.role == PortRole::State) base = "ports.state." + p.name;
      if (p.role == PortRole::Scratch) base = "ports.scratch." + p.name;
      if (!p.alias_of.empty()) {
        if (p.alias_of == p.name)
          sink.error(base + ".alias_of", "a port cannot alias itself");
        else if (!m.port(p.alias_of))
          sink.error(base + ".alias_of", fmt::format("no port '{}' to alias", p.alias_of));
      }
      for (const std::string& q : p.may_alias) {
        if (q == p.name)
          sink.error(base + ".may_alias", "a port cannot alias itself");
        else if (!m.port(q))
          sink.error(base + ".may_alias", fmt::format("no port '{}'", q));
      }
    }
  }
  const std::vector<std::string> syms = m.shape_symbols();
  auto is_sym = [&](const std::string& n) {
    return std::find(syms.begin(), syms.end(), n) != syms.end();
  };

  if (YAML::Node n = f.get("params", false); n.IsDefined()) {
    Fields pf(n, "params", &sink);
    for (const std::string& k : pf.keys()) {
      if (!detail::is_identifier(k)) sink.error(pf.sub(k), "param name is not an identifier");
      if (is_sym(k)) sink.error(pf.sub(k), "param name clashes with a shape symbol");
      if (auto t = pf.enumeration(k, {"i64", "f32"}, true))
        m.params.push_back({k, *param_type_from_name(*t)});
    }
    pf.finish();
  }

  if (YAML::Node n = f.get("dims", false); n.IsDefined()) {
    Fields df(n, "dims", &sink);
    for (const std::string& k : df.keys()) {
      std::string path = df.sub(k);
      if (!detail::is_identifier(k)) sink.error(path, "dim name is not an identifier");
      if (is_sym(k)) sink.error(path, "derived dim clashes with a shape symbol");
      std::optional<Expr> e = detail::to_expr(df.get(k, true), path, &sink);
      if (!e) continue;
      for (const std::string& ref : e->names()) {
        bool known = is_sym(ref);
        for (const auto& d : m.dims) known = known || d.first == ref;
        if (!known)
          sink.error(path, fmt::format("'{}' is not a shape symbol or an earlier dim", ref));
      }
      m.dims.emplace_back(k, *e);
    }
    df.finish();
  }

  if (YAML::Node n = f.get("requires", true); n.IsDefined()) {
    Fields rf(n, "requires", &sink);
    if (YAML::Node isa = rf.get("isa", true); isa.IsDefined()) {
      if (!isa.IsSequence()) {
        sink.error("requires.isa", "expected a list of CPU features", isa);
      } else {
        for (size_t i = 0; i < isa.size(); ++i) {
          std::string path = fmt::format("requires.isa[{}]", i);
          std::optional<std::string> s = detail::to_str(isa[i], path, &sink);
          if (!s) continue;
          std::optional<Feature> feat = feature_from_name(*s);
          if (!feat) {
            sink.error(path, fmt::format("unknown CPU feature '{}'", *s), isa[i]);
          } else if (std::find(m.isa.begin(), m.isa.end(), *feat) != m.isa.end()) {
            sink.error(path, fmt::format("feature '{}' listed twice", *s), isa[i]);
          } else {
            m.isa.push_back(*feat);
          }
        }
      }
    }
    if (YAML::Node sh = rf.get("shape", true); sh.IsDefined()) {
      if (!sh.IsSequence()) {
        sink.error("requires.shape", "expected a list of predicates", sh);
      } else {
        for (size_t i = 0; i < sh.size(); ++i) {
          std::string path = fmt::format("requires.shape[{}]", i);
          std::optional<Expr> e = detail::to_expr(sh[i], path, &sink);
          if (!e) continue;
          for (const std::string& ref : e->names()) {
            bool known = is_sym(ref) || m.param(ref);
            for (const auto& d : m.dims) known = known || d.first == ref;
            if (!known)
              sink.error(path, fmt::format("'{}' is not a shape symbol, dim or param", ref), sh[i]);
          }
          m.shape_predicates.push_back(*e);
        }
      }
    }
    rf.finish();
  }

  if (YAML::Node n = f.get("impl", true); n.IsDefined()) {
    Fields imf(n, "impl", &sink);
    if (imf.has("function") == imf.has("generator")) {
      sink.error("impl", "exactly one of impl.function and impl.generator is required", n);
      (void)imf.get("function", false);
      (void)imf.get("generator", false);
      (void)imf.get("params", false);
    } else if (imf.has("function")) {
      if (auto s = imf.ident("function", true)) m.impl.function = *s;
    } else {
      if (auto s = imf.ident("generator", true)) m.impl.generator = *s;
      if (YAML::Node gp = imf.get("params", false); gp.IsDefined()) {
        Fields gf(gp, "impl.params", &sink);
        for (const std::string& k : gf.keys())
          if (auto v = gf.str(k, true)) m.impl.generator_params[k] = *v;
        gf.finish();
      }
    }
    imf.finish();
  }

  if (YAML::Node n = f.get("parallel", true); n.IsDefined()) {
    if (n.IsScalar() && n.Scalar() == "none") {
      m.parallel.enabled = false;
    } else if (n.IsMap()) {
      Fields pf(n, "parallel", &sink);
      m.parallel.enabled = true;
      if (auto s = pf.ident("dim", true)) {
        m.parallel.dim = *s;
        bool known = is_sym(*s);
        for (const auto& d : m.dims) known = known || d.first == *s;
        if (!known)
          sink.error("parallel.dim", fmt::format("'{}' is not a shape symbol or dim", *s));
      }
      if (auto v = pf.i64("min_chunk", true)) {
        if (*v < 1) sink.error("parallel.min_chunk", "must be >= 1");
        m.parallel.min_chunk = *v;
      }
      if (auto b = pf.boolean("changes_arithmetic", true)) m.parallel.changes_arithmetic = *b;
      pf.finish();
    } else {
      sink.error("parallel", "expected `none` or {dim, min_chunk, changes_arithmetic}", n);
    }
  }

  if (YAML::Node n = f.get("call_abi", true); n.IsDefined()) {
    if (!n.IsSequence()) {
      sink.error("call_abi", "expected a list of <source>:<name>", n);
    } else {
      for (size_t i = 0; i < n.size(); ++i) {
        std::string path = fmt::format("call_abi[{}]", i);
        std::optional<std::string> s = detail::to_str(n[i], path, &sink);
        if (!s) continue;
        if (auto a = parse_abi_arg(*s, m, path, &sink)) m.call_abi.push_back(*a);
      }
      // Every port exactly once; each range end at most once and only with `parallel`.
      for (const PortSpec& p : m.ports) {
        int uses = 0;
        for (const AbiArg& a : m.call_abi)
          uses += a.source == AbiArg::Source::Port && a.name == p.name;
        if (uses != 1)
          sink.error("call_abi", fmt::format("port '{}' is bound {} times (must be exactly once)",
                                             p.name, uses));
      }
      int begins = 0, ends = 0;
      for (const AbiArg& a : m.call_abi) {
        begins += a.source == AbiArg::Source::RangeBegin;
        ends += a.source == AbiArg::Source::RangeEnd;
      }
      if (m.parallel.enabled && (begins != 1 || ends != 1))
        sink.error("call_abi", "a parallel map takes range:begin and range:end exactly once");
      if (!m.parallel.enabled && (begins || ends))
        sink.error("call_abi", "range:begin/range:end need a `parallel` split");
    }
  }
  if (auto s = f.str("notes", false)) m.notes = *s;
  f.finish();
  if (sink.failed()) return std::nullopt;
  return m;
}

std::optional<KernelMap> load_kernel_map(const std::filesystem::path& path,
                                         std::vector<LoadError>* errors) {
  std::optional<std::string> text = read_data_file(path, errors);
  if (!text) return std::nullopt;
  return parse_kernel_map(*text, path.string(), errors);
}

bool KernelMap::admits(const std::map<std::string, int64_t>& dims) const {
  Expr::Lookup look = [&dims](std::string_view n) -> std::optional<Value> {
    auto it = dims.find(std::string(n));
    return it == dims.end() ? std::nullopt : std::optional<Value>(Value::integer(it->second));
  };
  for (const Expr& pred : shape_predicates) {
    Expr::Result r = pred.eval(look);
    if (!r.value || !r.value->is_int() || r.value->i == 0) return false;
  }
  return true;
}

}  // namespace cke
