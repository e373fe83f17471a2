// Backends: the frozen plan of both phases rendered as code that Engine::eval calls. The
// plan is the one input (runtime/core/plan.h); a backend only lowers it.
//
//   jit         plan steps -> asmjit glue (addresses baked in)          jit_backend.cpp
//   emitted C   the plan's C (emit_c.h) compiled by the system C        emitted_backend.cpp
//               compiler, loaded, checked to be this plan, bound
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jit/glue.h"
#include "resolver/graph.h"
#include "runtime/core/emit_c.h"
#include "runtime/core/plan.h"

namespace cke {

// Where the plan's buffers live.
struct PlanMemory {
  const uint8_t* weights = nullptr;    // the GGUF file image
  std::vector<int64_t> weight_offset;  // per graph buffer: byte offset in `weights`, or -1
  uint8_t* arena = nullptr;
  std::vector<uint8_t*> state;             // per graph buffer: the state buffer, or null
  const uint8_t* repacked = nullptr;       // the repacked weights (plan_repacks), or null
  std::map<Repack, size_t> repack_offset;  // where each copy starts in `repacked`
  const uint8_t* weight(const PlanArg& a) const {
    return a.layout.empty() ? weights + weight_offset[size_t(a.buffer)]
                            : repacked + repack_offset.at({a.buffer, a.layout});
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual jit::GlueFn prefill() const = 0;
  virtual jit::GlueFn decode() const = 0;
  virtual jit::GlueFn batch() const = 0;  // null without a batch plan (one sequence)
};

// `batch` may be null (one sequence: no batch plan).
std::unique_ptr<Backend> make_jit_backend(const PhasePlan& prefill, const PhasePlan& decode,
                                          const PhasePlan* batch, const PlanMemory& memory,
                                          std::string* err);

// `emitted` is the C this plan emits (its flags are the compile flags); `dir` must hold the
// same plan (its cke_plan_sha256 must be `plan_sha256`), else an error says whose it is.
std::unique_ptr<Backend> load_emitted_c_backend(const std::string& dir, const EmittedC& emitted,
                                                const std::string& plan_sha256, const Graph& graph,
                                                const PlanMemory& memory, std::string* err);

}  // namespace cke
