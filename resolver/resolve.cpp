#include "resolver/resolve.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "kernels/formats/layouts.h"
#include "resolver/fusion.h"

namespace cke {

std::string_view stage_name(Stage s) {
  constexpr std::string_view k[] = {"contract", "phase", "status", "dtype", "layout",
                                    "shape",    "isa",   "alias",  "rank"};
  return k[static_cast<int>(s)];
}

std::vector<const Step*> Resolution::steps_for(Phase p) const {
  std::vector<const Step*> out;
  for (const Step& s : steps)
    if (s.phase == p) out.push_back(&s);
  return out;
}

std::string Resolution::fault_report() const {
  std::string s;
  for (size_t i : faults) s += (s.empty() ? "" : "\n") + decisions[i].message;
  for (size_t i : fusion_faults) s += (s.empty() ? "" : "\n") + fusions[i].decision.message;
  return s;
}

namespace {

const QueryPort* qport(const Query& q, std::string_view name) {
  for (const QueryPort& p : q.ports)
    if (p.name == name) return &p;
  return nullptr;
}

using Env = std::map<std::string, Value>;

std::string shape_str(const std::vector<Value>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

// Node params against the contract's typed params; converts them. Error text or "".
std::string check_params(const Contract& c, const Query& q, Env* typed) {
  for (const auto& [name, v] : q.params) {
    const ContractParam* cp = c.param(name);
    if (!cp)
      return fmt::format("the circuit passes param '{}' which contract {} does not take", name,
                         c.id);
    if (cp->type == ParamType::I64) {
      if (!v.is_int()) return fmt::format("param {} must be an integer, got {}", name, v.str());
      (*typed)[name] = v;
    } else {
      if (v.is_tokens()) return fmt::format("param {} cannot depend on T", name);
      (*typed)[name] = v.is_int() ? Value::real(static_cast<float>(v.i)) : v;
    }
  }
  for (const ContractParam& cp : c.params)
    if (!typed->count(cp.name))
      return fmt::format("contract {} needs param '{}' ({}) which the circuit does not pass", c.id,
                         cp.name, param_type_name(cp.type));
  return "";
}

struct Verdict {
  Stage stage = Stage::Rank;
  std::string reason, detail;
  Env env;  // bound shape symbols and derived dims (survivors)
};

// Binds the map's symbolic port shapes to the query's concrete ones. Solves bare names
// directly and `name * known` products by exact division.
bool bind_shapes(const KernelMap& m, const Query& q, Verdict* v) {
  Env& env = v->env;
  auto fail = [&](const std::string& port, const std::string& why) {
    v->stage = Stage::Shape;
    v->reason = "shape_mismatch:" + port;
    v->detail = why;
    return false;
  };
  struct Item {
    const PortSpec* p;
    const QueryPort* qp;
    size_t d;
  };
  std::vector<Item> pending;
  for (const PortSpec& p : m.ports) {
    const QueryPort* qp = qport(q, p.name);
    if (qp->shape.size() != p.shape.size())
      return fail(p.name, fmt::format("rank {} (map) vs {} {} (query)", p.shape.size(),
                                      qp->shape.size(), shape_str(qp->shape)));
    for (size_t d = 0; d < p.shape.size(); ++d) pending.push_back({&p, qp, d});
  }
  Expr::Lookup look = [&env](std::string_view n) -> std::optional<Value> {
    auto it = env.find(std::string(n));
    return it == env.end() ? std::nullopt : std::optional<Value>(it->second);
  };
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const Expr& e = it->p->shape[it->d];
      const Value& actual = it->qp->shape[it->d];
      auto describe = [&](const Value& want) {
        return fmt::format("dim {} of {}: '{}' = {} but the query has {} (shape {})", it->d,
                           it->p->name, e.text(), want.str(), actual.str(),
                           shape_str(it->qp->shape));
      };
      bool done = false;
      if (auto name = e.as_name(); name && !env.count(*name)) {
        env[*name] = actual;
        done = true;
      } else {
        Expr::Result r = e.eval(look);
        if (r.value) {
          if (!(*r.value == actual)) return fail(it->p->name, describe(*r.value));
          done = true;
        } else if (r.unbound.empty()) {
          return fail(it->p->name, fmt::format("dim {} of {}: {}", it->d, it->p->name, r.error));
        } else {
          for (const auto& [name, other] : e.product_factors()) {
            if (env.count(name)) continue;
            Expr::Result o = other.eval(look);
            if (!o.value) continue;
            const Value& k = *o.value;
            if (!k.is_int() || k.i <= 0 || actual.is_float() || actual.i % k.i != 0 ||
                actual.i / k.i <= 0)
              return fail(it->p->name,
                          fmt::format("dim {} of {}: {} is not '{}' times a positive integer",
                                      it->d, it->p->name, actual.str(), other.text()));
            env[name] =
                actual.is_tokens() ? Value::tokens(actual.i / k.i) : Value::integer(actual.i / k.i);
            done = true;
            break;
          }
        }
      }
      if (done) {
        it = pending.erase(it);
        progress = true;
      } else {
        ++it;
      }
    }
    if (!progress)
      return fail(pending.front().p->name,
                  fmt::format("cannot bind '{}' from the other shapes",
                              pending.front().p->shape[pending.front().d].text()));
  }
  for (const auto& [name, e] : m.dims) {
    Expr::Result r = e.eval(look);
    if (!r.value) {
      v->stage = Stage::Shape;
      v->reason = "shape_unsupported:" + name;
      v->detail = fmt::format("derived dim {} = '{}': {}", name, e.text(), r.error);
      return false;
    }
    env[name] = *r.value;
  }
  return true;
}

Verdict filter(const KernelMap& m, const Query& q, const Env& params, const HostCaps& caps,
               const ResolveOptions& opt) {
  Verdict v;
  auto reject = [&v](Stage s, std::string reason, std::string detail) {
    v.stage = s;
    v.reason = std::move(reason);
    v.detail = std::move(detail);
    return v;
  };
  if (!m.selection.supports(q.phase)) {
    std::string phases;
    for (Phase p : m.selection.phases)
      phases += (phases.empty() ? "" : ", ") + std::string(phase_name(p));
    return reject(Stage::Phase, "phase_unsupported",
                  fmt::format("supports [{}], not {}", phases, phase_name(q.phase)));
  }
  const Status st = m.selection.status;
  if (st != Status::Production && !(st == Status::Candidate && opt.allow_candidate))
    return reject(Stage::Status, "status_not_production:" + std::string(status_name(st)),
                  st == Status::Candidate
                      ? "candidate providers compete only with allow_candidate"
                      : fmt::format("{} providers are never selected", status_name(st)));
  for (const PortSpec& p : m.ports) {
    const QueryPort* qp = qport(q, p.name);
    if (qp->dtype != p.dtype)
      return reject(Stage::Dtype, "dtype_mismatch:" + p.name,
                    fmt::format("port {} takes {}, the query has {}", p.name, dtype_name(p.dtype),
                                dtype_name(qp->dtype)));
  }
  for (const PortSpec& p : m.ports) {
    const QueryPort* qp = qport(q, p.name);
    // A weight in the file's row-major blocks reaches a repacked layout of its dtype by the
    // load-time repack step (kernels/formats/layouts.h; the step's argument names it).
    if (opt.allow_repack && p.role == PortRole::Weight && qp->layout == "row_major" &&
        find_weight_layout(p.layout))
      continue;
    if (qp->layout != p.layout)
      return reject(
          Stage::Layout, "layout_mismatch:" + p.name,
          fmt::format("port {} takes {}, the query has {}", p.name, p.layout, qp->layout));
  }
  if (!bind_shapes(m, q, &v)) return v;
  Env env = v.env;
  for (const auto& [k, val] : params) env[k] = val;
  Expr::Lookup look = [&env](std::string_view n) -> std::optional<Value> {
    auto it = env.find(std::string(n));
    return it == env.end() ? std::nullopt : std::optional<Value>(it->second);
  };
  for (const Expr& pred : m.shape_predicates) {
    Expr::Result r = pred.eval(look);
    std::string err;
    std::optional<bool> t = r.value ? truthy(*r.value, &err) : std::nullopt;
    if (!t || !*t) {
      std::string vals;
      for (const std::string& n : pred.names())
        if (auto x = look(n))
          vals += fmt::format("{}{} = {}", vals.empty() ? "" : ", ", n, x->str());
      return reject(Stage::Shape, "shape_unsupported:" + pred.text(),
                    !r.value ? fmt::format("'{}': {}", pred.text(), r.error)
                    : !t     ? fmt::format("'{}': {}", pred.text(), err)
                             : fmt::format("'{}' is false ({})", pred.text(), vals));
    }
  }
  for (Feature f : m.isa) {
    if (!caps.has(f)) {
      std::string missing;
      for (Feature g : m.isa)
        if (!caps.has(g)) missing += (missing.empty() ? "" : ", ") + std::string(feature_name(g));
      return reject(Stage::Isa, "isa_unsupported:" + std::string(feature_name(f)),
                    fmt::format("the host lacks {}", missing));
    }
  }
  for (const PortSpec& p : m.ports) {
    const QueryPort* a = qport(q, p.name);
    if (!p.alias_of.empty() && a->buffer != qport(q, p.alias_of)->buffer)
      return reject(Stage::Alias, "alias_required:" + p.name,
                    fmt::format("{} is declared alias_of {} (in place) but the circuit binds "
                                "different buffers",
                                p.name, p.alias_of));
  }
  for (size_t i = 0; i < m.ports.size(); ++i) {
    for (size_t j = i + 1; j < m.ports.size(); ++j) {
      const PortSpec& a = m.ports[i];
      const PortSpec& b = m.ports[j];
      if (qport(q, a.name)->buffer != qport(q, b.name)->buffer) continue;
      if (a.access == Access::Read && b.access == Access::Read) continue;  // reading twice is safe
      auto declares = [](const PortSpec& x, const PortSpec& y) {
        return x.alias_of == y.name ||
               std::find(x.may_alias.begin(), x.may_alias.end(), y.name) != x.may_alias.end();
      };
      if (declares(a, b) || declares(b, a)) continue;
      const PortSpec& w = b.access != Access::Read ? b : a;  // name the written port
      const PortSpec& o = &w == &b ? a : b;
      return reject(Stage::Alias, "alias_unsafe:" + w.name,
                    fmt::format("the circuit binds {} and {} to the same buffer but the map "
                                "declares neither alias_of nor may_alias for them",
                                w.name, o.name));
    }
  }
  return v;
}

std::string caps_str(const HostCaps& caps) {
  std::string s;
  for (const std::string& n : caps.features.names()) s += (s.empty() ? "" : " ") + n;
  return s.empty() ? "(none)" : s;
}

std::string query_str(const Graph& g, const Query& q, const HostCaps& caps) {
  std::string s = fmt::format("  query: op {}{}, profile {}, phase {}\n", q.op,
                              q.variant.empty() ? "" : " (variant " + q.variant + ")", q.profile,
                              phase_name(q.phase));
  for (const QueryPort& p : q.ports)
    s += fmt::format("    {:<8} {:<5} {} {} <- {}\n", p.name, dtype_name(p.dtype),
                     shape_str(p.shape), p.layout, g.buffers[p.buffer].label());
  if (!q.params.empty()) {
    s += "    params:";
    for (const auto& [k, v] : q.params) s += fmt::format(" {}={}", k, v.str());
    s += "\n";
  }
  s += fmt::format("    host: {} [{}]\n", caps.origin, caps_str(caps));
  return s;
}

std::string hint_for(const std::string& reason, const Decision& d, const HostCaps& caps) {
  auto starts = [&](const char* p) { return reason.rfind(p, 0) == 0; };
  if (starts("contract_mismatch"))
    return fmt::format(
        "no provider implements contract {}; write one (its reference provider is "
        "named in the contract)",
        d.contract);
  if (starts("phase_unsupported"))
    return fmt::format(
        "no provider of {} supports the {} phase; add it to a provider's "
        "selection.phases if the kernel handles it, or write one",
        d.contract, phase_name(d.query.phase));
  if (starts("status_not_production"))
    return "the matching providers are not production: promote one after its parity test "
           "passes, or opt in to candidates (ResolveOptions::allow_candidate)";
  if (starts("dtype_mismatch") || starts("layout_mismatch"))
    return "write a provider for these port dtypes/layouts (or a repack into one that exists)";
  if (starts("shape_"))
    return "the model's shapes are outside what the providers accept; write a provider without "
           "that restriction (e.g. one that handles the remainder)";
  if (starts("isa_unsupported"))
    return fmt::format(
        "the host [{}] lacks a required feature: plan for a host that has it, "
        "lift the --isa cap, or add a provider of {} for this ISA level",
        caps_str(caps), d.contract);
  if (starts("alias_"))
    return "the circuit binds these ports to one buffer: declare may_alias/alias_of in the map if "
           "the kernel supports it in place, or give the circuit a separate buffer";
  return "";
}

void explain_fault(const Graph& g, const Registry& reg, const HostCaps& caps, Decision* d) {
  const GraphNode& n = g.nodes[d->query.node];
  std::string s = fmt::format("resolution fault [{}]: node {} (op {}, phase {})\n", d->fault,
                              n.label(), n.op, phase_name(d->query.phase));
  s += query_str(g, d->query, caps);
  if (d->fault == "no_contract") {
    s += fmt::format("  no contract matches (op {}, variant '{}', profile {}, these port dtypes)\n",
                     d->query.op, d->query.variant, d->query.profile);
    for (const Contract& c : reg.contracts())
      if (c.op == d->query.op) s += fmt::format("    {}: {}\n", c.id, contract_misfit(c, d->query));
    s += "  hint: add a contract under kernel_maps/contracts/ (with its reference provider) for "
         "this (op, variant, profile, dtypes), or fix the circuit's profile/variant";
    d->message = s;
    return;
  }
  if (d->fault == "ambiguous_contract") {
    s += "  several contracts match:";
    for (const std::string& c : d->contract_matches) s += " " + c;
    s += "\n  hint: contracts must partition (op, variant, profile, dtypes); make them differ";
    d->message = s;
    return;
  }
  s += fmt::format("  contract: {}\n", d->contract);
  if (d->fault == "params_mismatch") {
    s += "  " + d->message + "\n";
    s += "  hint: the circuit's params must be exactly the contract's params";
    d->message = s;
    return;
  }
  s += "  candidates:\n";
  if (d->candidates.empty()) s += "    (no kernel map has this op)\n";
  for (const Candidate& c : d->candidates)
    s += fmt::format("    {:<32} {:<10} {:>6}  {}{}\n", c.id, status_name(c.status), c.priority,
                     c.eligible ? "eligible" : "rejected: " + c.reason,
                     c.detail.empty() ? "" : " — " + c.detail);
  if (d->fault == "tie") {
    s += "  hint: the top providers have the same lifecycle and priority; give them distinct "
         "priorities or demote one to candidate";
  } else {
    // The closest provider: the one that passed the most stages, then the highest ranked.
    const Candidate* best = nullptr;
    for (const Candidate& c : d->candidates)
      if (!best || c.stage > best->stage || (c.stage == best->stage && c.priority > best->priority))
        best = &c;
    if (best) {
      s += fmt::format("  closest: {} (rejected at the {} stage: {})\n", best->id,
                       stage_name(best->stage), best->reason);
      s += "  hint: " + hint_for(best->reason, *d, caps);
    } else {
      s += fmt::format("  hint: write a kernel map for op {} implementing {}", d->query.op,
                       d->contract);
    }
  }
  d->message = s;
}

// tokens_at_run_time: a decode step's args for a batch of tokens (Step::batch_args).
Step bind_step(const KernelMap& m, const Contract& c, const Query& q, const Env& env,
               const Env& params, bool tokens_at_run_time = false) {
  Step st{q.node, 1, q.phase, &m, &c, {}, {}, {}};
  for (const AbiArg& a : m.call_abi) {
    BoundArg b;
    b.source = a.text;
    switch (a.source) {
      case AbiArg::Source::Port:
        b.kind = BoundArg::Kind::Buffer;
        b.buffer = qport(q, a.name)->buffer;
        if (const PortSpec* p = m.port(a.name); p && p->layout != qport(q, a.name)->layout)
          b.layout = p->layout;  // a repacked copy of the weight (filter() admitted it)
        break;
      case AbiArg::Source::Dim: {
        const Value& v = env.at(a.name);
        if (v.is_tokens()) {
          b.kind = BoundArg::Kind::Runtime;
          b.runtime = RuntimeValue::NTokens;
          b.i64 = v.i;
        } else {
          b.kind = BoundArg::Kind::I64;
          b.i64 = v.i;
        }
        break;
      }
      case AbiArg::Source::Param: {
        const Value& v = params.at(a.name);
        if (v.is_float()) {
          b.kind = BoundArg::Kind::F32;
          b.f32 = v.f;
        } else {
          b.kind = BoundArg::Kind::I64;
          b.i64 = v.i;
        }
        break;
      }
      case AbiArg::Source::Runtime:
        if (a.runtime == RuntimeValue::NTokens && q.phase == Phase::Decode && !tokens_at_run_time) {
          b.kind = BoundArg::Kind::I64;  // decode: one token, a constant
          b.i64 = 1;
        } else {
          b.kind = BoundArg::Kind::Runtime;
          b.runtime = a.runtime;
          b.i64 = 1;
        }
        break;
      case AbiArg::Source::RangeBegin:
        b.kind = BoundArg::Kind::RangeBegin;
        break;
      case AbiArg::Source::RangeEnd:
        b.kind = BoundArg::Kind::RangeEnd;
        break;
    }
    st.args.push_back(std::move(b));
  }
  if (m.parallel.enabled)
    st.parallel = {true, m.parallel.dim, env.at(m.parallel.dim), m.parallel.min_chunk};
  return st;
}

}  // namespace

