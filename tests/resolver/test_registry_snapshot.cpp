// The registry snapshot (resolver/registry_snapshot.h): it round-trips every real map and
// contract field for field, a load reads it only under its key, any edit of a data file is a
// new key, a damaged snapshot is ignored, and a load with errors writes none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "resolver/registry.h"
#include "resolver/registry_snapshot.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

// CKE_CACHE_DIR for the scope of a test.
class CacheDir {
 public:
  explicit CacheDir(const std::string& value) {
    if (const char* v = std::getenv("CKE_CACHE_DIR")) old_ = v;
    setenv("CKE_CACHE_DIR", value.c_str(), 1);
  }
  ~CacheDir() {
    if (old_)
      setenv("CKE_CACHE_DIR", old_->c_str(), 1);
    else
      unsetenv("CKE_CACHE_DIR");
  }

 private:
  std::optional<std::string> old_;
};

fs::path temp(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("cke_snap_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<fs::path> snapshots(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("registry-", 0) == 0) out.push_back(e.path());
  return out;
}

std::optional<Registry> load(const fs::path& maps, std::vector<LoadError>* errors) {
  return Registry::load({maps}, linked_symbols(), errors);
}

// The repository's maps copied to a directory a test may edit.
fs::path copy_of_real_maps(const std::string& name) {
  const fs::path d = temp(name) / "kernel_maps";
  fs::copy(test::source_path("kernel_maps"), d, fs::copy_options::recursive);
  return d;
}

TEST(RegistrySnapshot, EncodingRoundTripsEveryRealMapAndContract) {
  CacheDir off("off");
  std::vector<LoadError> errors;
  auto reg = load(test::source_path("kernel_maps"), &errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  ASSERT_GT(reg->maps().size(), 100u);
  const snapshot::Parsed p{reg->maps(), reg->contracts(), {}};
  const std::string bytes = snapshot::encode("k", p);
  std::optional<snapshot::Parsed> back = snapshot::decode("k", bytes);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->maps.size(), p.maps.size());
  ASSERT_EQ(back->contracts.size(), p.contracts.size());
  for (size_t i = 0; i < p.maps.size(); ++i)
    EXPECT_TRUE(back->maps[i] == p.maps[i]) << p.maps[i].id;
  for (size_t i = 0; i < p.contracts.size(); ++i)
    EXPECT_TRUE(back->contracts[i] == p.contracts[i]) << p.contracts[i].id;
  // Under another key, or with any payload byte changed, it decodes to nothing.
  EXPECT_FALSE(snapshot::decode("other", bytes));
  for (size_t at : {bytes.find('\n') + 1, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] = char(bad[at] ^ 0x01);
    EXPECT_FALSE(snapshot::decode("k", bad)) << "byte " << at;
  }
  EXPECT_FALSE(snapshot::decode("k", bytes.substr(0, bytes.size() - 7)));
}

TEST(RegistrySnapshot, ALoadWritesOneAndTheNextReadsIt) {
  const fs::path cache = temp("cache");
  CacheDir on(cache.string());
  const fs::path maps = copy_of_real_maps("rw");
  std::vector<LoadError> errors;
  auto first = load(maps, &errors);
  ASSERT_TRUE(first) << format_errors(errors);
  const auto written = snapshots(cache);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(first->loaded_from(), "parse");
  // Proof that the next load reads the snapshot: one planted under the same key (a map's
  // priority changed in the snapshot only) is what it returns.
  const std::string key = written[0].filename().string().substr(9, 64);
  std::optional<snapshot::Parsed> planted = snapshot::read(key);
  ASSERT_TRUE(planted);
  ASSERT_FALSE(planted->files.empty());
  const std::string id = planted->maps[0].id;
  planted->maps[0].selection.priority += 7;
  ASSERT_TRUE(snapshot::write(key, *planted));
  auto second = load(maps, &errors);
  ASSERT_TRUE(second) << format_errors(errors);
  EXPECT_EQ(second->loaded_from(), "cached snapshot");
  EXPECT_EQ(second->find_map(id)->selection.priority, first->find_map(id)->selection.priority + 7);
  // A damaged snapshot is ignored: the maps are parsed again (and the snapshot rewritten).
  std::string bytes = slurp(written[0]);
  bytes[bytes.size() / 2] = char(bytes[bytes.size() / 2] ^ 0x40);
  std::ofstream(written[0], std::ios::binary) << bytes;
  auto third = load(maps, &errors);
  ASSERT_TRUE(third) << format_errors(errors);
  EXPECT_EQ(third->loaded_from(), "parse");
  EXPECT_EQ(third->find_map(id)->selection.priority, first->find_map(id)->selection.priority);
  EXPECT_TRUE(snapshot::read(key));
  fs::remove_all(cache);
  fs::remove_all(maps.parent_path());
}

TEST(RegistrySnapshot, AnEditedFileIsANewKey) {
  const fs::path cache = temp("edit_cache");
  CacheDir on(cache.string());
  const fs::path maps = copy_of_real_maps("edit");
  std::vector<LoadError> errors;
  auto before = load(maps, &errors);
  ASSERT_TRUE(before) << format_errors(errors);
  const KernelMap* m = before->find_map("linear_q8_0_f32__ref");
  ASSERT_TRUE(m);
  const int64_t priority = m->selection.priority;
  // The same map with another priority (its file is one map: the id is the file name).
  const fs::path f = maps / "linear_q8_0_f32__ref.yaml";
  std::string text = slurp(f);
  const std::string from = "priority: " + std::to_string(priority);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, from.size(), "priority: " + std::to_string(priority + 1));
  std::ofstream(f, std::ios::binary) << text;
  auto after = load(maps, &errors);
  ASSERT_TRUE(after) << format_errors(errors);
  EXPECT_EQ(after->find_map("linear_q8_0_f32__ref")->selection.priority, priority + 1);
  EXPECT_EQ(snapshots(cache).size(), 2u);
  fs::remove_all(cache);
  fs::remove_all(maps.parent_path());
}

