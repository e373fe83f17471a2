// The resolver's fusion pass over one phase (resolve.h, fused contracts in contract.h).
#pragma once

#include <optional>
#include <vector>

#include "resolver/resolve.h"

namespace cke {

// decisions / steps: the phase's per-node decisions and winners' steps, in graph order (one
// per node). Where a fused step wins, it takes the first node's slot (Step::span > 1) and
// the other nodes' slots are emptied. Every match goes to res->fusions; a tie also to
// res->fusion_faults.
void fuse(const Graph& graph, const Registry& registry, const HostCaps& caps,
          const ResolveOptions& options, const Decision* decisions,
          std::vector<std::optional<Step>>* steps, Resolution* res);

// The query of fused contract `c`'s pattern at nodes [node, node + stages) in `phase`: one
// port per fused port, taken from the stage node that binds it. nullopt when the nodes are
// not the pattern: two stage ports bound to one fused port name different buffers or
// shapes, or two nodes pass one param with different values.
std::optional<Query> pattern_query(const Graph& graph, const Contract& c, size_t node, Phase phase);

}  // namespace cke
