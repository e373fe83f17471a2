// Parallel regions (runtime/core/parallel_regions.h): consecutive parallel steps share one
// region exactly when none writes memory another of the region touches.
#include <gtest/gtest.h>

#include "runtime/core/parallel_regions.h"

namespace cke {
namespace {

MemAccess arena(size_t begin, size_t end, bool writes) {
  MemAccess m;
  m.begin = begin;
  m.end = end;
  m.writes = writes;
  return m;
}
MemAccess state(int buffer, bool writes) {
  MemAccess m;
  m.state = true;
  m.buffer = buffer;
  m.writes = writes;
  return m;
}
StepAccess step(std::vector<MemAccess> mem, bool parallel = true) {
  return {parallel, std::move(mem)};
}

TEST(ParallelRegions, IndependentLinearsShareOne) {
  // q, k, v: the same input read by all three, three disjoint outputs; then a norm of q.
  const MemAccess x = arena(1000, 1100, false);
  const std::vector<bool> got = parallel_regions(
      {step({x, arena(0, 100, true)}), step({x, arena(100, 150, true)}),
       step({x, arena(150, 200, true)}), step({arena(0, 100, false), arena(0, 100, true)})},
      8);
  EXPECT_EQ(got, (std::vector<bool>{false, true, true, false}));
}

TEST(ParallelRegions, AWriteOverBytesAnotherReadsIsADependency) {
  // The second step writes where the first reads (another buffer's name at the same arena
  // bytes: the planner reused them after the first step's read).
  EXPECT_EQ(parallel_regions({step({arena(0, 64, false), arena(64, 128, true)}),
                              step({arena(200, 300, false), arena(32, 96, true)})},
                             8),
            (std::vector<bool>{false, false}));
  // Touching at an edge only is no overlap.
  EXPECT_EQ(parallel_regions({step({arena(0, 64, true)}), step({arena(64, 128, true)})}, 8),
            (std::vector<bool>{false, true}));
}

TEST(ParallelRegions, StateBuffersCompareByBuffer) {
  // kv_store writes the cache attention reads; two layers' caches are independent.
  EXPECT_EQ(parallel_regions({step({state(3, true)}), step({state(3, false)})}, 8),
            (std::vector<bool>{false, false}));
  EXPECT_EQ(parallel_regions({step({state(3, true)}), step({state(4, true)})}, 8),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(parallel_regions({step({state(3, false)}), step({state(3, false)})}, 8),
            (std::vector<bool>{false, true}));
}

TEST(ParallelRegions, EveryStepOfTheRegionCounts) {
  // The third step is independent of the second but reads what the first writes: it
  // starts a new region, which the fourth joins.
  EXPECT_EQ(parallel_regions(
                {step({arena(0, 64, true)}), step({arena(64, 128, true)}),
                 step({arena(0, 64, false), arena(200, 264, true)}), step({arena(300, 364, true)})},
                8),
            (std::vector<bool>{false, true, false, true}));
}

TEST(ParallelRegions, SerialStepsAndTheMaximumCloseARegion) {
  EXPECT_EQ(parallel_regions({step({arena(0, 64, true)}), step({arena(64, 128, true)}, false),
                              step({arena(128, 192, true)})},
                             8),
            (std::vector<bool>{false, false, false}));
  std::vector<StepAccess> five;
  for (size_t i = 0; i < 5; ++i) five.push_back(step({arena(64 * i, 64 * i + 64, true)}));
  EXPECT_EQ(parallel_regions(five, 2), (std::vector<bool>{false, true, false, true, false}));
}

}  // namespace
}  // namespace cke
