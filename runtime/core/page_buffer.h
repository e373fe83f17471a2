// AlignedBuf: the engine's weight copies, arena and KV state, and the weights the kernel
// benchmarks stream (bench/bench_jit_linear.cpp), so that those read memory in the pages
// the plan's kernels read.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

namespace cke {

// Zeroed, page-aligned memory from a fresh anonymous mapping: the kernel hands out zero
// pages as they are first touched, so a 4096-cell KV cache costs nothing until used (no
// memset of every page at load).
//
// `whole`: memory that is written whole at once, by several threads (the repacked weights).
// A page fault per 4 KiB costs more than the page itself on a virtual machine (2.5 s of
// faults for 1.1 GiB measured), so it asks for transparent huge pages on a 2 MiB-aligned
// range and lets the writers fault them in parallel, 2 MiB a fault: 571 MiB took 120-160 ms
// against 300-1000 ms populated in 4 KiB pages (decode speed did not change measurably).
// Populating huge pages up front (MADV_POPULATE_WRITE) clears them on one thread: slower.
// A system without huge pages (THP "never") gets the old MAP_POPULATE.
struct AlignedBuf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit AlignedBuf(size_t n, bool whole = false) {
    bytes = std::max<size_t>(64, n);
    if (whole && bytes >= kHugePage && huge_pages_available()) {
      map_huge();
      return;
    }
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (whole ? MAP_POPULATE : 0), -1, 0);
    p = m == MAP_FAILED ? nullptr : m;
  }
  static constexpr size_t kHugePage = size_t(2) << 20;
  static bool huge_pages_available() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string s;
    std::getline(f, s);
    return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
  }
  // Over-maps by one huge page, keeps the aligned part and returns the rest.
  void map_huge() {
    const size_t n = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    void* m =
        mmap(nullptr, n + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    const uintptr_t b = uintptr_t(m), a = (b + kHugePage - 1) & ~(kHugePage - 1);
    if (a > b) munmap(m, a - b);
    munmap(reinterpret_cast<void*>(a + n), b + kHugePage - a);  // > 0: a - b < kHugePage
    p = reinterpret_cast<void*>(a);
    bytes = n;
    madvise(p, n, MADV_HUGEPAGE);  // advice: without it the writers still fault 4 KiB pages
  }
  ~AlignedBuf() {
    if (p) munmap(p, bytes);
  }
  AlignedBuf(const AlignedBuf&) = delete;
  AlignedBuf& operator=(const AlignedBuf&) = delete;
  AlignedBuf& operator=(AlignedBuf&& o) noexcept {
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    return *this;
  }
};

}  // namespace cke
