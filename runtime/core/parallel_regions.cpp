#include "runtime/core/parallel_regions.h"

#include "runtime/core/plan.h"
#include "runtime/exec/parallel.h"

namespace cke {
namespace {

bool overlap(const MemAccess& a, const MemAccess& b) {
  if (a.state != b.state) return false;
  if (a.state) return a.buffer == b.buffer;
  return a.begin < b.end && b.begin < a.end;
}

bool independent(const StepAccess& a, const StepAccess& b) {
  for (const MemAccess& x : a.mem)
    for (const MemAccess& y : b.mem)
      if ((x.writes || y.writes) && overlap(x, y)) return false;
  return true;
}

}  // namespace

std::vector<bool> parallel_regions(const std::vector<StepAccess>& steps, int max_tasks) {
  std::vector<bool> with_previous(steps.size(), false);
  size_t first = 0;  // the current region: [first, i)
  for (size_t i = 0; i < steps.size(); ++i) {
    bool join = i > 0 && steps[i].parallel && steps[i - 1].parallel && int(i - first) < max_tasks;
    for (size_t k = first; join && k < i; ++k) join = independent(steps[k], steps[i]);
    with_previous[i] = join;
    if (!join) first = i;
  }
  return with_previous;
}

void mark_parallel_regions(const Graph& graph, PhasePlan* p) {
  std::vector<StepAccess> steps;
  for (const PlanStep& s : p->steps) {
    StepAccess sa;
    sa.parallel = s.split_total > 0 && !s.per_token;
    for (size_t a = 0; a < s.args.size(); ++a) {
      const PlanArg& x = s.args[a];
      if (x.kind != PlanArg::Kind::Arena && x.kind != PlanArg::Kind::State) continue;
      const PortSpec* port = s.provider->port(s.provider->call_abi[a].name);
      MemAccess m;
      m.writes = !port || port->access != Access::Read;  // unknown: as a write
      if (x.kind == PlanArg::Kind::State) {
        m.state = true;
        m.buffer = x.buffer;
      } else {
        m.begin = x.offset;
        m.end = x.offset + buffer_bytes(graph.buffers[size_t(x.buffer)], p->max_tokens);
      }
      sa.mem.push_back(m);
    }
    steps.push_back(std::move(sa));
  }
  const std::vector<bool> joins = parallel_regions(steps, kMaxRegionTasks);
  for (size_t i = 0; i < p->steps.size(); ++i) p->steps[i].with_previous = joins[i];
}

}  // namespace cke
