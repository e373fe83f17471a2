#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cke
