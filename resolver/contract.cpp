#include "resolver/contract.h"

#include <fmt/format.h>

#include <cstdlib>

#include "resolver/data_file.h"
#include "resolver/sha256.h"
#include "resolver/yaml_fields.h"

namespace cke {

using detail::ErrorSink;
using detail::Fields;

std::string Comparison::str() const {
  switch (kind) {
    case Kind::BitExact:
      return "bit_exact";
    case Kind::Ulp:
      return fmt::format("ulp:{}", static_cast<int64_t>(bound));
    case Kind::Rel:
      return fmt::format("rel:{}", bound);
  }
  return "?";
}

const ContractPort* Contract::port(std::string_view name) const {
  for (const ContractPort& p : ports)
    if (p.name == name) return &p;
  return nullptr;
}

const ContractParam* Contract::param(std::string_view name) const {
  for (const ContractParam& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {

std::optional<Comparison> parse_comparison(const std::string& s) {
  if (s == "bit_exact") return Comparison{};
  auto number = [](const std::string& t, double* out) {
    char* end = nullptr;
    *out = std::strtod(t.c_str(), &end);
    return !t.empty() && end == t.c_str() + t.size() && *out > 0;
  };
  double v = 0;
  // The range check comes first: converting a double beyond int64 (ulp:1e300, ulp:inf) is
  // undefined behaviour.
  if (s.rfind("ulp:", 0) == 0 && number(s.substr(4), &v) && v < 0x1p63 &&
      v == static_cast<int64_t>(v))
    return Comparison{Comparison::Kind::Ulp, v};
  if (s.rfind("rel:", 0) == 0 && number(s.substr(4), &v) && v < 1)
    return Comparison{Comparison::Kind::Rel, v};
  return std::nullopt;
}

}  // namespace

std::optional<Contract> parse_contract(std::string_view yaml, const std::string& file,
                                       std::vector<LoadError>* errors) {
  ErrorSink sink(file, errors);
  std::optional<YAML::Node> doc = detail::parse_yaml(yaml, &sink);
  if (!doc) return std::nullopt;
  Fields f(*doc, "", &sink);
  if (!f.ok()) return std::nullopt;
  Contract c;
  c.file = file;
  c.sha256 = sha256_hex(yaml);
  if (auto s = f.str("schema", true); s && *s != "cke.contract/1")
    sink.error("schema", fmt::format("unsupported schema '{}' (expected cke.contract/1)", *s));
  if (auto s = f.str("id", true)) {
    c.id = *s;
    if (!is_data_id(c.id))
      sink.error("id", fmt::format("'{}' is not a valid id ([a-z0-9_.]+ with letters)", c.id));
  }
  if (auto s = f.ident("op", true)) c.op = *s;
  if (f.has("variant"))
    if (auto s = f.ident("variant", false)) c.variant = *s;
  if (auto s = f.ident("profile", true)) c.profile = *s;

  YAML::Node ports = f.get("ports", true);
  if (ports.IsDefined()) {
    Fields pf(ports, "ports", &sink);
    for (const std::string& k : pf.keys()) {
      std::string path = pf.sub(k);
      if (!detail::is_identifier(k)) sink.error(path, "port name is not an identifier");
      std::optional<std::string> d = pf.str(k, true);
      if (!d) continue;
      ContractPort p{k, std::nullopt};
      if (*d != "any") {
        p.dtype = dtype_from_name(*d);
        if (!p.dtype || dtype_name(*p.dtype) != *d)
          sink.error(path, fmt::format("unknown dtype '{}'", *d), pf.get(k, false));
      }
      c.ports.push_back(p);
    }
    pf.finish();
    if (pf.ok() && c.ports.empty()) sink.error("ports", "a contract needs at least one port");
  }

  YAML::Node params = f.get("params", false);
  if (params.IsDefined()) {
    Fields pf(params, "params", &sink);
    for (const std::string& k : pf.keys()) {
      if (!detail::is_identifier(k)) sink.error(pf.sub(k), "param name is not an identifier");
      if (auto t = pf.enumeration(k, {"i64", "f32"}, true))
        c.params.push_back({k, *param_type_from_name(*t)});
    }
    pf.finish();
  }

  if (auto s = f.enumeration("accumulator", {"none", "f32", "f64", "i32_f32", "mixed"}, true))
    c.accumulator = *s;
  if (f.has("activation_quant")) {
    if (auto s = f.str("activation_quant", false)) {
      c.activation_quant = dtype_from_name(*s);
      if (!c.activation_quant || dtype_name(*c.activation_quant) != *s)
        sink.error("activation_quant", fmt::format("unknown dtype '{}'", *s));
    }
  }
  if (auto s = f.str("reduction_order", true)) c.reduction_order = *s;
  YAML::Node rounding = f.get("rounding", true);
  if (rounding.IsDefined()) {
    if (!rounding.IsSequence()) {
      sink.error("rounding", "expected a list of rounding points", rounding);
    } else {
      for (size_t i = 0; i < rounding.size(); ++i)
        if (auto s = detail::to_str(rounding[i], fmt::format("rounding[{}]", i), &sink))
          c.rounding.push_back(*s);
    }
  }
  if (auto b = f.boolean("thread_count_changes_arithmetic", true))
    c.thread_count_changes_arithmetic = *b;
  if (auto b = f.boolean("token_count_changes_arithmetic", false))
    c.token_count_changes_arithmetic = *b;
  if (auto s = f.ident("reference", true)) c.reference = *s;
  if (auto s = f.str("comparison", true)) {
    if (auto cmp = parse_comparison(*s))
      c.comparison = *cmp;
    else
      sink.error("comparison",
                 fmt::format("unknown comparison '{}' (bit_exact, ulp:N with N a positive "
                             "integer, or rel:x with 0 < x < 1)",
                             *s));
  }
  if (YAML::Node cv = f.get("convert", false); cv.IsDefined()) {
    Fields cf(cv, "convert", &sink);
    for (const std::string& port : cf.keys()) {
      const ContractPort* cp = c.port(port);
      if (!cp || !cp->dtype) {
        sink.error(cf.sub(port),
                   fmt::format("'{}' is not a port of the contract with a dtype", port));
        continue;
      }
      Fields pf(cf.get(port, true), cf.sub(port), &sink);
      ContractConvert k{port, DType::F32, ""};
      bool ok = true;
      if (auto d = pf.str("from", true)) {
        std::optional<DType> t = dtype_from_name(*d);
        if (!t || dtype_name(*t) != *d) {
          sink.error(pf.sub("from"), fmt::format("unknown dtype '{}'", *d));
          ok = false;
        } else {
          k.from = *t;
        }
      } else {
        ok = false;
      }
      if (auto v = pf.str("via", true)) {
        if (!is_data_id(*v)) {
          sink.error(pf.sub("via"), fmt::format("'{}' is not a contract id", *v));
          ok = false;
        }
        k.via = *v;
      } else {
        ok = false;
      }
      pf.finish();
      if (ok) c.converts.push_back(std::move(k));
    }
    cf.finish();
  }
  if (YAML::Node cs = f.get("composes", false); cs.IsDefined()) {
    if (!cs.IsSequence() || cs.size() < 2) {
      sink.error("composes", "expected a list of at least two stages", cs);
    } else {
      for (size_t i = 0; i < cs.size(); ++i) {
        const std::string at = fmt::format("composes[{}]", i);
        Fields sf(cs[i], at, &sink);
        if (!sf.ok()) continue;
        ContractStage st;
        if (auto id = sf.str("contract", true)) {
          if (!is_data_id(*id))
            sink.error(sf.sub("contract"), fmt::format("'{}' is not a contract id", *id));
          st.contract = *id;
        }
        if (YAML::Node ps = sf.get("ports", true); ps.IsDefined()) {
          Fields pf(ps, sf.sub("ports"), &sink);
          for (const std::string& k : pf.keys()) {
            if (!detail::is_identifier(k)) sink.error(pf.sub(k), "port name is not an identifier");
            if (auto to = pf.str(k, true)) {
              if (!c.port(*to))
                sink.error(pf.sub(k), fmt::format("'{}' is not a port of the fused contract", *to));
              st.ports.emplace_back(k, *to);
            }
          }
          pf.finish();
        }
        sf.finish();
        c.composes.push_back(std::move(st));
      }
    }
    if (!c.converts.empty())
      sink.error("composes", "a fused contract converts nothing itself: its stages' nodes do");
  }
  if (YAML::Node w = f.get("when", false); w.IsDefined()) {
    if (std::optional<Expr> e = detail::to_expr(w, "when", &sink)) {
      // Names are <port>_ne<i>: dimension i (ggml order) of a port of the contract.
      for (const std::string& ref : e->names()) {
        const size_t at = ref.rfind("_ne");
        const bool dim = at != std::string::npos && at + 3 < ref.size() &&
                         ref.find_first_not_of("0123456789", at + 3) == std::string::npos;
        if (!dim || !c.port(ref.substr(0, at)))
          sink.error("when", fmt::format("'{}' is not <port>_ne<i> of a port of the contract", ref),
                     w);
      }
      c.when = std::move(*e);
    }
  }
  if (auto s = f.str("notes", false)) c.notes = *s;
  f.finish();
  if (sink.failed()) return std::nullopt;
  return c;
}

std::optional<Contract> load_contract(const std::filesystem::path& path,
                                      std::vector<LoadError>* errors) {
  std::optional<std::string> text = read_data_file(path, errors);
  if (!text) return std::nullopt;
  return parse_contract(*text, path.string(), errors);
}

}  // namespace cke
