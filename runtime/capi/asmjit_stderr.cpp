// Debian's libasmjit.a is compiled as position-independent *executable* code: its
// DebugUtils read glibc's `stderr` pointer PC-relative, which a shared object cannot do with
// a variable of another library. libcke.so links with --wrap=stderr (CMakeLists.txt): every
// read of `stderr` in the library reads this copy instead, a hidden variable of its own,
// filled from the real one when the library loads, before any other initializer runs.
#include <cstdio>

extern "C" {
extern FILE* __real_stderr;
FILE* __wrap_stderr = nullptr;
}

namespace {
__attribute__((constructor(101))) void take_stderr() {
  __wrap_stderr = __real_stderr;
}
}  // namespace
