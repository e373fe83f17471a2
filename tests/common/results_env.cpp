// Linked into every test binary: when CKE_TEST_RESULTS names a directory, this process
// writes its GoogleTest XML report there under a name of its own (pid and clock: ctest runs
// one process per test case, two at a time), for the audit to read (resolver/audit.h:
// a parity test counts only if it ran and did not fail). Runs before gtest_main reads
// GTEST_OUTPUT; an explicit GTEST_OUTPUT wins.
// It also points the registry snapshot cache (resolver/registry_snapshot.h) at the build
// tree's test-cache/ unless CKE_CACHE_DIR is set: tests load many map trees of their own,
// which are not the user's cache's business (the tools they start inherit it).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace {

const bool kResultsEnv = [] {
  const char* dir = std::getenv("CKE_TEST_RESULTS");
  if (!dir || !*dir || std::getenv("GTEST_OUTPUT")) return false;
  const auto ns = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string v = std::string("xml:") + dir + "/" + std::to_string(getpid()) + "_" +
                        std::to_string(ns) + ".xml";
  return setenv("GTEST_OUTPUT", v.c_str(), 1) == 0;
}();

const bool kCacheEnv = [] {
  return std::getenv("CKE_CACHE_DIR") == nullptr &&
         setenv("CKE_CACHE_DIR", CKE_TEST_CACHE_DIR, 0) == 0;
}();

}  // namespace
