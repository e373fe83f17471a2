// Parallel regions: runs of consecutive parallel steps that are independent of each other.
//
// The glue runs a region's steps through one cke_parallel_region call (runtime/exec/
// parallel.h): their chunks share one fork/join and no thread waits for the others between
// them. Two steps may share a region only when neither writes memory the other reads or
// writes: then running them at once, in any interleaving, leaves the bits of running them
// in plan order. The test is on the memory itself, not on buffer names: the arena planner
// reuses the bytes of a buffer after its last read, so a step may write where the step
// before it read a buffer of another name (not independent, although no name is shared).
#pragma once

#include <cstddef>
#include <vector>

namespace cke {

struct PhasePlan;
struct Graph;

// One span of memory a step touches: arena bytes [begin, end), or a whole state buffer.
struct MemAccess {
  bool state = false;
  int buffer = -1;  // state: the graph buffer
  size_t begin = 0, end = 0;
  bool writes = false;
};

struct StepAccess {
  bool parallel = false;  // split into chunks through the pool (a region may hold it)
  std::vector<MemAccess> mem;
};

// with_previous[i]: step i runs in one region with step i - 1. A region grows while the next
// step is parallel, independent of every step already in it, and the region holds fewer than
// max_tasks steps.
std::vector<bool> parallel_regions(const std::vector<StepAccess>& steps, int max_tasks);

// Sets PlanStep::with_previous from the steps' ports (their access) and arena placement.
// Per-token steps (a batch plan's) never join a region.
void mark_parallel_regions(const Graph& graph, PhasePlan* p);

}  // namespace cke
