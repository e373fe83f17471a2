#include "jit/jit_runtime.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace cke::jit {

asmjit::JitRuntime& runtime() {
  static asmjit::JitRuntime rt;
  return rt;
}

std::string error_text(asmjit::Error e) {
  return asmjit::DebugUtils::errorAsString(e);
}

void register_perf_symbol(const void* addr, size_t size, const std::string& name) {
  static const bool enabled = [] {
    const char* e = std::getenv("CKE_PERF_MAP");
    return e && e[0] == '1';
  }();
  if (!enabled) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/perf-%d.map", int(getpid()));
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)addr, size, name.c_str());
    std::fclose(f);
  }
}

}  // namespace cke::jit
