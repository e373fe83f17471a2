// Heap settings for a process that compiles a model (the CLI tools call it first thing in
// main; an application embedding the engine may call it too, or set the same through
// GLIBC_TUNABLES: glibc.malloc.hugetlb=1, glibc.malloc.mmap_threshold, .trim_threshold).
//
// Why. A compile allocates and frees tens of MiB in small pieces (the registry, the graph,
// asmjit's zones for every kernel), and on a virtual machine a first touch of a 4 KiB page
// costs several microseconds: a 1.1B model's compile took 5600 page faults, a quarter of
// its time. With glibc's defaults the larger blocks go to mmap and back to the kernel on
// free, and are faulted in again by the next kernel. So:
//  - blocks up to 64 MiB come from the heap and freed memory stays there (up to 256 MiB),
//    so the next allocation reuses pages already faulted in;
//  - where transparent huge pages are on `madvise`, 32 MiB of the heap are advised huge:
//    one fault maps 2 MiB (the main thread's arena; TBB workers keep their own arenas, as a
//    single arena made the parallel resolve wait on its lock: 5-6 -> 12-13 ms).
// Measured (AMD EPYC Zen 5, 2 vCPU, TinyLlama-1.1B Q4_0, cke-run, 6-8 runs each): a compile
// without repacks took 5600 page faults, with these settings 700-840; compile 80-108 ms
// (median 83) -> 45-53.
// The memory is glibc's to reuse: nothing is reserved that a later allocation does not use.
#pragma once

namespace cke {

// Idempotent and thread-safe; does nothing on a libc other than glibc.
void tune_process_heap();

}  // namespace cke
