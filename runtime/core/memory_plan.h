// The activation arena: liveness-based placement of every buffer version.
//
// Steps run in a fixed order. Each write to an activation buffer starts a new *version*
// that lives until its last read before the next write (an in-place read-write extends the
// current version). Versions get offsets by first-fit in an arena so that two versions
// that are live at the same time never overlap. Offsets are per (step, port): the same
// circuit buffer may sit at different addresses in different layers — the glue bakes each
// step's addresses in as constants anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cke {

struct BufferUse {
  std::string buffer;  // activation buffer name
  bool reads = false;
  bool writes = false;
  size_t bytes = 0;  // size of the buffer (same for every use of a name)
};

struct MemoryPlan {
  size_t arena_bytes = 0;
  // offsets[s][u]: offset of uses[s][u] in the arena.
  std::vector<std::vector<size_t>> offsets;
  size_t n_versions = 0;
};

// `uses[s]` lists the buffers step s touches. A read of a buffer never written before is
// an input that must live from the start (e.g. the caller fills it); `live_out` names
// buffers whose last version must survive the last step (e.g. logits).
MemoryPlan plan_memory(const std::vector<std::vector<BufferUse>>& uses,
                       const std::vector<std::string>& live_out, size_t alignment = 64);

}  // namespace cke
