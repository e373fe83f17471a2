#include "resolver/graph.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace cke {

void MapModelFacts::set_key(std::string name, MetaValue v) {
  for (auto& kv : keys_)
    if (kv.first == name) {
      kv.second = std::move(v);
      return;
    }
  keys_.emplace_back(std::move(name), std::move(v));
}

void MapModelFacts::set_tensor(std::string name, TensorFact t) {
  for (auto& kv : tensors_)
    if (kv.first == name) {
      kv.second = std::move(t);
      return;
    }
  tensors_.emplace_back(std::move(name), std::move(t));
}

void MapModelFacts::erase_tensor(std::string_view name) {
  std::erase_if(tensors_, [&](const auto& kv) { return kv.first == name; });
}

void MapModelFacts::erase_key(std::string_view name) {
  std::erase_if(keys_, [&](const auto& kv) { return kv.first == name; });
}

std::optional<MetaValue> MapModelFacts::key(std::string_view name) const {
  for (const auto& kv : keys_)
    if (kv.first == name) return kv.second;
  return std::nullopt;
}

std::optional<TensorFact> MapModelFacts::tensor(std::string_view name) const {
  for (const auto& kv : tensors_)
    if (kv.first == name) return kv.second;
  return std::nullopt;
}

std::string GraphBuffer::label() const {
  return layer >= 0 ? fmt::format("{}@{}", name, layer) : name;
}

std::string GraphNode::label() const {
  return layer >= 0 ? fmt::format("blk.{}.{}", layer, name) : name;
}

const GraphPort* GraphNode::port(std::string_view name) const {
  for (const GraphPort& p : ports)
    if (p.port == name) return &p;
  return nullptr;
}

std::optional<Value> Graph::value(std::string_view name) const {
  for (const auto& kv : values)
    if (kv.first == name) return kv.second;
  return std::nullopt;
}

