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
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/exec/context.h"

namespace cke {

using TaskFn = void (*)(const RunContext* ctx, int64_t begin, int64_t end);
using StepFn = void (*)(const RunContext* ctx);

struct ThreadPool {
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  int n_threads() const { return n_threads_; }
  void run(const RunContext* ctx, TaskFn task, int64_t total, int64_t align);

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

// Called by the glue of a batched decode for each per-token step: runs `step` once per token
// b of ctx, in order, with a context of one token: pos0 = pos_of[b], n_tokens = 1, n_kv =
// pos0 + 1, seq = seq_of[b], out_first = b (the token's row), n_out = 1.
extern "C" void cke_for_each_token(const cke::RunContext* ctx, cke::StepFn step);
