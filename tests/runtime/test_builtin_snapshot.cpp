// The built-in registry snapshot linked into cke_runtime (runtime/core/builtin_snapshot.h) is
// the build's tree as its parser reads it: a load of the tree reads it and gets what parsing
// the tree gets, value for value, with the tree's paths.
#include <gtest/gtest.h>

#include <cstdlib>

#include "resolver/data_dirs.h"
#include "resolver/registry.h"
#include "resolver/registry_snapshot.h"
#include "runtime/core/builtin_snapshot.h"

namespace cke {
namespace {

TEST(BuiltinSnapshot, IsTheParseOfTheBuildsTree) {
  ASSERT_EQ(setenv("CKE_CACHE_DIR", "off", 1), 0);
  ASSERT_FALSE(builtin_registry_snapshot().empty()) << "the build's maps did not parse";
  const std::vector<std::filesystem::path> dirs = {compiled_data_dir() / "kernel_maps"};
  std::vector<LoadError> errors;
  auto builtin = Registry::load(dirs, linked_symbols(), &errors, builtin_registry_snapshot());
  ASSERT_TRUE(builtin) << format_errors(errors);
  EXPECT_EQ(builtin->loaded_from(), "built-in snapshot")
      << "kernel_maps/ changed after the build (rebuild to refresh the built-in snapshot)";
  auto parsed = Registry::load(dirs, linked_symbols(), &errors);
  ASSERT_TRUE(parsed) << format_errors(errors);
  EXPECT_EQ(parsed->loaded_from(), "parse");
  ASSERT_EQ(builtin->maps().size(), parsed->maps().size());
  for (size_t i = 0; i < parsed->maps().size(); ++i)
    EXPECT_TRUE(builtin->maps()[i] == parsed->maps()[i]) << parsed->maps()[i].id;
  ASSERT_EQ(builtin->contracts().size(), parsed->contracts().size());
  for (size_t i = 0; i < parsed->contracts().size(); ++i)
    EXPECT_TRUE(builtin->contracts()[i] == parsed->contracts()[i]) << parsed->contracts()[i].id;
  unsetenv("CKE_CACHE_DIR");
}

}  // namespace
}  // namespace cke