namespace {

std::string shape_str(const std::vector<Value>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Element count as a Value (Int, or c*T); nullopt if two dims depend on T or it overflows.
std::optional<Value> elements(const std::vector<Value>& shape) {
  int64_t c = 1;
  bool tokens = false;
  for (const Value& d : shape) {
    if (d.is_float() || (d.is_tokens() && tokens)) return std::nullopt;
    tokens = tokens || d.is_tokens();
    if (__builtin_mul_overflow(c, d.i, &c)) return std::nullopt;
  }
  return tokens ? Value::tokens(c) : Value::integer(c);
}

// x as an int64 when it is a whole number in range (no UB on NaN or huge values).
bool integral(double x, int64_t* out) {
  if (!std::isfinite(x) || x != std::trunc(x) || x < -9.2e18 || x > 9.2e18) return false;
  *out = static_cast<int64_t>(x);
  return true;
}

class Instantiator {
 public:
  Instantiator(const Circuit& c, const ModelFacts& f, const InstanceOptions& o,
               std::vector<LoadError>* e)
      : c_(c), facts_(f), opt_(o), errors_(e) {}

  std::optional<Graph> run() {
    g_.architecture = c_.architecture;
    g_.circuit_file = c_.file;
    g_.circuit_sha256 = c_.sha256;
    g_.n_ctx = opt_.n_ctx;
    g_.max_tokens = opt_.max_tokens;
    if (opt_.n_ctx < 1) error("", fmt::format("n_ctx must be >= 1 (got {})", opt_.n_ctx));
    if (opt_.max_tokens < 1 || opt_.max_tokens > opt_.n_ctx)
      error("", fmt::format("max_tokens must be in 1..n_ctx (got {})", opt_.max_tokens));
    if (opt_.cache_type != DType::F32 && opt_.cache_type != DType::F16)
      error("", fmt::format("the KV cache type must be f32 or f16 (got {})",
                            dtype_name(opt_.cache_type)));
    if (failed_) return std::nullopt;

    for (const HparamSpec& h : c_.hparams) value(h.name, "hparams." + h.name);
    for (const auto& d : c_.derived) value(d.first, "derived." + d.first);
    if (failed_) return std::nullopt;
    for (const HparamSpec& h : c_.hparams) g_.values.emplace_back(h.name, vals_.at(h.name));
    for (const auto& d : c_.derived) g_.values.emplace_back(d.first, vals_.at(d.first));
    for (size_t i = 0; i < c_.checks.size(); ++i) {
      std::optional<Value> v = eval(c_.checks[i], fmt::format("checks[{}]", i), values_only());
      std::string e;
      if (v && !truthy(*v, &e).value_or(false))
        error(
            fmt::format("checks[{}]", i),
            fmt::format("the model fails '{}' ({})", c_.checks[i].text(), describe(c_.checks[i])));
    }
    if (std::optional<Value> n = eval(c_.layers, "layers", values_only())) {
      if (!n->is_int() || n->i < 0 || n->i > 4096)
        error("layers", "must be an integer in 0..4096");
      else
        g_.n_layer = n->i;
    }
    if (failed_) return std::nullopt;

    weights();
    buffers();
    if (failed_) return std::nullopt;
    nodes(c_.header, "header", -1);
    for (int64_t l = 0; l < g_.n_layer; ++l) nodes(c_.layer, "layer", static_cast<int>(l));
    nodes(c_.footer, "footer", -1);
    if (failed_) return std::nullopt;
    return std::move(g_);
  }

  // The circuit's `select` over the model's values (true without one).
  std::optional<bool> selects(std::string* why) {
    if (!c_.select) {
      *why = "no select: every model of the architecture";
      return true;
    }
    std::optional<Value> v = eval(*c_.select, "select", values_only());
    if (!v) return std::nullopt;
    std::string e;
    std::optional<bool> t = truthy(*v, &e);
    if (!t) {
      error("select", e);
      return std::nullopt;
    }
    *why = fmt::format("select '{}' is {} ({})", c_.select->text(), *t ? "true" : "false",
                       describe(*c_.select));
    return t;
  }

 private:
  const Circuit& c_;
  const ModelFacts& facts_;
  const InstanceOptions& opt_;
  std::vector<LoadError>* errors_;
  Graph g_;
  bool failed_ = false;
  std::map<std::string, Value> vals_;
  std::set<std::string> visiting_, bad_;
  std::map<std::pair<std::string, int>, int> index_;  // (name, layer) → buffer
  std::map<std::string, bool> present_;               // optional weights

  void error(const std::string& path, const std::string& reason) {
    failed_ = true;
    if (errors_) errors_->push_back({c_.file, path, reason, 0});
  }

  Expr::Lookup values_only() {
    return [this](std::string_view n) -> std::optional<Value> {
      if (n == "n_ctx") return Value::integer(opt_.n_ctx);
      if (n == "flash_attn") return Value::integer(opt_.cache_type == DType::F16 ? 1 : 0);
      if (n.rfind("has_", 0) == 0) {
        auto it = present_.find(std::string(n.substr(4)));
        if (it != present_.end()) return Value::integer(it->second ? 1 : 0);
      }
      return value(std::string(n), "");
    };
  }

  // "n_head = 8, n_head_kv = 3": the values an expression saw, for error messages.
  // "n_rot = 9 (llama.rope.dimension_count), head_dim = 8 (n_embd / n_head)": each value
  // with the metadata key or tensor dimension it came from, or its formula.
  std::string describe(const Expr& e) {
    std::string s;
    for (const std::string& n : e.names()) {
      auto v = values_only()(n);
      if (!v) continue;
      std::string from;
      for (const HparamSpec& h : c_.hparams)
        if (h.name == n) {
          from = !h.key.empty() ? h.key : fmt::format("{} dim {}", h.tensor, h.tensor_dim);
          if (!h.key.empty() && !facts_.key(h.key) && h.default_value)
            from += " absent: " + h.default_value->text();
        }
      for (const auto& [name, expr] : c_.derived)
        if (name == n) from = expr.text();
      s += fmt::format("{}{} = {}{}", s.empty() ? "" : ", ", n, v->str(),
                       from.empty() ? "" : " (" + from + ")");
    }
    return s;
  }

  std::optional<Value> eval(const Expr& e, const std::string& path, const Expr::Lookup& look) {
    Expr::Result r = e.eval(look);
    if (r.value) return r.value;
    if (!bad_.count(r.unbound))  // a failed dependency was reported already
      error(path, fmt::format("cannot evaluate '{}': {}", e.text(), r.error));
    failed_ = true;
    return std::nullopt;
  }

  std::optional<Value> convert(const Value& v, ParamType t, const std::string& path) {
    if (t == ParamType::F32) return v.is_int() ? Value::real(static_cast<float>(v.i)) : v;
    if (v.is_int()) return v;
    if (int64_t i; v.is_float() && integral(v.f, &i)) return Value::integer(i);
    error(path, fmt::format("expected an integer, got {}", v.str()));
    return std::nullopt;
  }

  // Lazily evaluates an hparam or derived value (they may refer to each other).
  std::optional<Value> value(const std::string& name, const std::string& path) {
    if (auto it = vals_.find(name); it != vals_.end()) return it->second;
    if (bad_.count(name)) return std::nullopt;
    const HparamSpec* h = nullptr;
    for (const HparamSpec& x : c_.hparams)
      if (x.name == name) h = &x;
    const Expr* d = nullptr;
    for (const auto& x : c_.derived)
      if (x.first == name) d = &x.second;
    if (!h && !d) return std::nullopt;
    std::string where = path.empty() ? (h ? "hparams." : "derived.") + name : path;
    if (visiting_.count(name)) {
      error(where, fmt::format("'{}' depends on itself", name));
      bad_.insert(name);
      return std::nullopt;
    }
    visiting_.insert(name);
    std::optional<Value> v = h ? hparam(*h, where) : eval(*d, where, values_only());
    visiting_.erase(name);
    if (!v) {
      bad_.insert(name);
      return std::nullopt;
    }
    vals_[name] = *v;
    return v;
  }

  std::optional<Value> hparam(const HparamSpec& h, const std::string& path) {
    if (!h.tensor.empty()) {
      std::optional<TensorFact> t = facts_.tensor(h.tensor);
      if (!t || static_cast<size_t>(h.tensor_dim) >= t->shape.size()) {
        error(path, fmt::format("tensor '{}' {} (needed for dimension {})", h.tensor,
                                t ? "has too few dimensions" : "is absent", h.tensor_dim));
        return std::nullopt;
      }
      return Value::integer(t->shape[h.tensor_dim]);
    }
    std::optional<MetaValue> m = facts_.key(h.key);
    if (!m) {
      if (!h.default_value) {
        error(path, fmt::format("metadata key '{}' is absent and has no default", h.key));
        return std::nullopt;
      }
      std::optional<Value> v = eval(*h.default_value, path + ".default", values_only());
      return v ? convert(*v, h.type, path) : std::nullopt;
    }
    if (const auto* i = std::get_if<int64_t>(&*m))
      return convert(Value::integer(*i), h.type, path + " (key " + h.key + ")");
    if (const auto* d = std::get_if<double>(&*m)) {
      if (h.type == ParamType::F32) return Value::real(static_cast<float>(*d));
      if (int64_t i; integral(*d, &i)) return Value::integer(i);
      error(path, fmt::format("metadata key '{}' = {} is not an integer", h.key, *d));
      return std::nullopt;
    }
    if (const auto* u = std::get_if<MetaUnreadable>(&*m)) {
      error(path, fmt::format("metadata key '{}' is {}, expected a number", h.key, u->what));
      return std::nullopt;
    }
    error(path, fmt::format("metadata key '{}' is a string, expected a number", h.key));
    return std::nullopt;
  }

  std::string tensor_name(const WeightSpec& w, int layer) {
    std::string s = w.tensor;
    if (size_t p = s.find("{L}"); p != std::string::npos) s.replace(p, 3, std::to_string(layer));
    return s;
  }

  void weights() {
    // Weights with a fallback last, so their fallback's buffer exists.
    for (int pass = 0; pass < 2; ++pass) {
      for (const WeightSpec& w : c_.weights) {
        if (w.fallback.empty() != (pass == 0)) continue;
        const std::string path = "weights." + w.name;
        std::vector<Value> expect;
        for (size_t i = 0; i < w.shape.size(); ++i)
          if (auto v = eval(w.shape[i], fmt::format("{}.shape[{}]", path, i), values_only()))
            expect.push_back(*v);
        if (expect.size() != w.shape.size()) continue;
        int n_present = 0, n_total = 0;
        for (int l = w.per_layer ? 0 : -1; l < (w.per_layer ? g_.n_layer : 0); ++l) {
          ++n_total;
          std::string name = tensor_name(w, l);
          std::optional<TensorFact> t = facts_.tensor(name);
          if (!t) {
            if (!w.fallback.empty()) {
              auto fb = index_.find({w.fallback, -1});
              if (fb != index_.end())
                index_[{w.name, l}] = fb->second;
              else
                error(path, fmt::format("tensor '{}' is absent and so is its fallback '{}'", name,
                                        w.fallback));
            } else if (!w.optional) {
              error(path, fmt::format("tensor '{}' is absent from the model", name));
            }
            continue;
          }
          ++n_present;
          std::vector<int64_t> want;
          for (const Value& v : expect) {
            if (!v.is_int()) {
              error(path, fmt::format("shape dim {} is not an integer", v.str()));
              return;
            }
            want.push_back(v.i);
          }
          if (t->shape != want) {
            error(path, fmt::format("tensor '{}' has shape {}, the circuit expects {}", name,
                                    shape_str(t->shape), shape_str(want)));
            continue;
          }
          const DTypeInfo& info = dtype_info(t->dtype);
          if (!want.empty() && want[0] % info.block_size != 0) {
            error(path, fmt::format("tensor '{}': row of {} elements is not a whole number of {} "
                                    "blocks of {}",
                                    name, want[0], info.name, info.block_size));
            continue;
          }
          GraphBuffer b;
          b.name = w.name;
          b.layer = l;
          b.kind = BufferKind::Weight;
          b.dtype = t->dtype;
          b.layout = "row_major";  // as stored in GGUF
          b.tensor = name;
          uint64_t rows = 1;
          for (size_t i = 1; i < want.size(); ++i) rows *= static_cast<uint64_t>(want[i]);
          b.bytes = want.empty() ? info.type_size : row_bytes(t->dtype, want[0]) * rows;
          for (int64_t d : want) b.shape.push_back(Value::integer(d));
          index_[{w.name, l}] = static_cast<int>(g_.buffers.size());
          g_.buffers.push_back(std::move(b));
        }
        if (w.optional) {
          if (n_present != 0 && n_present != n_total)
            error(path, fmt::format("optional weight present in {} of {} layers (all or none)",
                                    n_present, n_total));
          present_[w.name] = n_present > 0;
        }
      }
    }
  }

  Expr::Lookup shape_lookup() {
    return [this](std::string_view n) -> std::optional<Value> {
      if (n == "T") return Value::tokens(1);
      return values_only()(n);
    };
  }

  void buffers() {
    for (const BufferSpec& s : c_.buffers) {
      const std::string path = fmt::format("{}s.{}", buffer_kind_name(s.kind), s.name);
      std::vector<Value> shape;
      for (size_t i = 0; i < s.shape.size(); ++i)
        if (auto v = eval(s.shape[i], fmt::format("{}.shape[{}]", path, i), shape_lookup()))
          shape.push_back(*v);
      if (shape.size() != s.shape.size()) continue;
      std::optional<Value> n = elements(shape);
      if (!n || (s.kind == BufferKind::State && n->is_tokens())) {
        error(path, fmt::format("bad shape {} ({})", shape_str(shape),
                                s.kind == BufferKind::State ? "state cannot depend on T"
                                                            : "at most one dim may depend on T"));
        continue;
      }
      const DType dtype = s.dtype_is_cache_type ? opt_.cache_type : s.dtype;
      const DTypeInfo& info = dtype_info(dtype);
      if (info.block_size != 1) {
        error(path, fmt::format("buffers hold plain types, not {}", info.name));
        continue;
      }
      // Size at T = max_tokens; absurd metadata must not overflow.
      int64_t elems = 0, bytes = 0;
      if (n->i <= 0 ||
          __builtin_mul_overflow(n->i, n->is_tokens() ? opt_.max_tokens : int64_t{1}, &elems) ||
          __builtin_mul_overflow(elems, int64_t{info.type_size}, &bytes) ||
          bytes > (int64_t{1} << 46)) {
        error(path,
              fmt::format("shape {} gives no or an impossibly large buffer", shape_str(shape)));
        continue;
      }
      for (int l = s.per_layer ? 0 : -1; l < (s.per_layer ? g_.n_layer : 0); ++l) {
        GraphBuffer b;
        b.name = s.name;
        b.layer = l;
        b.kind = s.kind;
        b.dtype = dtype;
        b.shape = shape;
        b.layout = s.layout;
        b.bytes = bytes;
        index_[{s.name, l}] = static_cast<int>(g_.buffers.size());
        g_.buffers.push_back(std::move(b));
      }
    }
  }

  void nodes(const std::vector<NodeSpec>& specs, const std::string& section, int layer) {
    for (const NodeSpec& s : specs) {
      std::string where = layer >= 0 ? fmt::format("{} (layer {})", s.path, layer) : s.path;
      auto with_l = [this, layer](std::string_view n) -> std::optional<Value> {
        if (n == "L" && layer >= 0) return Value::integer(layer);
        return values_only()(n);
      };
      if (s.when) {
        std::optional<Value> v = eval(*s.when, where + ".when", with_l);
        std::string e;
        if (!v) continue;
        std::optional<bool> t = truthy(*v, &e);
        if (!t) {
          error(where + ".when", e);
          continue;
        }
        if (!*t) continue;
      }
      GraphNode n;
      n.name = s.name;
      n.section = section;
      n.layer = layer;
      n.op = s.op;
      n.variant = s.variant;
      n.profile = s.profile;
      for (const PortEdge& e : s.ports) {
        const WeightSpec* w = c_.weight(e.buffer);
        const BufferSpec* b = c_.buffer(e.buffer);
        int l = ((w && w->per_layer) || (b && b->per_layer)) ? layer : -1;
        auto it = index_.find({e.buffer, l});
        if (it == index_.end()) {
          error(where + ".ports." + e.port,
                fmt::format("'{}' is absent from this model (guard the node with `when: has_{}`)",
                            e.buffer, e.buffer));
          continue;
        }
        GraphPort p{e.port, it->second, g_.buffers[it->second].shape};
        if (e.view) {
          std::vector<Value> view;
          for (size_t i = 0; i < e.view->size(); ++i)
            if (auto v = eval((*e.view)[i], fmt::format("{}.ports.{}.shape[{}]", where, e.port, i),
                              shape_lookup()))
              view.push_back(*v);
          if (view.size() != e.view->size()) continue;
          std::optional<Value> a = elements(view), bsz = elements(p.shape);
          if (!a || !bsz || !(*a == *bsz)) {
            error(where + ".ports." + e.port,
                  fmt::format("view {} of '{}' {} does not have the same number of elements",
                              shape_str(view), e.buffer, shape_str(p.shape)));
            continue;
          }
          p.shape = std::move(view);
        }
        n.ports.push_back(std::move(p));
      }
      for (const auto& [k, expr] : s.params)
        if (auto v = eval(expr, where + ".params." + k, with_l)) n.params.emplace_back(k, *v);
      g_.nodes.push_back(std::move(n));
    }
  }
};

}  // namespace

std::optional<Graph> instantiate(const Circuit& circuit, const ModelFacts& facts,
                                 const InstanceOptions& options, std::vector<LoadError>* errors) {
  return Instantiator(circuit, facts, options, errors).run();
}

std::optional<bool> circuit_selects(const Circuit& circuit, const ModelFacts& facts,
                                    std::vector<LoadError>* errors, std::string* why) {
  const InstanceOptions o{1, 1, DType::F32};
  return Instantiator(circuit, facts, o, errors).selects(why);
}

std::optional<Circuit> select_circuit(std::string_view architecture,
                                      const std::vector<std::filesystem::path>& dirs,
                                      const ModelFacts& facts, std::string* err) {
  const std::vector<std::filesystem::path> files = circuit_files(architecture, dirs);
  std::vector<Circuit> chosen;
  std::string seen;
  for (const auto& f : files) {
    std::vector<LoadError> errors;
    std::optional<Circuit> c = load_circuit(f, &errors);
    if (c && c->architecture != architecture)
      errors.push_back(
          {f.string(), "architecture",
           fmt::format("'{}' in a file of architecture '{}'", c->architecture, architecture), 0});
    std::string why;
    std::optional<bool> yes =
        c && errors.empty() ? circuit_selects(*c, facts, &errors, &why) : std::nullopt;
    if (!yes) {
      *err = format_errors(errors);
      return std::nullopt;
    }
    seen += fmt::format("\n  {}: {}", f.string(), why);
    if (*yes) chosen.push_back(std::move(*c));
  }
  if (files.empty()) {
    *err = fmt::format("no circuit for architecture '{}'", architecture);
    return std::nullopt;
  }
  if (chosen.size() != 1) {
    *err = fmt::format("{} circuits of architecture '{}' describe this model (exactly one must):{}",
                       chosen.empty() ? "no" : std::to_string(chosen.size()), architecture, seen);
    return std::nullopt;
  }
  return std::move(chosen.front());
}

}  // namespace cke
