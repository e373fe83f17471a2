// HostCaps: probe() against /proc/cpuinfo (an independent reading of the same CPU), and
// caps on synthetic hosts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "resolver/host_caps.h"

namespace cke {
namespace {

std::set<std::string> proc_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream ss(line.substr(line.find(':') + 1));
    std::set<std::string> out;
    for (std::string f; ss >> f;) out.insert(f);
    return out;
  }
  return {};
}

TEST(HostCaps, ProbeAgreesWithProcCpuinfo) {
  const std::set<std::string> flags = proc_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags on this system";
  const HostCaps h = HostCaps::probe();
  const std::pair<Feature, const char*> pairs[] = {
      {Feature::avx2, "avx2"},
      {Feature::fma, "fma"},
      {Feature::f16c, "f16c"},
      {Feature::avx512f, "avx512f"},
      {Feature::avx512dq, "avx512dq"},
      {Feature::avx512bw, "avx512bw"},
      {Feature::avx512vl, "avx512vl"},
      {Feature::avx512vbmi, "avx512vbmi"},
      {Feature::avx512vnni, "avx512_vnni"},
      {Feature::avx512bf16, "avx512_bf16"},
      {Feature::avx512fp16, "avx512_fp16"},
      {Feature::avxvnni, "avx_vnni"},
  };
  for (auto [f, name] : pairs) EXPECT_EQ(h.has(f), flags.count(name) > 0) << name;
  // AMX: CPUID/XCR0 agree with the kernel's flags; the features are usable only when the
  // kernel granted the tile-data permission.
  EXPECT_EQ(h.amx_cpu, flags.count("amx_tile") > 0);
  EXPECT_EQ(h.has(Feature::amx_tile), h.amx_cpu && h.amx_permission);
  if (h.has(Feature::amx_tile)) {
    EXPECT_EQ(h.has(Feature::amx_int8), flags.count("amx_int8") > 0);
    EXPECT_EQ(h.has(Feature::amx_bf16), flags.count("amx_bf16") > 0);
  }
  EXPECT_GT(h.logical_cpus, 0u);
  EXPECT_GT(h.physical_cores, 0u);
  EXPECT_EQ(h.origin.rfind("probed", 0), 0u);
}

TEST(HostCaps, CapToLevels) {
  const HostCaps all = HostCaps::synthetic(FeatureSet::all());
  std::string err;
  HostCaps a512 = *all.cap("avx512", &err);
  EXPECT_TRUE(a512.has(Feature::avx512f));
  EXPECT_TRUE(a512.has(Feature::avx512bw));
  EXPECT_TRUE(a512.has(Feature::avx2));
  EXPECT_FALSE(a512.has(Feature::avx512vnni));
  EXPECT_FALSE(a512.has(Feature::amx_int8));
  EXPECT_FALSE(a512.has(Feature::amx_tile));
  EXPECT_NE(a512.origin.find("capped to avx512"), std::string::npos);
  HostCaps a2 = *all.cap("avx2", &err);
  EXPECT_EQ(a2.features, (FeatureSet{Feature::avx2, Feature::fma, Feature::f16c}));
  EXPECT_EQ(all.cap("scalar", &err)->features, FeatureSet{});
  HostCaps vnni = *all.cap("avx512_vnni", &err);
  EXPECT_TRUE(vnni.has(Feature::avx512vnni));
  EXPECT_FALSE(vnni.has(Feature::amx_tile));
  EXPECT_EQ(all.cap("amx", &err)->features, FeatureSet::all());
  EXPECT_EQ(all.cap("avx2, fma", &err)->features, (FeatureSet{Feature::avx2, Feature::fma}));
}

TEST(HostCaps, CapNeverAddsFeatures) {
  const HostCaps h = HostCaps::synthetic({Feature::avx2, Feature::fma});
  std::string err;
  EXPECT_EQ(h.cap("amx", &err)->features, (FeatureSet{Feature::avx2, Feature::fma}));
  EXPECT_EQ(h.cap("avx512f", &err)->features, FeatureSet{});
  // Capping the probed host also only removes.
  const HostCaps p = HostCaps::probe();
  EXPECT_TRUE(p.features.contains(p.cap("avx2", &err)->features));
}

TEST(HostCaps, BadCapSpec) {
  std::string err;
  EXPECT_FALSE(HostCaps::synthetic({}).cap("avx9000", &err));
  EXPECT_NE(err.find("avx9000"), std::string::npos);
  EXPECT_FALSE(parse_cap_spec("avx2,,fma", &err));
  EXPECT_FALSE(HostCaps::for_level("sse2"));
}

TEST(HostCaps, FeatureNamesRoundTrip) {
  for (int i = 0; i < kFeatureCount; ++i) {
    Feature f = static_cast<Feature>(i);
    EXPECT_EQ(feature_from_name(feature_name(f)), f);
  }
  EXPECT_FALSE(feature_from_name("avx512"));
  EXPECT_EQ(FeatureSet({Feature::amx_int8, Feature::avx2}).names(),
            (std::vector<std::string>{"avx2", "amx_int8"}));
}

// A sysfs tree of masks.size() CPUs, CPU i with the thread_siblings mask masks[i].
std::string fake_sysfs(const std::string& name, const std::vector<std::string>& masks) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / (name + std::to_string(getpid()));
  fs::remove_all(root);
  for (size_t cpu = 0; cpu < masks.size(); ++cpu) {
    const fs::path dir = root / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(dir);
    std::ofstream(dir / "thread_siblings") << masks[cpu] << "\n";
  }
  return root.string();
}

TEST(HostCaps, PhysicalCoresAreTheDistinctSiblingSets) {
  const std::string smt = fake_sysfs("cke_sysfs_smt", {"05", "0a", "05", "0a"});
  EXPECT_EQ(count_physical_cores(smt), 2u) << "4 CPUs, 2 per core";
  const std::string flat = fake_sysfs("cke_sysfs_flat", {"1", "2"});
  EXPECT_EQ(count_physical_cores(flat), 2u) << "2 CPUs, 1 per core";
  EXPECT_EQ(count_physical_cores("/nonexistent/cpu/root"), 0u);
  std::filesystem::remove_all(smt);
  std::filesystem::remove_all(flat);
}

TEST(HostCaps, ProbedCoresAgreeWithSysfs) {
  const uint32_t sysfs = count_physical_cores("/sys/devices/system/cpu");
  if (sysfs == 0) GTEST_SKIP() << "no /sys/devices/system/cpu topology on this system";
  const HostCaps h = HostCaps::probe();
  EXPECT_GE(h.physical_cores, 1u);
  EXPECT_LE(h.physical_cores, sysfs);
  EXPECT_LE(h.physical_cores, h.logical_cpus);
}

}  // namespace
}  // namespace cke
