// tune_process_heap (runtime/core/process_heap.h): blocks below 64 MiB come from glibc's
// heap, and freed memory stays there for the next allocation.
#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/core/process_heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // ASan's allocator replaces glibc's: nothing to observe
#else
constexpr bool kSanitized = false;
#endif

// 48 MiB: above glibc's largest dynamic mmap threshold (32 MiB on 64-bit), so with its
// defaults this block is always mmapped and unmapped on free, whatever ran before.
constexpr size_t kBlock = size_t(48) << 20;

TEST(ProcessHeap, LargeBlocksComeFromTheHeapAndStayThere) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "not glibc";
#else
  if (kSanitized) GTEST_SKIP() << "built with ASan: its allocator, not glibc's";
  cke::tune_process_heap();
  cke::tune_process_heap();  // idempotent
  const struct mallinfo2 before = mallinfo2();
  void* p = std::malloc(kBlock);
  ASSERT_NE(p, nullptr);
  static_cast<volatile char*>(p)[0] = 1;
  const struct mallinfo2 during = mallinfo2();
  EXPECT_EQ(during.hblks, before.hblks)
      << "a 48 MiB block was mmapped: the mmap threshold was not raised";
  EXPECT_GE(during.arena, kBlock) << "the heap does not hold the block";
  std::free(p);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_EQ(after.arena, during.arena)
      << "the heap gave memory back on free: the trim threshold was not raised";
  EXPECT_GE(after.fordblks, kBlock) << "the freed block is not the heap's to reuse";
#endif
}

}  // namespace
