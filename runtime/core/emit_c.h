// --emit-c: the frozen plan rendered as one C translation unit plus a header.
//
// The glue becomes straight-line calls in plan order with literal dims; buffers become
// named offsets into the weight blob (the GGUF file image), the activation arena and the
// state (KV cache) buffers; every step carries a comment naming the graph node, the
// provider, its contract and why it won. Ahead-of-time providers are called by their
// symbol (the same id as the map, the trace and the test). A provider implemented by a
// generator renders its KIR as C into cke_kernels.c (the same description the JIT lowers to
// machine code), compiled with emitted_c_flags(); if it cannot, emission fails closed and
// names it rather than substitute another kernel.
//
// The output depends only on the plan (model, host caps, flags): no addresses, no time.
#pragma once

#include <map>
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
  const PhasePlan* batch = nullptr;  // several sequences: the batched decode (cke_plan_batch)
  // Byte offset of each weight buffer in the weight blob (Graph::buffers index; -1 if not a
  // weight).
  std::vector<int64_t> weight_offset;
  // State slot of each state buffer (Graph::buffers index; -1 if not state).
  std::vector<int> state_slot;
  // Byte offset of each repacked weight in the repacked blob (R).
  std::map<Repack, size_t> repack_offset;
  int n_state = 0;
  std::string plan_sha256;
  std::string model_name;       // for the header comment
  bool decode_prefetch = true;  // HostCaps::decode_stream_prefetch (jit::plan_params)
};

struct EmittedC {
  std::string header;          // cke_plan.h
  std::string source;          // cke_plan.c
  std::string kernels_header;  // cke_kernels.h: prototypes of the generated kernels
  std::string kernels;         // cke_kernels.c: their C, rendered from KIR
  std::string kernel_flags;    // the -m flags of the CPU features those kernels use
  bool has_batch = false;      // cke_plan_batch is defined
};

// The flags the emitted C is compiled with: jit::kir::kCNumericsFlags and the kernels' -m
// flags (also written into cke_kernels.c's header comment).
std::string emitted_c_flags(const EmittedC& c);

bool emit_c(const EmitInput& in, EmittedC* out, std::string* err);

// Writes cke_plan.h/.c and cke_kernels.h/.c into `dir` (created if needed).
bool write_emitted_c(const EmittedC& c, const std::string& dir, std::string* err);

}  // namespace cke
