#include "resolver/fusion.h"

#include <fmt/format.h>

#include <algorithm>

namespace cke {
namespace {

// The query of fused contract `c`'s pattern at nodes [node, node + stages) in `phase`: one
// port per fused port, taken from the stage node that binds it. nullopt when the nodes are
// not the pattern: two stage ports bound to one fused port name different buffers or
// shapes, or two nodes pass one param with different values.
std::optional<Query> pattern_query(const Graph& graph, const Contract& c, size_t node,
                                   Phase phase) {
  const size_t stages = c.composes.size();
  if (node + stages > graph.nodes.size()) return std::nullopt;
  std::vector<Query> q;
  for (size_t s = 0; s < stages; ++s) q.push_back(make_query(graph, node + s, phase));
  Query f{node, phase, c.op, c.variant, c.profile, {}, {}, q[0].min_tokens, q[0].max_tokens};
  for (const ContractPort& cp : c.ports) {
    const QueryPort* bound = nullptr;
    for (size_t s = 0; s < stages; ++s)
      for (const auto& [from, to] : c.composes[s].ports) {
        if (to != cp.name) continue;
        const auto it = std::find_if(q[s].ports.begin(), q[s].ports.end(),
                                     [&](const QueryPort& p) { return p.name == from; });
        if (it == q[s].ports.end()) return std::nullopt;
        if (!bound)
          bound = &*it;
        else if (bound->buffer != it->buffer || !(bound->shape == it->shape))
          return std::nullopt;
      }
    if (!bound) return std::nullopt;
    QueryPort p = *bound;
    p.name = cp.name;
    f.ports.push_back(std::move(p));
  }
  for (const Query& s : q)
    for (const auto& [name, v] : s.params) {
      const auto it = std::find_if(f.params.begin(), f.params.end(),
                                   [&](const auto& x) { return x.first == name; });
      if (it == f.params.end())
        f.params.emplace_back(name, v);
      else if (!(it->second == v))
        return std::nullopt;
    }
  return f;
}

using Rank = std::pair<int, int64_t>;  // lifecycle, priority

Rank rank_of(const KernelMap& m) {
  return {lifecycle_rank(m.selection.status), m.selection.priority};
}

std::string rank_str(const KernelMap& m) {
  return fmt::format("{} ({}, {})", m.id, status_name(m.selection.status), m.selection.priority);
}

std::string span_label(const Graph& g, size_t node, size_t span) {
  std::string s;
  for (size_t k = node; k < node + span; ++k) s += (s.empty() ? "" : " + ") + g.nodes[k].label();
  return s;
}

struct Tried {
  Fusion fusion;
  std::optional<Step> step;
  const KernelMap* winner = nullptr;
};

// The outcome of one match against the winners of the nodes it would replace.
void judge(const Graph& g, const Registry& reg, const Decision* decisions, Tried* t) {
  Fusion& f = t->fusion;
  const Decision& d = f.decision;
  if (d.fault == "no_provider") {
    f.outcome = "no_provider";
    f.detail = "no fused provider is eligible (the candidates say why); the nodes keep theirs";
    return;
  }
  if (!d.fault.empty()) {  // a tie or a contract/params fault among fused providers: data error
    f.outcome = d.fault;
    f.detail = d.message;
    return;
  }
  t->winner = reg.find_map(d.winner);
  const KernelMap* top = nullptr;
  for (size_t k = f.node; k < f.node + f.span; ++k) {
    const KernelMap* w = reg.find_map(decisions[k].winner);
    if (!top || rank_of(*w) > rank_of(*top)) top = w;
  }
  const std::string vs = fmt::format("{} against {}", rank_str(*t->winner), rank_str(*top));
  if (rank_of(*t->winner) > rank_of(*top)) {
    f.outcome = "fused";
    f.detail = vs + ": the fused provider ranks above every step it replaces";
  } else if (rank_of(*t->winner) == rank_of(*top)) {
    f.outcome = "tie";
    f.detail = vs + ": level";
    f.decision.message = fmt::format(
        "resolution fault [fusion_tie]: nodes {} (phase {})\n  fused contract {}: {}\n"
        "  hint: a fused provider must rank above or below the providers it would replace; "
        "give it a distinct priority",
        span_label(g, f.node, f.span), phase_name(d.query.phase), d.contract, f.detail);
  } else {
    f.outcome = "outranked";
    f.detail = vs + ": a step it would replace ranks higher; the nodes keep theirs";
  }
}

}  // namespace

void fuse(const Graph& graph, const Registry& registry, const HostCaps& caps,
          const ResolveOptions& options, const Decision* decisions,
          std::vector<std::optional<Step>>* steps, Resolution* res) {
  std::vector<const Contract*> fused;
  for (const Contract& c : registry.contracts())
    if (!c.composes.empty()) fused.push_back(&c);
  const size_t n = steps->size();
  for (size_t i = 0; i < n;) {
    std::vector<Tried> tried;
    for (const Contract* c : fused) {
      const size_t span = c->composes.size();
      if (i + span > n) continue;
      bool stages = true;
      for (size_t s = 0; s < span && stages; ++s)
        stages = (*steps)[i + s].has_value() && (*steps)[i + s]->span == 1 &&
                 decisions[i + s].contract == c->composes[s].contract;
      if (!stages) continue;
      // The pattern's query in this phase, and with T free (a decode winner's batch_args):
      // both must be the pattern.
      const Phase phase = decisions[i].query.phase;
      const std::optional<Query> q = pattern_query(graph, *c, i, phase),
                                 q_free = pattern_query(graph, *c, i, Phase::Prefill);
      if (!q || !q_free) continue;
      Tried t;
      t.fusion.node = i;
      t.fusion.span = span;
      t.fusion.decision = decide_query(
          graph, registry, caps, options,
          [&](Phase p) { return p == Phase::Prefill ? *q_free : *q; }, phase, &t.step);
      judge(graph, registry, decisions, &t);
      tried.push_back(std::move(t));
    }
    // The best fused match at i; two level at the top are a tie (nothing fuses there).
    Tried* best = nullptr;
    int level = 0;
    for (Tried& t : tried) {
      if (t.fusion.outcome != "fused") continue;
      if (!best || rank_of(*t.winner) > rank_of(*best->winner)) {
        best = &t;
        level = 1;
      } else if (rank_of(*t.winner) == rank_of(*best->winner)) {
        ++level;
      }
    }
    size_t next = i + 1;
    for (Tried& t : tried) {
      if (t.fusion.outcome == "fused" && level > 1 &&
          rank_of(*t.winner) == rank_of(*best->winner)) {
        t.fusion.outcome = "tie";
        t.fusion.detail =
            fmt::format("{} is level with another fused contract's provider at the same nodes",
                        rank_str(*t.winner));
        t.fusion.decision.message = fmt::format(
            "resolution fault [fusion_tie]: nodes {} (phase {})\n  fused contract {}: {}\n"
            "  hint: give the fused providers distinct priorities",
            span_label(graph, i, t.fusion.span), phase_name(decisions[i].query.phase),
            t.fusion.decision.contract, t.fusion.detail);
      } else if (&t == best) {
        t.step->span = t.fusion.span;
        (*steps)[i] = std::move(t.step);
        for (size_t k = i + 1; k < i + t.fusion.span; ++k) (*steps)[k].reset();
        next = i + t.fusion.span;
      } else if (t.fusion.outcome == "fused") {
        t.fusion.outcome = "outranked";
        t.fusion.detail +=
            fmt::format("; the fused provider {} ranks higher at these nodes", best->winner->id);
      }
      if (t.fusion.outcome != "fused" && t.fusion.outcome != "outranked" &&
          t.fusion.outcome != "no_provider")
        res->fusion_faults.push_back(res->fusions.size());
      res->fusions.push_back(std::move(t.fusion));
    }
    i = next;
  }
}

}  // namespace cke