// The encoding of a registry's values with their files (equal encodings: equal values).
std::string values(const Registry& r, const std::vector<std::string>& files) {
  return snapshot::encode("k", {r.maps(), r.contracts(), files});
}

// Every `file` of `r` lies under `dir`.
void expect_files_under(const Registry& r, const fs::path& dir) {
  const std::string d = dir.string() + "/";
  for (const KernelMap& m : r.maps()) EXPECT_EQ(m.file.rfind(d, 0), 0u) << m.file;
  for (const Contract& c : r.contracts()) EXPECT_EQ(c.file.rfind(d, 0), 0u) << c.file;
}

// A built-in snapshot (made of one tree) is read by a load of an identical tree anywhere,
// with that tree's paths, and gives what parsing it gives; it writes no cache.
TEST(RegistrySnapshot, ABuiltInSnapshotServesAnIdenticalTreeAnywhereWithItsPaths) {
  const fs::path cache = temp("builtin_cache");
  CacheDir on(cache.string());
  const fs::path made_from = copy_of_real_maps("builtin_src");
  std::vector<LoadError> errors;
  const std::optional<std::string> builtin = Registry::make_builtin_snapshot({made_from}, &errors);
  ASSERT_TRUE(builtin) << format_errors(errors);
  const fs::path elsewhere = copy_of_real_maps("builtin_dst");
  auto from_builtin = Registry::load({elsewhere}, linked_symbols(), &errors, *builtin);
  ASSERT_TRUE(from_builtin) << format_errors(errors);
  EXPECT_EQ(from_builtin->loaded_from(), "built-in snapshot");
  EXPECT_TRUE(snapshots(cache).empty());
  expect_files_under(*from_builtin, elsewhere);
  {
    CacheDir off("off");
    auto parsed = load(elsewhere, &errors);
    ASSERT_TRUE(parsed) << format_errors(errors);
    EXPECT_EQ(parsed->loaded_from(), "parse");
    EXPECT_TRUE(values(*from_builtin, {}) == values(*parsed, {}));
  }
  // A family's instances keep their line: "<path>:<line>".
  const KernelMap* inst = from_builtin->find_map("linear_q8_0r16_f32_16x1__avx512vnni");
  ASSERT_TRUE(inst);
  EXPECT_EQ(inst->file.rfind((elsewhere / "linear_q8_0_r16_generated.yaml").string() + ":", 0), 0u)
      << inst->file;
  fs::remove_all(cache);
  fs::remove_all(made_from.parent_path());
  fs::remove_all(elsewhere.parent_path());
}

// Any other tree ignores it: one edited file, one more file, a damaged snapshot.
TEST(RegistrySnapshot, ABuiltInSnapshotIsIgnoredByAnyOtherTree) {
  CacheDir off("off");
  const fs::path maps = copy_of_real_maps("builtin_edit");
  std::vector<LoadError> errors;
  const std::optional<std::string> builtin = Registry::make_builtin_snapshot({maps}, &errors);
  ASSERT_TRUE(builtin) << format_errors(errors);
  auto load_with = [&](const std::string& snap) {
    auto r = Registry::load({maps}, linked_symbols(), &errors, snap);
    EXPECT_TRUE(r) << format_errors(errors);
    return r;
  };
  EXPECT_EQ(load_with(*builtin)->loaded_from(), "built-in snapshot");
  std::string bad = *builtin;
  bad[bad.size() / 2] = char(bad[bad.size() / 2] ^ 0x01);
  EXPECT_EQ(load_with(bad)->loaded_from(), "parse");
  EXPECT_EQ(load_with("")->loaded_from(), "parse");
  // One byte of one file changed: the edit is what loads.
  const fs::path f = maps / "linear_q8_0_f32__ref.yaml";
  const std::string original = slurp(f);
  std::string text = original;
  const size_t at = text.find("priority: ");
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 10, "1");
  const int64_t priority = load_with("")->find_map("linear_q8_0_f32__ref")->selection.priority;
  std::ofstream(f, std::ios::binary) << text;
  auto edited = load_with(*builtin);
  EXPECT_EQ(edited->loaded_from(), "parse");
  EXPECT_EQ(edited->find_map("linear_q8_0_f32__ref")->selection.priority,
            std::stoll("1" + std::to_string(priority)));
  std::ofstream(f, std::ios::binary) << original;
  EXPECT_EQ(load_with(*builtin)->loaded_from(), "built-in snapshot");
  // The same bytes under another name are another tree.
  fs::rename(f, maps / "linear_q8_0_f32__ref2.yaml");
  std::vector<LoadError> renamed;
  EXPECT_FALSE(Registry::load({maps}, linked_symbols(), &renamed, *builtin));  // id != name
  EXPECT_FALSE(renamed.empty());
  fs::remove_all(maps.parent_path());
}

