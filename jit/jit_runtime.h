// Our one layer over asmjit's runtime: a process-wide JitRuntime, error text, and perf-map
// registration (so `perf report` names JIT code by provider id).
#pragma once

#include <asmjit/x86.h>

#include <string>

namespace cke::jit {

asmjit::JitRuntime& runtime();
std::string error_text(asmjit::Error e);
// Appends "<addr> <size> <name>" to /tmp/perf-<pid>.map when CKE_PERF_MAP=1, and writes the
// code's bytes to $CKE_JIT_DUMP/<name>.bin when CKE_JIT_DUMP names a directory.
void register_perf_symbol(const void* addr, size_t size, const std::string& name);

// Debian 12 ships the 2022 asmjit snapshot (1.9); newer asmjit renamed parts of the
// Compiler API this layer uses. Fail the build clearly rather than mis-compile.
static_assert(ASMJIT_LIBRARY_VERSION >= 0x010900, "asmjit >= 1.9 required");

}  // namespace cke::jit
