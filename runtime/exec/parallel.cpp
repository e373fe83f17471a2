#include "runtime/exec/parallel.h"

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

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

struct ThreadPool::Impl {
  explicit Impl(int n) : arena(n) {}
  tbb::task_arena arena;
};

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), impl_(std::make_unique<Impl>(n_threads_)) {}
ThreadPool::~ThreadPool() = default;

void ThreadPool::run(const RunContext* ctx, TaskFn task, int64_t total, int64_t align) {
  if (n_threads_ == 1 || total <= align) {
    task(ctx, 0, total);
    return;
  }
  const int n = n_threads_;
  impl_->arena.execute([&] {
    // One task per chunk, chunks fixed by partition_chunk: simple_partitioner with grain 1
    // keeps TBB from merging or splitting them.
    tbb::parallel_for(
        tbb::blocked_range<int>(0, n, 1),
        [&](const tbb::blocked_range<int>& r) {
          for (int i = r.begin(); i < r.end(); ++i) {
            int64_t b, e;
            partition_chunk(total, align, n, i, &b, &e);
            if (b < e) task(ctx, b, e);
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
