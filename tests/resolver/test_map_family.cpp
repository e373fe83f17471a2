// Kernel map families (resolver/map_family.cpp): a template and an instance table expand
// into maps named "<file>:<line>"; every malformed family is an error naming file and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "resolver_test_util.h"

namespace cke::test {
namespace {

namespace fs = std::filesystem;

const char* kFamily =
    "schema: cke.kernel_map_family/1\n"
    "family: fam\n"
    "template: |\n"
    "  id: ${id}\n"
    "  op: linear\n"
    "  interface: linear.row_major_weight.v1\n"
    "  contract: linear.q4_0.t\n"
    "  selection: {status: production, priority: ${prio}, phases: [prefill, decode]}\n"
    "  requires: {isa: [], shape: []}\n"
    "  ports:\n"
    "    inputs: {x: {dtype: f32, shape: [K, T]}}\n"
    "    weights: {w: {dtype: q4_0, shape: [K, N]}}\n"
    "    outputs: {y: {dtype: f32, shape: [N, T]}}\n"
    "  impl: {function: ${id}}\n"
    "  call_abi: [input:x, weight:w, output:y, dim:K, dim:N, dim:T, range:begin, range:end]\n"
    "  parallel: {dim: N, min_chunk: 16, changes_arithmetic: false}\n"
    "instances:\n"
    "  - {id: lin_a, prio: 100}\n"
    "  - {id: lin_b, prio: 200}\n";

std::string write_family(const std::string& text, const std::string& name = "fam") {
  const fs::path dir = fs::temp_directory_path() / ("cke_family_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << text;
  return p.string();
}

std::string replace(std::string s, const std::string& a, const std::string& b) {
  const size_t at = s.find(a);
  EXPECT_NE(at, std::string::npos) << a;
  if (at != std::string::npos) s.replace(at, a.size(), b);
  return s;
}

TEST(MapFamily, ExpandsEveryInstanceWithItsLine) {
  const std::string path = write_family(kFamily);
  std::vector<LoadError> errors;
  const std::vector<KernelMap> maps = load_kernel_maps(path, &errors);
  ASSERT_TRUE(errors.empty()) << format_errors(errors);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].id, "lin_a");
  EXPECT_EQ(maps[0].selection.priority, 100);
  EXPECT_EQ(maps[0].file, path + ":18");
  EXPECT_EQ(maps[1].id, "lin_b");
  EXPECT_EQ(maps[1].selection.priority, 200);
  EXPECT_EQ(maps[1].file, path + ":19");
  EXPECT_NE(maps[0].sha256, maps[1].sha256);
}

// `defaults`: a placeholder's value where an instance omits it; an instance's own wins.
TEST(MapFamily, DefaultsFillOmittedPlaceholders) {
  const std::string text = replace(replace(kFamily, "phases: [prefill, decode]}",
                                           "phases: [prefill, decode], decode_batch: ${batch}}"),
                                   "instances:\n", "defaults: {batch: 'false'}\ninstances:\n");
  const std::string path = write_family(
      replace(text, "  - {id: lin_b, prio: 200}", "  - {id: lin_b, prio: 200, batch: 'true'}"));
  std::vector<LoadError> errors;
  const std::vector<KernelMap> maps = load_kernel_maps(path, &errors);
  ASSERT_TRUE(errors.empty()) << format_errors(errors);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_FALSE(maps[0].selection.decode_batch);
  EXPECT_TRUE(maps[1].selection.decode_batch);
  fs::remove(path);
}

TEST(MapFamily, MalformedFamiliesAreErrors) {
  struct Case {
    std::string text, file_name, field, why;
  };
  const std::vector<Case> cases = {
      {replace(kFamily, "  - {id: lin_b, prio: 200}", "  - {id: lin_b}"), "fam",
       "instances[1].prio", "missing"},
      {replace(kFamily, "  - {id: lin_b, prio: 200}", "  - {id: lin_b, prio: 200, extra: 1}"),
       "fam", "instances[1].extra", "unknown"},
      {kFamily, "other", "family", "differs from the file name"},
      {replace(kFamily, "  id: ${id}\n", "  schema: cke.kernel_map/1\n  id: ${id}\n"), "fam",
       "template", "without `schema`"},
      {replace(kFamily, "priority: ${prio}", "priority: ${pr io}"), "fam", "template",
       "malformed placeholder"},
      {replace(kFamily, "  - {id: lin_a, prio: 100}\n  - {id: lin_b, prio: 200}\n", "  []\n"),
       "fam", "instances", "non-empty list"},
      {replace(kFamily, "priority: ${prio}", "priority: high${prio}"), "fam", "selection",
       ""},  // the expanded map's own error, at the instance's line
      {replace(kFamily, "instances:\n", "defaults: {pri: '1'}\ninstances:\n"), "fam",
       "defaults.pri", "no placeholder"},
      {replace(kFamily, "instances:\n", "defaults: [1]\ninstances:\n"), "fam", "defaults",
       "mapping"},
      {replace(kFamily, "phases: [prefill, decode]}", "phases: [prefill], decode_batch: true}"),
       "fam", "selection.decode_batch", "needs the decode phase"},
  };
  for (const Case& c : cases) {
    const std::string path = write_family(c.text, c.file_name);
    std::vector<LoadError> errors;
    EXPECT_TRUE(load_kernel_maps(path, &errors).empty()) << c.field;
    bool found = false;
    for (const LoadError& e : errors)
      found = found || (e.file.rfind(path, 0) == 0 && e.path.rfind(c.field, 0) == 0 &&
                        e.reason.find(c.why) != std::string::npos);
    EXPECT_TRUE(found) << c.field << ": " << format_errors(errors);
    fs::remove(path);
  }
}

// Found by fuzz_kernel_map: a 12 KB family (a placeholder 1000 times in the template, an
// 8 KB value, the instance repeated by YAML aliases) expanded to 400 MB of maps to parse.
TEST(MapFamily, ExpansionIsBounded) {
  std::string placeholders;
  for (int i = 0; i < 1000; ++i) placeholders += "${pad}";
  std::string text = replace(kFamily, "  impl: {function: ${id}}\n",
                             "  impl: {function: ${id}}\n  notes: \"" + placeholders + "\"\n");
  text = replace(text, "  - {id: lin_a, prio: 100}\n  - {id: lin_b, prio: 200}\n",
                 "  - &a {id: lin_a, prio: 100, pad: '" + std::string(8000, 'z') + "'}\n");
  for (int i = 0; i < 50; ++i) text += "  - *a\n";
  const std::string path = write_family(text);
  std::vector<LoadError> errors;
  EXPECT_TRUE(load_kernel_maps(path, &errors).empty());
  bool found = false;
  for (const LoadError& e : errors)
    found = found || (e.file == path && e.path == "instances[0]" &&
                      e.reason.find("expand to more than 1048576 bytes") != std::string::npos);
  EXPECT_TRUE(found) << format_errors(errors);
  // A short value in the same template expands fine.
  text = replace(text, std::string(8000, 'z'), "z");
  const std::string ok = write_family(text.substr(0, text.find("  - *a\n")));
  errors.clear();
  EXPECT_EQ(load_kernel_maps(ok, &errors).size(), 1u) << format_errors(errors);
  fs::remove(path);
}

}  // namespace
}  // namespace cke::test
