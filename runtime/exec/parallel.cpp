#include "runtime/exec/parallel.h"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>

namespace cke {

void partition_chunk(int64_t total, int64_t align, int n, int i, int64_t* begin, int64_t* end) {
  if (align < 1) align = 1;
  const int64_t units = (total + align - 1) / align;  // aligned units to share out
  const int64_t base = units / n, extra = units % n;
  const int64_t u0 = i * base + (i < extra ? i : extra);
  const int64_t u1 = u0 + base + (i < extra ? 1 : 0);
  *begin = u0 * align < total ? u0 * align : total;
  *end = u1 * align < total ? u1 * align : total;
}

int chunk_count(int64_t total, int64_t align, int n_threads) {
  if (n_threads <= 1 || total <= 0) return 1;
  if (align < 1) align = 1;
  const int64_t units = (total + align - 1) / align;
  const int64_t want = int64_t(n_threads) * kChunksPerThread;
  return int(units < want ? units : want);
}

struct ThreadPool::Impl {
  explicit Impl(int n) : arena(n) {}
  tbb::task_arena arena;
};

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), impl_(std::make_unique<Impl>(n_threads_)) {}
ThreadPool::~ThreadPool() = default;

void ThreadPool::run(const RunContext* ctx, TaskFn task, int64_t total, int64_t align) {
  const ParallelTask t{task, total, align};
  run_region(ctx, &t, 1);
}

void ThreadPool::run_region(const RunContext* ctx, const ParallelTask* tasks, int n) {
  for (; n > kMaxRegionTasks; n -= kMaxRegionTasks, tasks += kMaxRegionTasks)
    run_region(ctx, tasks, kMaxRegionTasks);  // a longer table: regions one after another
  // first[i]: the region's index of task i's first chunk; first[n]: all chunks.
  int first[kMaxRegionTasks + 1];
  first[0] = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t total = tasks[i].total, align = tasks[i].align;
    first[i + 1] = first[i] + (total <= align ? 1 : chunk_count(total, align, n_threads_));
  }
  const int chunks = first[n];
  if (n_threads_ == 1 || chunks == n) {
    for (int i = 0; i < n; ++i)
      if (tasks[i].total > 0) tasks[i].task(ctx, 0, tasks[i].total);
    return;
  }
  std::atomic<int> next{0};
  impl_->arena.execute([&] {
    // One claiming loop per thread (simple_partitioner, grain 1: TBB neither merges nor
    // splits them); a loop whose thread starts late finds fewer chunks left.
    tbb::parallel_for(
        tbb::blocked_range<int>(0, n_threads_, 1),
        [&](const tbb::blocked_range<int>&) {
          int i = 0;  // the task of chunk c: chunks are claimed in increasing order
          for (int c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
               c = next.fetch_add(1, std::memory_order_relaxed)) {
            while (c >= first[i + 1]) ++i;
            const ParallelTask& t = tasks[i];
            int64_t b, e;
            partition_chunk(t.total, t.align, first[i + 1] - first[i], c - first[i], &b, &e);
            if (b < e) t.task(ctx, b, e);
          }
        },
        tbb::simple_partitioner());
  });
}

}  // namespace cke

extern "C" void cke_parallel_for(const cke::RunContext* ctx, cke::TaskFn task, int64_t total,
                                 int64_t align) {
  ctx->pool->run(ctx, task, total, align);
}

extern "C" void cke_parallel_region(const cke::RunContext* ctx, const cke::ParallelTask* tasks,
                                    int64_t n) {
  ctx->pool->run_region(ctx, tasks, int(n));
}

extern "C" void cke_for_each_token(const cke::RunContext* ctx, cke::StepFn step) {
  for (int64_t b = 0; b < ctx->n_tokens; ++b) {
    cke::RunContext one = *ctx;
    one.pos0 = ctx->pos_of[b];
    one.n_tokens = 1;
    one.n_kv = one.pos0 + 1;
    one.seq = ctx->seq_of[b];
    one.out_first = b;
    one.n_out = 1;
    step(&one);
  }
}
