// Access to ../shared (test models, llama.cpp reference outputs) from tests.
//
// The location is CKE_SHARED (environment) or else the build's CKE_SHARED_DIR. Tests that
// need a file call CKE_REQUIRE_SHARED(path) which skips the test, saying which file is
// missing, when ../shared is not there. CI always has it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cke::test {

inline std::string shared_dir() {
  if (const char* e = std::getenv("CKE_SHARED")) return e;
  return CKE_SHARED_DIR;
}

inline std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }

inline std::string source_path(const std::string& rel) {
  return std::string(CKE_SOURCE_DIR) + "/" + rel;
}

}  // namespace cke::test

// Skips the current test when a shared file is absent; declares `var` with its full path.
#define CKE_REQUIRE_SHARED(var, rel)                                                  \
  const std::string var = ::cke::test::shared_path(rel);                             \
  if (!std::filesystem::exists(var)) {                                                \
    GTEST_SKIP() << "shared test data absent: " << var                                \
                 << " (set CKE_SHARED or place ../shared beside the repository)";     \
  }                                                                                   \
  static_assert(true)
