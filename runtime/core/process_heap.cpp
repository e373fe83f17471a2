#include "runtime/core/process_heap.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cke {
namespace {

constexpr size_t kHeapBlockMax = size_t(64) << 20;  // mmap threshold
constexpr size_t kHeapKeep = size_t(256) << 20;     // trim threshold
constexpr size_t kHugeAdvised = size_t(32) << 20;   // advised huge (below kHeapBlockMax: from brk)
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

bool thp_on_madvise() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.find("[madvise]") != std::string::npos;  // "[always]" needs no advice
}

}  // namespace

void tune_process_heap() {
#if defined(__GLIBC__)
  static std::once_flag once;  // the C API may be called from several threads
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, int(kHeapBlockMax));
    mallopt(M_TRIM_THRESHOLD, int(kHeapKeep));
    if (!thp_on_madvise()) return;
    // One block below the mmap threshold grows the heap (brk) by its size without touching it;
    // the advice covers its whole huge pages, and freeing it leaves the range to malloc.
    void* p = std::malloc(kHugeAdvised);
    if (!p) return;
    const uintptr_t b = (uintptr_t(p) + kHugePage - 1) & ~(kHugePage - 1),
                    e = (uintptr_t(p) + kHugeAdvised) & ~(kHugePage - 1);
    if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
    std::free(p);
  });
#endif
}

}  // namespace cke
