#include "resolver/xray.h"

namespace cke {

using nlohmann::json;

namespace {

json value_json(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Int:
      return v.i;
    case Value::Kind::Float:
      return v.f;
    case Value::Kind::Tokens:
      return v.str();  // "T", "8*T"
  }
  return nullptr;
}

json shape_json(const std::vector<Value>& s) {
  json a = json::array();
  for (const Value& v : s) a.push_back(value_json(v));
  return a;
}

}  // namespace

json xray_decision(const Decision& d, const Graph& graph, const HostCaps& caps) {
  const Query& q = d.query;
  const GraphNode& n = graph.nodes[q.node];
  json ports = json::object();
  for (const QueryPort& p : q.ports)
    ports[p.name] = {{"dtype", dtype_name(p.dtype)},
                     {"shape", shape_json(p.shape)},
                     {"layout", p.layout},
                     {"buffer", graph.buffers[p.buffer].label()}};
  json params = json::object();
  for (const auto& [k, v] : q.params) params[k] = value_json(v);
  json query = {{"node", n.label()},    {"name", n.name},
                {"layer", n.layer},     {"op", q.op},
                {"variant", q.variant}, {"phase", phase_name(q.phase)},
                {"profile", q.profile}, {"ports", ports},
                {"params", params},     {"caps", caps.features.names()}};
  json cands = json::array();
  for (const Candidate& c : d.candidates)
    cands.push_back({{"id", c.id},
                     {"stage", stage_name(c.stage)},
                     {"verdict", c.winner     ? "selected"
                                 : c.eligible ? "eligible"
                                              : "rejected"},
                     {"reason", c.reason},
                     {"detail", c.detail},
                     {"rank_key", {lifecycle_rank(c.status), c.priority}},
                     {"status", status_name(c.status)}});
  json out = {{"query", query},
              {"contract", d.contract.empty() ? json(nullptr) : json(d.contract)},
              {"contract_matches", d.contract_matches},
              {"candidates", cands},
              {"winner", d.winner.empty() ? json(nullptr) : json(d.winner)},
              {"repacks", d.repacks},
              {"decode_batch", d.decode_batch}};
  if (!d.fault.empty())
    out["fault"] = {{"code", d.fault}, {"message", d.message}};
  else
    out["fault"] = nullptr;
  return out;
}

json xray_trace(const Resolution& res, const Graph& graph, const Registry& registry,
                const HostCaps& caps, const ResolveOptions& options) {
  json prov = json::array();
  prov.push_back({{"kind", "circuit"},
                  {"id", graph.architecture},
                  {"file", graph.circuit_file},
                  {"sha256", graph.circuit_sha256}});
  for (const Provenance& p : registry.provenance())
    prov.push_back({{"kind", p.kind}, {"id", p.id}, {"file", p.file}, {"sha256", p.sha256}});
  json phases = json::array();
  for (Phase p : options.phases) phases.push_back(phase_name(p));
  json decisions = json::array();
  for (const Decision& d : res.decisions) decisions.push_back(xray_decision(d, graph, caps));
  json fusions = json::array();
  for (const Fusion& f : res.fusions) {
    json nodes = json::array();
    for (size_t k = f.node; k < f.node + f.span; ++k) nodes.push_back(graph.nodes[k].label());
    fusions.push_back({{"nodes", nodes},
                       {"outcome", f.outcome},
                       {"detail", f.detail},
                       {"decision", xray_decision(f.decision, graph, caps)}});
  }
  return {{"schema", kXraySchema},
          {"architecture", graph.architecture},
          {"model",
           {{"n_layer", graph.n_layer}, {"n_ctx", graph.n_ctx}, {"max_tokens", graph.max_tokens}}},
          {"host",
           {{"origin", caps.origin},
            {"features", caps.features.names()},
            {"decode_stream_prefetch", caps.decode_stream_prefetch}}},
          {"options",
           {{"allow_candidate", options.allow_candidate},
            {"allow_repack", options.allow_repack},
            {"phases", phases}}},
          {"provenance", prov},
          {"decisions", decisions},
          {"fusions", fusions},
          {"ok", res.ok()},
          {"n_faults", res.faults.size() + res.fusion_faults.size()}};
}

}  // namespace cke
