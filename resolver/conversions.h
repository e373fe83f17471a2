// Conversion steps: where a contract takes a port in another dtype than the circuit's edge
// carries (`convert: {x: {from: f32, via: act_quant.q8_0.ggml}}`: a q4_0 linear reads Q8_0
// activations, as ggml converts a matmul's activations to the weight's vec_dot type), the
// graph gets an explicit node of op `via`'s op computing the converted buffer, and the
// consumer reads that buffer. The conversion is then an ordinary plan step: resolved,
// traced, tested and rendered like any other, computed once per chunk, and shared.
//
// Sharing: consecutive consumers of the same source buffer through the same conversion
// contract (q/k/v on the normed input; gate/up) read one converted buffer. A run ends at
// any other node that names the source buffer (it may write it), so a later consumer gets
// a fresh conversion of the new contents.
//
// Which contract a node gets is derived as the resolver derives it (op, variant, profile,
// port dtypes, `when`), a converted port matching through its `from` dtype; exactly one
// contract must match, or the node is left as is and the resolver reports the fault.
#pragma once

#include <vector>

#include "resolver/graph.h"
#include "resolver/load_error.h"
#include "resolver/registry.h"

namespace cke {

// Rewrites `graph` in place. False + errors when two contracts, one converting, both
// match a node (the data would be ambiguous).
bool insert_conversions(Graph* graph, const Registry& registry, std::vector<LoadError>* errors);

}  // namespace cke
