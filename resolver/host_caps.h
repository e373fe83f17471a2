// HostCaps: what the target CPU can run, as a plain value.
//
// The resolver reads features only from a HostCaps, never from the machine it runs on, so
// a plan for an AVX2, AVX-512 or AMX host can be built, traced and emitted on any host.
// probe() fills one from cpuinfo, completed by CPUID/XCR0 where Debian's cpuinfo (2022) is
// blind: AVX-512-FP16, AVX-VNNI and AMX. On Linux AMX data also needs a per-process
// permission (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA); probe() requests it and, if it
// is refused, drops the amx_* features (the kernels could not run) and records why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/features.h"

namespace cke {

struct HostCaps {
  FeatureSet features;
  std::string cpu_name;
  uint32_t logical_cpus = 0;
  uint32_t physical_cores = 0;  // at most the CPUs this process may run on
  uint32_t l1d_bytes = 0;       // per cache instance, 0 when unknown
  uint32_t l2_bytes = 0;
  uint32_t l3_bytes = 0;
  bool amx_cpu = false;         // CPUID and XCR0 report AMX tile state
  bool amx_permission = false;  // the kernel granted XTILEDATA to this process
  std::string origin;           // "probed", "synthetic", plus ", capped to <spec>"
  // Whether decode tiles prefetch their weight stream in software (jit/gen_tile.h): a
  // choice of speed, never of bits. Off on AMD family 19h with AVX-512 (Zen 4), where
  // decode measured 10-30 % faster without it (2026-12-06); on elsewhere. Capping the ISA
  // keeps it (it is the memory system's, not the instruction set's).
  bool decode_stream_prefetch = true;

  // The machine this process runs on.
  static HostCaps probe();
  // A made-up host with exactly these features (tests, cross-planning).
  static HostCaps synthetic(FeatureSet features);
  // A made-up host at an ISA level (isa_level_features).
  static std::optional<HostCaps> for_level(std::string_view level);

  bool has(Feature f) const { return features.has(f); }
  // Removes features: `spec` is an ISA level ("scalar", "avx2", "avx512", "avx512_vnni",
  // "amx") or a comma-separated feature list ("avx2,fma,f16c"); the result keeps only the
  // features both have. Capping never adds a feature. nullopt + error for a bad spec.
  std::optional<HostCaps> cap(std::string_view spec, std::string* error) const;
};

// Physical cores as Linux reports them: the distinct thread-sibling sets of
// <root>/cpu<N>/topology/thread_siblings (N = 0, 1, ... until one is missing), as llama.cpp
// counts them for its default thread count. 0 when there is no such file. probe() uses it
// where it exists (cpuinfo 2022 reads the CPUID topology, which a VM may present as SMT
// siblings where the kernel has two cores: it said 1 core for 2 on a 2-vCPU EPYC).
uint32_t count_physical_cores(const std::string& sysfs_cpu_root);

// Parses a cap spec into the features it allows (the same rules as HostCaps::cap).
std::optional<FeatureSet> parse_cap_spec(std::string_view spec, std::string* error);

}  // namespace cke
