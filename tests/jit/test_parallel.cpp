#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/exec/parallel.h"

namespace cke {
namespace {

// The partition is a pure function: chunks tile [0, total), are aligned, and are balanced
// to within one aligned unit.
TEST(Partition, TilesAlignedAndBalanced) {
  for (int64_t total : {0, 1, 7, 64, 100, 172, 4096, 5633}) {
    for (int64_t align : {1, 4, 16, 64}) {
      for (int n : {1, 2, 3, 7}) {
        int64_t prev_end = 0, min_units = INT64_MAX, max_units = 0;
        for (int i = 0; i < n; ++i) {
          int64_t b, e;
          partition_chunk(total, align, n, i, &b, &e);
          EXPECT_EQ(b, prev_end);
          EXPECT_LE(b, e);
          if (e < total) {
            EXPECT_EQ(e % align, 0);
          }
          const int64_t units = (e - b + align - 1) / align;
          min_units = std::min(min_units, units);
          max_units = std::max(max_units, units);
          prev_end = e;
        }
        EXPECT_EQ(prev_end, total) << total << " " << align << " " << n;
        EXPECT_LE(max_units - min_units, 1);
      }
    }
  }
}

// The chunk count: one call for one thread, kChunksPerThread per thread, never more chunks
// than aligned units.
TEST(Partition, ChunkCount) {
  EXPECT_EQ(chunk_count(5632, 16, 1), 1);
  EXPECT_EQ(chunk_count(5632, 16, 2), 2 * kChunksPerThread);
  EXPECT_EQ(chunk_count(48, 16, 2), 3);
  EXPECT_EQ(chunk_count(0, 16, 2), 1);
  EXPECT_GE(kChunksPerThread, 1);
}

// The pool runs every chunk of the frozen partition exactly once, whichever thread claims
// it: the calls are partition_chunk(total, align, chunk_count(...), c) for every c.
std::mutex g_calls_mu;
std::vector<std::pair<int64_t, int64_t>> g_calls;
void record(const RunContext*, int64_t b, int64_t e) {
  std::lock_guard<std::mutex> lock(g_calls_mu);
  g_calls.emplace_back(b, e);
}

TEST(ThreadPool, RunsEachFrozenChunkOnce) {
  for (int n : {1, 2, 3}) {
    ThreadPool pool(n);
    for (int64_t total : {1, 17, 256, 5632}) {
      for (int64_t align : {1, 16}) {
        for (int rep = 0; rep < 20; ++rep) {
          g_calls.clear();
          pool.run(nullptr, record, total, align);
          std::sort(g_calls.begin(), g_calls.end());
          std::vector<std::pair<int64_t, int64_t>> want;
          const int chunks = total <= align ? 1 : chunk_count(total, align, n);
          for (int c = 0; c < chunks; ++c) {
            int64_t b, e;
            partition_chunk(total, align, chunks, c, &b, &e);
            if (b < e) want.emplace_back(b, e);
          }
          ASSERT_EQ(g_calls, want) << "threads " << n << " total " << total << " align " << align;
        }
      }
    }
  }
}

// A region runs every chunk of each of its tasks exactly once, each task cut by its own
// frozen partition: the calls are those of running the tasks one after another.
std::vector<std::pair<int, std::pair<int64_t, int64_t>>> g_region_calls;
template <int K>
void record_task(const RunContext*, int64_t b, int64_t e) {
  std::lock_guard<std::mutex> lock(g_calls_mu);
  g_region_calls.push_back({K, {b, e}});
}

TEST(ThreadPool, RegionRunsEachTasksFrozenChunksOnce) {
  const TaskFn fns[] = {record_task<0>, record_task<1>, record_task<2>, record_task<3>};
  const std::vector<std::vector<std::pair<int64_t, int64_t>>> regions = {
      {{2048, 16}, {256, 16}, {256, 16}},  // q, k, v of a decode
      {{16, 16}, {8, 16}},                 // two single-chunk tasks: run inline
      {{5632, 16}, {0, 16}, {17, 4}, {1, 1}},
  };
  for (int n : {1, 2, 3}) {
    ThreadPool pool(n);
    for (const auto& r : regions) {
      std::vector<ParallelTask> tasks;
      for (size_t k = 0; k < r.size(); ++k) tasks.push_back({fns[k], r[k].first, r[k].second});
      std::vector<std::pair<int, std::pair<int64_t, int64_t>>> want;
      for (size_t k = 0; k < r.size(); ++k) {
        const auto [total, align] = r[k];
        const int chunks = total <= align ? 1 : chunk_count(total, align, n);
        for (int c = 0; c < chunks; ++c) {
          int64_t b, e;
          partition_chunk(total, align, chunks, c, &b, &e);
          if (b < e) want.push_back({int(k), {b, e}});
        }
      }
      for (int rep = 0; rep < 20; ++rep) {
        g_region_calls.clear();
        RunContext ctx{};
        ctx.pool = &pool;
        cke_parallel_region(&ctx, tasks.data(), int64_t(tasks.size()));
        std::sort(g_region_calls.begin(), g_region_calls.end());
        ASSERT_EQ(g_region_calls, want) << "threads " << n << " tasks " << r.size();
      }
    }
  }
}

// A table longer than kMaxRegionTasks runs as consecutive regions: still every chunk once.
TEST(ThreadPool, RegionLongerThanTheMaximumRunsEveryTask) {
  ThreadPool pool(2);
  std::vector<ParallelTask> tasks(kMaxRegionTasks * 2 + 3, ParallelTask{record, 64, 16});
  g_calls.clear();
  RunContext ctx{};
  ctx.pool = &pool;
  cke_parallel_region(&ctx, tasks.data(), int64_t(tasks.size()));
  std::sort(g_calls.begin(), g_calls.end());
  std::vector<std::pair<int64_t, int64_t>> want;
  for (size_t k = 0; k < tasks.size(); ++k)
    for (int c = 0; c < chunk_count(64, 16, 2); ++c) {
      int64_t b, e;
      partition_chunk(64, 16, chunk_count(64, 16, 2), c, &b, &e);
      want.emplace_back(b, e);
    }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(g_calls, want);
}

}  // namespace
}  // namespace cke
