// --emit-c: the frozen plan rendered as one C translation unit plus a header.
//
// The glue becomes straight-line calls in plan order with literal dims; buffers become
// named offsets into the weight blob (the GGUF file image), the activation arena and the
// state (KV cache) buffers; every step carries a comment naming the graph node, the
// provider, its contract and why it won. Ahead-of-time providers are called by their
// symbol (the same id as the map, the trace and the test). A provider implemented by a JIT
// generator would have to render itself as C; none can yet, so emission fails closed and
// names it rather than substitute another kernel.
//
// The output depends only on the plan (model, host caps, flags): no addresses, no time.
#pragma once

#include <string>

#include "resolver/graph.h"
#include "resolver/resolve.h"
#include "runtime/core/plan.h"

namespace cke {

struct EmitInput {
  const Graph* graph;
  const Resolution* res;
  const PhasePlan* prefill;
  const PhasePlan* decode;
  // Byte offset of each weight buffer in the weight blob (Graph::buffers index; -1 if not a
  // weight).
  std::vector<int64_t> weight_offset;
  // State slot of each state buffer (Graph::buffers index; -1 if not state).
  std::vector<int> state_slot;
  int n_state = 0;
  std::string plan_sha256;
  std::string model_name;  // for the header comment
};

struct EmittedC {
  std::string header;  // cke_plan.h
  std::string source;  // cke_plan.c
};

bool emit_c(const EmitInput& in, EmittedC* out, std::string* err);

// Writes cke_plan.h / cke_plan.c into `dir` (created if needed).
bool write_emitted_c(const EmittedC& c, const std::string& dir, std::string* err);

}  // namespace cke
