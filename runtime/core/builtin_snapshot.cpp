#include "runtime/core/builtin_snapshot.h"

// The bytes of the file cke-builtin-snapshot wrote at build time (resolver/CMakeLists.txt),
// included by the assembler; hidden, so libcke.so exports nothing more.
asm(".pushsection .rodata\n"
    ".balign 16\n"
    ".hidden cke_builtin_snapshot_begin\n"
    ".hidden cke_builtin_snapshot_end\n"
    "cke_builtin_snapshot_begin:\n"
    ".incbin \"" CKE_BUILTIN_SNAPSHOT
    "\"\n"
    "cke_builtin_snapshot_end:\n"
    ".popsection\n");

extern "C" const char cke_builtin_snapshot_begin[];
extern "C" const char cke_builtin_snapshot_end[];

namespace cke {

std::string_view builtin_registry_snapshot() {
  return {cke_builtin_snapshot_begin,
          static_cast<size_t>(cke_builtin_snapshot_end - cke_builtin_snapshot_begin)};
}

}  // namespace cke
