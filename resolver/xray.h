// X-Ray: the resolver's decisions as versioned JSON (schema cke.xray/1, docs/xray.md).
//
// Every decision lists the query, every candidate with the stage it reached, its verdict,
// reason code and detail, its ranking key, and the winner; the header records the host
// caps, the options, and the provenance (sha256) of every map, contract and circuit used.
// The output is a pure function of its inputs: no clock, no host name, sorted ids.
#pragma once

#include <nlohmann/json.hpp>

#include "resolver/graph.h"
#include "resolver/host_caps.h"
#include "resolver/registry.h"
#include "resolver/resolve.h"

namespace cke {

inline constexpr const char* kXraySchema = "cke.xray/1";

nlohmann::json xray_trace(const Resolution& res, const Graph& graph, const Registry& registry,
                          const HostCaps& caps, const ResolveOptions& options);

// One decision (as in the trace's "decisions" array).
nlohmann::json xray_decision(const Decision& d, const Graph& graph, const HostCaps& caps);

}  // namespace cke
