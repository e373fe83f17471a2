#include "runtime/core/memory_plan.h"

#include <algorithm>
#include <map>

namespace cke {

MemoryPlan plan_memory(const std::vector<std::vector<BufferUse>>& uses,
                       const std::vector<std::string>& live_out, size_t alignment) {
  struct Version {
    size_t bytes, first, last;
    size_t offset = 0;
  };
  std::vector<Version> versions;
  std::map<std::string, size_t> current;  // buffer -> live version
  std::vector<std::vector<size_t>> version_of(uses.size());
  const size_t n_steps = uses.size();

  for (size_t s = 0; s < n_steps; ++s) {
    for (const BufferUse& u : uses[s]) {
      auto it = current.find(u.buffer);
      size_t v;
      if (u.writes && !u.reads) {
        v = versions.size();  // a fresh value
        versions.push_back({u.bytes, s, s});
        current[u.buffer] = v;
      } else if (it == current.end()) {
        v = versions.size();  // read before any write: an input, live from the start
        versions.push_back({u.bytes, 0, s});
        current[u.buffer] = v;
      } else {
        v = it->second;
        versions[v].last = s;
      }
      version_of[s].push_back(v);
    }
  }
  for (const std::string& name : live_out) {
    auto it = current.find(name);
    if (it != current.end()) versions[it->second].last = n_steps;
  }
  // Two versions of one step must not share memory even if one ends and one starts there
  // (a kernel reads its inputs while writing its outputs): intervals are closed.
  auto round_up = [&](size_t x) { return (x + alignment - 1) / alignment * alignment; };
  std::vector<size_t> order(versions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Place big, long-lived versions first (deterministic tie-break on index).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (versions[a].bytes != versions[b].bytes) return versions[a].bytes > versions[b].bytes;
    return a < b;
  });
  std::vector<size_t> placed;
  size_t arena = 0;
  for (size_t vi : order) {
    Version& v = versions[vi];
    std::vector<std::pair<size_t, size_t>> busy;  // [start, end) taken during v's life
    for (size_t pj : placed) {
      const Version& p = versions[pj];
      if (p.first <= v.last && v.first <= p.last)
        busy.push_back({p.offset, p.offset + round_up(p.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    size_t off = 0;
    for (auto [b, e] : busy) {
      if (off + round_up(v.bytes) <= b) break;
      off = std::max(off, e);
    }
    v.offset = off;
    arena = std::max(arena, off + round_up(v.bytes));
    placed.push_back(vi);
  }
  MemoryPlan plan;
  plan.arena_bytes = arena;
  plan.n_versions = versions.size();
  plan.offsets.resize(n_steps);
  for (size_t s = 0; s < n_steps; ++s)
    for (size_t v : version_of[s]) plan.offsets[s].push_back(versions[v].offset);
  return plan;
}

}  // namespace cke