Query make_query(const Graph& g, size_t node, Phase phase) {
  const GraphNode& n = g.nodes[node];
  Query q{node, phase, n.op, n.variant, n.profile, {}, n.params};
  if (phase == Phase::Prefill) {
    q.min_tokens = 2;
    q.max_tokens = std::max<int64_t>(2, g.max_tokens);
  }
  for (const GraphPort& p : n.ports) {
    const GraphBuffer& b = g.buffers[p.buffer];
    QueryPort qp{p.port, p.buffer, b.dtype, p.shape, b.layout};
    if (phase == Phase::Decode)
      for (Value& v : qp.shape) v = v.at_tokens(1);
    q.ports.push_back(std::move(qp));
  }
  return q;
}

// Why contract `c` does not fit the query; empty if it does.
std::string contract_misfit(const Contract& c, const Query& q) {
  if (c.op != q.op) return "other op";
  if (c.variant != q.variant) return fmt::format("variant '{}' (query '{}')", c.variant, q.variant);
  if (c.profile != q.profile) return fmt::format("profile '{}' (query '{}')", c.profile, q.profile);
  for (const ContractPort& cp : c.ports) {
    const QueryPort* p = qport(q, cp.name);
    if (!p) return fmt::format("port '{}' not bound by the circuit", cp.name);
    if (cp.dtype && *cp.dtype != p->dtype)
      return fmt::format("port {}: {} (query {})", cp.name, dtype_name(*cp.dtype),
                         dtype_name(p->dtype));
  }
  for (const QueryPort& p : q.ports)
    if (!c.port(p.name)) return fmt::format("no port '{}'", p.name);
  if (c.when) {
    // <port>_ne<i> from the query's shapes. A dim that depends on T is evaluated at both
    // ends of the phase's token range (prefill: T = 2 and T = max): the contract must be
    // decided for every run of the plan, so two different answers are a misfit.
    auto eval_at = [&](int64_t tokens, std::string* why) -> std::optional<bool> {
      Expr::Lookup look = [&](std::string_view n) -> std::optional<Value> {
        const size_t at = n.rfind("_ne");
        if (at == std::string_view::npos) return std::nullopt;
        const QueryPort* p = qport(q, n.substr(0, at));
        const size_t i = size_t(std::strtoul(std::string(n.substr(at + 3)).c_str(), nullptr, 10));
        if (!p || i >= p->shape.size()) return Value::integer(1);  // ggml: missing dims are 1
        return p->shape[i].at_tokens(tokens);
      };
      Expr::Result r = c.when->eval(look);
      std::string err;
      std::optional<bool> t = r.value ? truthy(*r.value, &err) : std::nullopt;
      if (!t) {
        *why = fmt::format("when '{}': {}", c.when->text(), r.error + err);
        return std::nullopt;
      }
      if (!*t) {
        std::string vals;
        for (const std::string& n : c.when->names())
          if (auto x = look(n))
            vals += fmt::format("{}{} = {}", vals.empty() ? "" : ", ", n, x->str());
        *why = fmt::format("when '{}' is false ({})", c.when->text(), vals);
      }
      return t;
    };
    std::string why_lo, why_hi;
    const std::optional<bool> lo = eval_at(q.min_tokens, &why_lo);
    if (!lo) return why_lo;
    if (q.max_tokens != q.min_tokens) {
      const std::optional<bool> hi = eval_at(q.max_tokens, &why_hi);
      if (!hi) return why_hi;
      if (*hi != *lo)
        return fmt::format("when '{}' depends on the token count (T = {}: {}, T = {}: {})",
                           c.when->text(), q.min_tokens, *lo, q.max_tokens, *hi);
    }
    if (!*lo) return why_lo;
  }
  return "";
}

