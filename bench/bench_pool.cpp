// The thread pool's cost per parallel step: a fork/join of n threads over a task that does
// almost nothing, so the time is the pool's (claiming chunks, waking and joining threads).
// A decode plan makes about 8 of these per layer; compare against a step's kernel time.
#include <benchmark/benchmark.h>

#include <atomic>

#include "runtime/exec/parallel.h"

namespace {

std::atomic<int64_t> g_sink{0};

void touch(const cke::RunContext*, int64_t begin, int64_t end) {
  g_sink.fetch_add(end - begin, std::memory_order_relaxed);
}

void BM_pool_fork_join(benchmark::State& st) {
  cke::ThreadPool pool(int(st.range(0)));
  cke::RunContext ctx{};
  ctx.pool = &pool;
  for (auto _ : st) cke_parallel_for(&ctx, touch, 2048, 16);
  st.counters["steps/s"] = benchmark::Counter(double(st.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_pool_fork_join)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
