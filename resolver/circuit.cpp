#include "resolver/circuit.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "resolver/data_file.h"
#include "resolver/sha256.h"
#include "resolver/yaml_fields.h"

namespace cke {

using detail::ErrorSink;
using detail::Fields;

std::string_view buffer_kind_name(BufferKind k) {
  constexpr std::string_view n[] = {"input", "activation", "state", "output", "weight"};
  return n[static_cast<int>(k)];
}

const WeightSpec* Circuit::weight(std::string_view name) const {
  for (const WeightSpec& w : weights)
    if (w.name == name) return &w;
  return nullptr;
}

const BufferSpec* Circuit::buffer(std::string_view name) const {
  for (const BufferSpec& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

namespace {

// Keys that would make a circuit choose an implementation.
const std::set<std::string> kProviderKeys = {"provider", "providers", "impl",   "kernel",
                                             "function", "id",        "symbol", "map"};

class CircuitParser {
 public:
  CircuitParser(ErrorSink* sink, Circuit* c) : sink_(sink), c_(c) {}

  void run(const YAML::Node& doc) {
    Fields f(doc, "", sink_);
    if (!f.ok()) return;
    if (auto s = f.str("schema", true); s && *s != "cke.circuit/1")
      sink_->error("schema", fmt::format("unsupported schema '{}' (expected cke.circuit/1)", *s));
    if (auto s = f.ident("architecture", true)) c_->architecture = *s;
    if (f.has("select")) c_->select = detail::to_expr(f.get("select", true), "select", sink_);
    hparams(f.get("hparams", true));
    derived(f.get("derived", false));
    if (auto e = detail::to_expr(f.get("layers", true), "layers", sink_)) c_->layers = *e;
    if (YAML::Node ch = f.get("checks", false); ch.IsDefined()) {
      if (!ch.IsSequence())
        sink_->error("checks", "expected a list of predicates", ch);
      else
        for (size_t i = 0; i < ch.size(); ++i)
          if (auto e = detail::to_expr(ch[i], fmt::format("checks[{}]", i), sink_))
            c_->checks.push_back(*e);
    }
    weights(f.get("weights", true));
    buffers(f.get("inputs", true), "inputs", BufferKind::Input);
    buffers(f.get("activations", false), "activations", BufferKind::Activation);
    buffers(f.get("state", false), "state", BufferKind::State);
    buffers(f.get("outputs", true), "outputs", BufferKind::Output);
    nodes(f.get("header", false), "header", &c_->header);
    nodes(f.get("layer", true), "layer", &c_->layer);
    nodes(f.get("footer", false), "footer", &c_->footer);
    f.finish();
    check_names();
  }

 private:
  ErrorSink* sink_;
  Circuit* c_;

  bool reserved(const std::string& name, const std::string& path) {
    if (name == "T" || name == "L" || name == "n_ctx" || name == "flash_attn" ||
        name == "cache_type") {
      sink_->error(path, fmt::format("'{}' is reserved (T: tokens in the chunk, L: layer index, "
                                     "n_ctx: context size, cache_type / flash_attn: the KV "
                                     "cache type and whether it pairs with flash attention)",
                                     name));
      return true;
    }
    return false;
  }

  void hparams(const YAML::Node& n) {
    if (!n.IsDefined()) return;
    Fields hf(n, "hparams", sink_);
    for (const std::string& name : hf.keys()) {
      std::string path = hf.sub(name);
      if (!detail::is_identifier(name)) sink_->error(path, "not an identifier");
      reserved(name, path);
      Fields f(hf.get(name, true), path, sink_);
      if (!f.ok()) continue;
      HparamSpec h;
      h.name = name;
      if (f.has("key") == f.has("tensor_dim")) {
        sink_->error(path, "exactly one of `key` and `tensor_dim` is required");
      }
      if (f.has("key")) {
        if (auto s = f.str("key", true)) h.key = *s;
        if (auto t = f.enumeration("type", {"i64", "f32"}, true))
          h.type = *param_type_from_name(*t);
        if (f.has("default"))
          h.default_value = detail::to_expr(f.get("default", true), f.sub("default"), sink_);
      } else if (f.has("tensor_dim")) {
        YAML::Node td = f.get("tensor_dim", true);
        if (!td.IsSequence() || td.size() != 2) {
          sink_->error(f.sub("tensor_dim"), "expected [tensor name, dimension index]", td);
        } else {
          if (auto s = detail::to_str(td[0], f.sub("tensor_dim[0]"), sink_)) h.tensor = *s;
          if (auto d = detail::to_i64(td[1], f.sub("tensor_dim[1]"), sink_)) {
            if (*d < 0 || *d > 3) sink_->error(f.sub("tensor_dim[1]"), "dimension must be 0..3");
            h.tensor_dim = static_cast<int>(*d);
          }
        }
        if (auto t = f.enumeration("type", {"i64"}, false)) (void)t;
      }
      f.finish();
      c_->hparams.push_back(std::move(h));
    }
    hf.finish();
  }

  void derived(const YAML::Node& n) {
    if (!n.IsDefined()) return;
    Fields df(n, "derived", sink_);
    for (const std::string& name : df.keys()) {
      std::string path = df.sub(name);
      if (!detail::is_identifier(name)) sink_->error(path, "not an identifier");
      reserved(name, path);
      if (auto e = detail::to_expr(df.get(name, true), path, sink_))
        c_->derived.emplace_back(name, *e);
    }
    df.finish();
  }

  void weights(const YAML::Node& n) {
    if (!n.IsDefined()) return;
    Fields wf(n, "weights", sink_);
    for (const std::string& name : wf.keys()) {
      std::string path = wf.sub(name);
      if (!detail::is_identifier(name)) sink_->error(path, "not an identifier");
      reserved(name, path);
      Fields f(wf.get(name, true), path, sink_);
      if (!f.ok()) continue;
      WeightSpec w;
      w.name = name;
      if (auto s = f.str("tensor", true)) w.tensor = *s;
      if (YAML::Node s = f.get("shape", true); s.IsDefined())
        if (auto sh = detail::to_shape(s, f.sub("shape"), sink_)) w.shape = *sh;
      if (auto b = f.boolean("per_layer", false)) w.per_layer = *b;
      if (auto b = f.boolean("optional", false)) w.optional = *b;
      if (auto s = f.ident("fallback", false)) w.fallback = *s;
      for (const std::string& k : f.keys())
        if (kProviderKeys.count(k)) {
          provider_key(f.sub(k));
          (void)f.get(k, false);
        }
      f.finish();
      bool has_l = w.tensor.find("{L}") != std::string::npos;
      if (has_l != w.per_layer)
        sink_->error(f.sub("tensor"), w.per_layer ? "a per-layer tensor name needs {L}"
                                                  : "{L} in the tensor name needs per_layer: true");
      if (w.optional && !w.fallback.empty())
        sink_->error(path, "a weight is either optional or has a fallback, not both");
      c_->weights.push_back(std::move(w));
    }
    wf.finish();
    for (const WeightSpec& w : c_->weights) {
      if (w.fallback.empty()) continue;
      const WeightSpec* fb = c_->weight(w.fallback);
      std::string path = fmt::format("weights.{}.fallback", w.name);
      if (!fb)
        sink_->error(path, fmt::format("no weight '{}'", w.fallback));
      else if (fb->per_layer != w.per_layer || !fb->fallback.empty())
        sink_->error(path, "a fallback must have the same per_layer and no fallback of its own");
    }
  }

  void buffers(const YAML::Node& n, const std::string& key, BufferKind kind) {
    if (!n.IsDefined()) return;
    Fields bf(n, key, sink_);
    for (const std::string& name : bf.keys()) {
      std::string path = bf.sub(name);
      if (!detail::is_identifier(name)) sink_->error(path, "not an identifier");
      reserved(name, path);
      if (c_->weight(name) || c_->buffer(name))
        sink_->error(path, fmt::format("name '{}' is already declared", name));
      BufferSpec b;
      b.name = name;
      b.kind = kind;
      YAML::Node v = bf.get(name, true);
      if (v.IsSequence()) {  // short form: just the shape (f32)
        if (auto sh = detail::to_shape(v, path, sink_)) b.shape = *sh;
      } else {
        Fields f(v, path, sink_);
        if (!f.ok()) continue;
        if (YAML::Node s = f.get("shape", true); s.IsDefined())
          if (auto sh = detail::to_shape(s, f.sub("shape"), sink_)) b.shape = *sh;
        if (auto s = f.str("dtype", kind == BufferKind::Input)) {
          std::optional<DType> d = dtype_from_name(*s);
          if (*s == "cache_type" && kind == BufferKind::State)
            b.dtype_is_cache_type = true;
          else if (!d || dtype_name(*d) != *s)
            sink_->error(f.sub("dtype"), fmt::format("unknown dtype '{}'", *s));
          else
            b.dtype = *d;
        }
        if (auto s = f.enumeration("layout", {"row_major"}, false)) b.layout = *s;
        if (kind == BufferKind::State) {
          if (auto p = f.boolean("per_layer", false)) b.per_layer = *p;
        }
        f.finish();
      }
      c_->buffers.push_back(std::move(b));
    }
    bf.finish();
  }

  void provider_key(const std::string& path) {
    sink_->error(path,
                 "a circuit states requirements, never providers: which kernel runs is "
                 "decided by the resolver from the kernel maps");
  }

  void nodes(const YAML::Node& n, const std::string& section, std::vector<NodeSpec>* out) {
    if (!n.IsDefined()) return;
    if (!n.IsSequence()) {
      sink_->error(section, "expected a list of op instances", n);
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      std::string path = fmt::format("{}[{}]", section, i);
      Fields f(n[i], path, sink_);
      if (!f.ok()) continue;
      NodeSpec node;
      node.path = path;
      for (const std::string& k : f.keys())
        if (kProviderKeys.count(k)) {
          provider_key(f.sub(k));
          (void)f.get(k, false);
        }
      if (auto s = f.ident("name", true)) node.name = *s;
      if (auto s = f.ident("op", true)) node.op = *s;
      if (f.has("variant"))
        if (auto s = f.ident("variant", true)) node.variant = *s;
      if (auto s = f.ident("profile", true)) node.profile = *s;
      for (const NodeSpec& o : *out)
        if (o.name == node.name)
          sink_->error(f.sub("name"),
                       fmt::format("node name '{}' used twice in {}", node.name, section));
      if (YAML::Node p = f.get("ports", true); p.IsDefined()) {
        Fields pf(p, f.sub("ports"), sink_);
        for (const std::string& port : pf.keys()) {
          std::string pp = pf.sub(port);
          if (!detail::is_identifier(port)) sink_->error(pp, "port name is not an identifier");
          YAML::Node v = pf.get(port, true);
          PortEdge e;
          e.port = port;
          if (v.IsMap()) {
            Fields vf(v, pp, sink_);
            if (auto s = vf.ident("view", true)) e.buffer = *s;
            if (YAML::Node s = vf.get("shape", true); s.IsDefined())
              e.view = detail::to_shape(s, vf.sub("shape"), sink_);
            vf.finish();
          } else if (auto s = detail::to_ident(v, pp, sink_)) {
            e.buffer = *s;
          }
          if (!e.buffer.empty() && !c_->weight(e.buffer) && !c_->buffer(e.buffer))
            sink_->error(pp, fmt::format("'{}' is not a declared weight or buffer", e.buffer), v);
          if (!e.buffer.empty() && section != "layer") {
            const WeightSpec* w = c_->weight(e.buffer);
            const BufferSpec* b = c_->buffer(e.buffer);
            if ((w && w->per_layer) || (b && b->per_layer))
              sink_->error(pp,
                           fmt::format("'{}' is per layer; only layer nodes can use it", e.buffer));
          }
          node.ports.push_back(std::move(e));
        }
        pf.finish();
      }
      if (YAML::Node p = f.get("params", false); p.IsDefined()) {
        Fields pf(p, f.sub("params"), sink_);
        for (const std::string& k : pf.keys()) {
          if (!detail::is_identifier(k)) sink_->error(pf.sub(k), "param name is not an identifier");
          if (auto e = detail::to_expr(pf.get(k, true), pf.sub(k), sink_))
            node.params.emplace_back(k, *e);
        }
        pf.finish();
      }
      if (f.has("when")) node.when = detail::to_expr(f.get("when", true), f.sub("when"), sink_);
      f.finish();
      out->push_back(std::move(node));
    }
  }

  // Every name an expression uses must be declared where it is used.
  void check_names() {
    std::set<std::string> values = {"n_ctx", "flash_attn"};
    for (const HparamSpec& h : c_->hparams) values.insert(h.name);
    for (const auto& d : c_->derived) {
      if (values.count(d.first)) sink_->error("derived." + d.first, "name already declared");
      values.insert(d.first);
    }
    for (const WeightSpec& w : c_->weights)
      if (w.optional) values.insert("has_" + w.name);
    auto check = [&](const Expr& e, const std::string& path, bool allow_t, bool allow_l) {
      for (const std::string& n : e.names()) {
        if (values.count(n) || (allow_t && n == "T") || (allow_l && n == "L")) continue;
        std::string hint = n == "T"   ? " (T may only appear in buffer shapes and views)"
                           : n == "L" ? " (L may only appear in layer nodes)"
                                      : "";
        sink_->error(path, fmt::format("unknown name '{}' in '{}'{}", n, e.text(), hint));
      }
    };
    for (const HparamSpec& h : c_->hparams)
      if (h.default_value) check(*h.default_value, "hparams." + h.name + ".default", false, false);
    for (const auto& d : c_->derived) check(d.second, "derived." + d.first, false, false);
    check(c_->layers, "layers", false, false);
    if (c_->select) check(*c_->select, "select", false, false);
    for (size_t i = 0; i < c_->checks.size(); ++i)
      check(c_->checks[i], fmt::format("checks[{}]", i), false, false);
    for (const WeightSpec& w : c_->weights)
      for (const Expr& e : w.shape) check(e, "weights." + w.name + ".shape", false, false);
    for (const BufferSpec& b : c_->buffers)
      for (const Expr& e : b.shape)
        check(e, fmt::format("{}s.{}", buffer_kind_name(b.kind), b.name), true, false);
    for (auto [nodes, in_layer] : {std::pair{&c_->header, false}, std::pair{&c_->layer, true},
                                   std::pair{&c_->footer, false}}) {
      for (const NodeSpec& n : *nodes) {
        for (const PortEdge& e : n.ports)
          if (e.view)
            for (const Expr& x : *e.view)
              check(x, n.path + ".ports." + e.port + ".shape", true, false);
        for (const auto& p : n.params)
          check(p.second, n.path + ".params." + p.first, false, in_layer);
        if (n.when) check(*n.when, n.path + ".when", false, in_layer);
      }
    }
  }
};

}  // namespace

std::optional<Circuit> parse_circuit(std::string_view yaml, const std::string& file,
                                     std::vector<LoadError>* errors) {
  ErrorSink sink(file, errors);
  std::optional<YAML::Node> doc = detail::parse_yaml(yaml, &sink);
  if (!doc) return std::nullopt;
  Circuit c;
  c.file = file;
  c.sha256 = sha256_hex(yaml);
  CircuitParser(&sink, &c).run(*doc);
  if (sink.failed()) return std::nullopt;
  return c;
}

std::optional<Circuit> load_circuit(const std::filesystem::path& path,
                                    std::vector<LoadError>* errors) {
  std::optional<std::string> text = read_data_file(path, errors);
  if (!text) return std::nullopt;
  return parse_circuit(*text, path.string(), errors);
}

std::optional<std::filesystem::path> find_circuit(std::string_view architecture,
                                                  const std::vector<std::filesystem::path>& dirs) {
  for (const auto& d : dirs) {
    std::filesystem::path p = d / (std::string(architecture) + ".yaml");
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

bool circuit_stem_matches(std::string_view stem, std::string_view architecture) {
  return stem == architecture ||
         (stem.size() > architecture.size() + 1 &&
          stem.substr(0, architecture.size()) == architecture && stem[architecture.size()] == '.' &&
          stem.find('.', architecture.size() + 1) == std::string_view::npos);
}

std::vector<std::filesystem::path> circuit_files(std::string_view architecture,
                                                 const std::vector<std::filesystem::path>& dirs) {
  std::map<std::string, std::filesystem::path> by_name;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d, ec)) {
      if (e.path().extension() != ".yaml" || !e.is_regular_file(ec)) continue;
      const std::string stem = e.path().stem().string();
      if (circuit_stem_matches(stem, architecture)) by_name.emplace(stem, e.path());
    }
  }
  std::vector<std::filesystem::path> out;
  for (auto& [name, p] : by_name) out.push_back(std::move(p));
  return out;
}

}  // namespace cke