TEST(RegistrySnapshot, RebaseNeedsEveryFileInOrder) {
  snapshot::Parsed p;
  p.files = {"/a/x.yaml", "/a/y.yaml", "/a/contracts/c.yaml"};
  p.maps.resize(3);
  p.maps[0].file = "/a/x.yaml";
  p.maps[1].file = "/a/y.yaml:12";
  p.maps[2].file = "/a/y.yaml:30";
  p.contracts.resize(1);
  p.contracts[0].file = "/a/contracts/c.yaml";
  snapshot::Parsed q = p;
  ASSERT_TRUE(snapshot::rebase(&q, {"/b/x.yaml", "/b/y.yaml", "/b/contracts/c.yaml"}));
  EXPECT_EQ(q.maps[0].file, "/b/x.yaml");
  EXPECT_EQ(q.maps[1].file, "/b/y.yaml:12");
  EXPECT_EQ(q.maps[2].file, "/b/y.yaml:30");
  EXPECT_EQ(q.contracts[0].file, "/b/contracts/c.yaml");
  EXPECT_EQ(q.files[1], "/b/y.yaml");
  q = p;
  EXPECT_FALSE(snapshot::rebase(&q, {"/b/x.yaml", "/b/y.yaml"}));  // a file short
  q = p;
  std::swap(q.maps[0], q.maps[1]);  // out of the files' order
  EXPECT_FALSE(snapshot::rebase(&q, {"/b/x.yaml", "/b/y.yaml", "/b/contracts/c.yaml"}));
  q = p;
  q.maps[0].file = "/a/x.yamlz";  // a prefix, not the file
  EXPECT_FALSE(snapshot::rebase(&q, {"/b/x.yaml", "/b/y.yaml", "/b/contracts/c.yaml"}));
}

TEST(RegistrySnapshot, ALoadWithErrorsWritesNoneAndFailsEveryTime) {
  const fs::path cache = temp("err_cache");
  CacheDir on(cache.string());
  const fs::path maps = copy_of_real_maps("err");
  std::ofstream(maps / "broken.yaml") << "schema: cke.kernel_map/1\nid: broken\nop: [\n";
  for (int i = 0; i < 2; ++i) {
    std::vector<LoadError> errors;
    EXPECT_FALSE(load(maps, &errors));
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors[0].file.find("broken.yaml"), std::string::npos) << format_errors(errors);
  }
  EXPECT_TRUE(snapshots(cache).empty());
  fs::remove_all(cache);
  fs::remove_all(maps.parent_path());
}

TEST(RegistrySnapshot, OffWritesNothing) {
  CacheDir off("off");
  EXPECT_FALSE(snapshot::cache_dir());
  EXPECT_EQ(snapshot::key({}, {}), "");
  EXPECT_FALSE(snapshot::write("", {}));
}

// The directory keeps the kKeepSnapshots snapshots last written or read: older ones go at
// the next write, one just read stays however old it was.
TEST(RegistrySnapshot, AWriteKeepsTheMostRecentlyUsedAndRemovesTheRest) {
  const fs::path dir = temp("prune");
  CacheDir cd(dir.string());
  const size_t keep = snapshot::kKeepSnapshots;
  const auto now = fs::file_time_type::clock::now();
  // keep snapshots, snapshot i written i + 1 hours ago.
  for (size_t i = 0; i < keep; ++i) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(snapshot::write(k, {}));
    fs::last_write_time(dir / ("registry-" + k + ".bin"), now - std::chrono::hours(i + 1));
  }
  ASSERT_EQ(snapshots(dir).size(), keep);
  const std::string oldest = "k" + std::to_string(keep - 1);
  ASSERT_TRUE(snapshot::read(oldest));  // used now: the newest
  ASSERT_TRUE(snapshot::write("n0", {}));
  ASSERT_TRUE(snapshot::write("n1", {}));
  EXPECT_EQ(snapshots(dir).size(), keep);
  for (const std::string& k : {oldest, std::string("n0"), std::string("n1"), std::string("k0")})
    EXPECT_TRUE(fs::exists(dir / ("registry-" + k + ".bin"))) << k << " was removed";
  // The two least recently used: k{keep-2}, k{keep-3}.
  for (size_t i : {keep - 2, keep - 3})
    EXPECT_FALSE(fs::exists(dir / ("registry-k" + std::to_string(i) + ".bin")))
        << "k" << i << " was kept";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cke
