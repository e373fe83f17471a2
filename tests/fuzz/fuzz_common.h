// Helpers shared by the libFuzzer targets of tests/fuzz (docs/fuzzing.md).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace cke::fuzz {

// A broken invariant is a crash libFuzzer reports (with the input), in every build mode.
#define FUZZ_CHECK(c)                                                                  \
  do {                                                                                 \
    if (!(c)) {                                                                        \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
      __builtin_trap();                                                                \
    }                                                                                  \
  } while (0)

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// CKE_FUZZ_DEBUG=1 prints why each input was rejected (to check that seeds load).
inline bool debug() {
  static const bool on = [] {
    const char* e = std::getenv("CKE_FUZZ_DEBUG");
    return e && *e && std::string_view(e) != "0";
  }();
  return on;
}

// A scratch directory of this process (/tmp/cke-fuzz-<target>-<pid>), created on first use
// and removed at exit, for loaders that only read files.
inline const std::filesystem::path& scratch_dir(const char* target) {
  struct Dir {
    std::filesystem::path path;
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir d = [target] {
    Dir x;
    x.path = std::filesystem::temp_directory_path() /
             ("cke-fuzz-" + std::string(target) + "-" + std::to_string(getpid()));
    std::filesystem::create_directories(x.path);
    return x;
  }();
  return d.path;
}

// Writes `bytes` to `path` (replacing it); false if it cannot.
inline bool write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace cke::fuzz
