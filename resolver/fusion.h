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

}  // namespace cke