Decision decide_query(const Graph& graph, const Registry& registry, const HostCaps& caps,
                      const ResolveOptions& options, const QueryAt& query_at, Phase phase,
                      std::optional<Step>* step) {
  Decision d;
  d.query = query_at(phase);
  const Query& q = d.query;
  // 1. gather
  std::vector<const KernelMap*> gathered = registry.maps_for_op(q.op);
  std::stable_sort(gathered.begin(), gathered.end(), [](const KernelMap* a, const KernelMap* b) {
    return a->selection.priority > b->selection.priority;
  });  // maps_for_op is by id: ties keep id order
  // 2. contract
  for (const Contract& c : registry.contracts())
    if (contract_misfit(c, q).empty()) d.contract_matches.push_back(c.id);
  const Contract* contract = nullptr;
  Env params;
  if (d.contract_matches.size() == 1) {
    d.contract = d.contract_matches[0];
    contract = registry.find_contract(d.contract);
  }
  if (d.contract_matches.empty())
    d.fault = "no_contract";
  else if (d.contract_matches.size() > 1)
    d.fault = "ambiguous_contract";
  else if (std::string e = check_params(*contract, q, &params); !e.empty()) {
    d.fault = "params_mismatch";
    d.message = e;
  }
  // 3. filters
  std::vector<std::pair<const KernelMap*, Env>> survivors;
  std::vector<Candidate> candidates;
  for (const KernelMap* m : gathered) {
    Candidate c{
        m->id, m->selection.status, m->selection.priority, Stage::Contract, false, false, {}, {}};
    if (!contract || m->contract != contract->id) {
      c.reason = "contract_mismatch";
      c.detail = contract ? fmt::format("implements {}", m->contract)
                          : fmt::format("implements {}; no contract was derived", m->contract);
    } else if (!d.fault.empty()) {
      c.reason = d.fault;
      c.detail = "the query has no usable contract";
    } else {
      Verdict v = filter(*m, q, params, caps, options);
      c.stage = v.stage;
      c.reason = v.reason;
      c.detail = v.detail;
      c.eligible = v.reason.empty();
      if (c.eligible) survivors.emplace_back(m, std::move(v.env));
    }
    candidates.push_back(std::move(c));
  }
  // 4. rank
  if (d.fault.empty()) {
    auto key = [](const KernelMap* m) {
      return std::pair{lifecycle_rank(m->selection.status), m->selection.priority};
    };
    std::stable_sort(survivors.begin(), survivors.end(),
                     [&](const auto& a, const auto& b) { return key(a.first) > key(b.first); });
    if (survivors.empty()) {
      d.fault = "no_provider";
    } else if (survivors.size() > 1 && key(survivors[0].first) == key(survivors[1].first)) {
      d.fault = "tie";
    } else {
      const KernelMap* w = survivors[0].first;
      d.winner = w->id;
      for (Candidate& c : candidates) c.winner = c.id == w->id;
      // 5. bind
      *step = bind_step(*w, *contract, q, survivors[0].second, params);
      if (q.phase == Phase::Decode && w->selection.decode_batch) {
        // The same provider over T tokens: the node's shapes with T free (over the
        // prefill's token range), still the decode phase.
        Query qb = query_at(Phase::Prefill);
        qb.phase = Phase::Decode;
        Verdict vb = filter(*w, qb, params, caps, options);
        if (vb.reason.empty()) {
          (*step)->batch_args = bind_step(*w, *contract, qb, vb.env, params, true).args;
          d.decode_batch = true;
        }
      }
      for (const PortSpec& p : w->ports)
        if (p.layout != qport(q, p.name)->layout) d.repacks[p.name] = p.layout;
    }
  }
  d.candidates = Candidates(std::move(candidates));
  if (!d.fault.empty()) explain_fault(graph, registry, caps, &d);
  return d;
}

