// Frozen parallel partitions for plan steps.
//
// A parallel step splits one dimension [0, total) into chunk_count(total, align, n_threads)
// contiguous chunks whose boundaries are multiples of `align` (the provider's minimum chunk).
// The partition depends only on (total, align, n_threads), never on timing, and each chunk is
// computed by exactly one kernel call: with providers whose rows are independent, the result
// is the same bits for every thread count.
//
// Which thread runs which chunk is not frozen: the threads claim chunks in order from one
// counter. On a shared host the two vCPUs of one process run at different speeds from minute
// to minute (a 2-vCPU Xeon measured 64 and 100 GMAC/s on the same loop at once), and one
// chunk per thread ran every step at the slower one's pace; kChunksPerThread chunks let the
// faster thread take more of them. The bits cannot tell: a chunk's code and boundaries are
// the same whichever thread runs it.
//
// A parallel region is several consecutive steps the plan found independent (none reads or
// writes what another writes; plan.h): their chunks, each step's own partition, go into one
// claiming loop, so the region costs one fork/join instead of one per step and a thread that
// finishes one step's chunks takes the next step's instead of waiting at a barrier. Each
// chunk is still the same call with the same boundaries: the same bits.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/exec/context.h"

namespace cke {

using TaskFn = void (*)(const RunContext* ctx, int64_t begin, int64_t end);
using StepFn = void (*)(const RunContext* ctx);

// One step of a parallel region: its task and its split [0, total) aligned to `align`.
// Layout shared with the glue and the emitted C (cke_parallel_task).
struct ParallelTask {
  TaskFn task;
  int64_t total;
  int64_t align;
};

// The most steps one region holds (the plan closes a region there).
constexpr int kMaxRegionTasks = 8;

struct ThreadPool {
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  int n_threads() const { return n_threads_; }
  void run(const RunContext* ctx, TaskFn task, int64_t total, int64_t align);
  // Runs every chunk of every task (a table longer than kMaxRegionTasks as consecutive
  // regions). When each task is one chunk at this thread count, they run in order on the
  // caller's thread: no fork for a few calls.
  void run_region(const RunContext* ctx, const ParallelTask* tasks, int n);

 private:
  int n_threads_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Chunks a step of n_threads is cut into: kChunksPerThread per thread, at most one per
// aligned unit (1 for one thread: a single call).
constexpr int kChunksPerThread = 4;
int chunk_count(int64_t total, int64_t align, int n_threads);

// Chunk i of n of [0, total), aligned: [begin, end). Exposed for tests and the emitted C.
void partition_chunk(int64_t total, int64_t align, int n, int i, int64_t* begin, int64_t* end);

}  // namespace cke

// Called by the glue (machine code and emitted C) for each parallel step.
extern "C" void cke_parallel_for(const cke::RunContext* ctx, cke::TaskFn task, int64_t total,
                                 int64_t align);

// Called by the glue (machine code and emitted C) for each parallel region of n > 1 steps.
extern "C" void cke_parallel_region(const cke::RunContext* ctx, const cke::ParallelTask* tasks,
                                    int64_t n);

// Called by the glue of a batched decode for each per-token step: runs `step` once per token
// b of ctx, in order, with a context of one token: pos0 = pos_of[b], n_tokens = 1, n_kv =
// pos0 + 1, seq = seq_of[b], out_first = b (the token's row), n_out = 1.
extern "C" void cke_for_each_token(const cke::RunContext* ctx, cke::StepFn step);
