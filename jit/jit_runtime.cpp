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
  static const char* dump_dir = std::getenv("CKE_JIT_DUMP");
  if (!enabled && !(dump_dir && *dump_dir)) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (dump_dir && *dump_dir) {
    // Raw machine code, for `objdump -D -b binary -mi386:x86-64 DIR/NAME.bin`.
    const std::string path = std::string(dump_dir) + "/" + name + ".bin";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(addr, 1, size, f);
      std::fclose(f);
    }
  }
  if (!enabled) return;
  char path[64];
  std::snprintf(path, sizeof path, "/tmp/perf-%d.map", int(getpid()));
  if (FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)addr, size, name.c_str());
    std::fclose(f);
  }
}

}  // namespace cke::jit