namespace {

// What a decision reads of its query (contract_misfit, check_params, filter, bind_step):
// op, variant, profile, token range, params, and per port its name, dtype, shape, layout
// and which other ports name the same buffer (the alias filter). Not the node, not the
// buffers' numbers: the layers of a model ask one question many times, and one answer
// serves them all. Exact: Value kinds and float bits, not their printed forms.
void key_of(const Query& q, std::string* k) {
  auto value = [&](const Value& v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v.f, 4);
    *k += fmt::format("{}:{}:{:x},", int(v.kind), v.i, bits);
  };
  *k += fmt::format("{}|{}|{}|{}|{}|{}|{}|", int(q.phase), q.op, q.variant, q.profile, q.min_tokens,
                    q.max_tokens, q.ports.size());
  for (const auto& [name, v] : q.params) {
    *k += name + "=";
    value(v);
  }
  for (size_t i = 0; i < q.ports.size(); ++i) {
    const QueryPort& p = q.ports[i];
    size_t first = 0;  // the first port on the same buffer
    while (q.ports[first].buffer != p.buffer) ++first;
    *k += fmt::format("|{}:{}:{}:{}:", p.name, dtype_name(p.dtype), p.layout, first);
    for (const Value& v : p.shape) value(v);
  }
}

// The key of node's decision in `phase`. A decode decision also reads the node's prefill
// query (a decode_batch winner's batch_args), so its key holds both.
std::string decision_key(const Graph& g, size_t node, Phase phase) {
  std::string k;
  key_of(make_query(g, node, phase), &k);
  if (phase == Phase::Decode) {
    k += "||";
    key_of(make_query(g, node, Phase::Prefill), &k);
  }
  return k;
}

// `from`'s step (its winner bound to the query `from_q`) for the query q of the same key:
// the node and the buffers of q's ports in place of from_q's, port by port.
Step rebind(const Step& from, const Query& from_q, const Query& q) {
  Step s = from;
  s.node = q.node;
  auto remap = [&](std::vector<BoundArg>& args) {
    for (BoundArg& a : args) {
      if (a.kind != BoundArg::Kind::Buffer) continue;
      size_t j = 0;
      while (from_q.ports[j].buffer != a.buffer) ++j;  // bind_step took it from a port
      a.buffer = q.ports[j].buffer;
    }
  };
  remap(s.args);
  remap(s.batch_args);
  return s;
}

}  // namespace

Resolution resolve(const Graph& graph, const Registry& registry, const HostCaps& caps,
                   const ResolveOptions& options) {
  // Decisions are independent (each reads the graph, the registry and the caps): made in
  // parallel, gathered in (phase, node) order. Each distinct question (decision_key) is
  // decided once; the other nodes asking it copy the decision with their own query and
  // get the winner bound to their own buffers. A fault is decided again per node (its
  // message names the node).
  const size_t n = graph.nodes.size(), total = options.phases.size() * n;
  std::vector<Decision> decisions(total);
  std::vector<std::optional<Step>> steps(total);
  std::vector<std::string> keys(total);
  tbb::parallel_for(size_t(0), total,
                    [&](size_t i) { keys[i] = decision_key(graph, i % n, options.phases[i / n]); });
  std::vector<size_t> first(total);  // the first index asking the same question
  {
    std::unordered_map<std::string_view, size_t> seen;
    for (size_t i = 0; i < total; ++i) first[i] = seen.try_emplace(keys[i], i).first->second;
  }
  auto decide = [&](size_t i) {
    const size_t node = i % n;
    decisions[i] = decide_query(
        graph, registry, caps, options, [&](Phase p) { return make_query(graph, node, p); },
        options.phases[i / n], &steps[i]);
  };
  tbb::parallel_for(size_t(0), total, [&](size_t i) {
    if (first[i] == i) decide(i);
  });
  tbb::parallel_for(size_t(0), total, [&](size_t i) {
    const size_t f = first[i];
    if (f == i) return;
    if (!decisions[f].fault.empty()) return decide(i);
    decisions[i] = decisions[f];
    decisions[i].query = make_query(graph, i % n, options.phases[i / n]);
    if (steps[f]) steps[i] = rebind(*steps[f], decisions[f].query, decisions[i].query);
  });
  Resolution res;
  for (size_t i = 0; i < total; ++i) {
    if (!decisions[i].fault.empty()) res.faults.push_back(res.decisions.size());
    res.decisions.push_back(std::move(decisions[i]));
  }
  for (size_t p = 0; p < options.phases.size(); ++p) {
    std::vector<std::optional<Step>> phase_steps(steps.begin() + p * n,
                                                 steps.begin() + (p + 1) * n);
    fuse(graph, registry, caps, options, &res.decisions[p * n], &phase_steps, &res);
    for (std::optional<Step>& s : phase_steps)
      if (s) res.steps.push_back(std::move(*s));
  }
  return res;
}

}  // namespace cke
