#include "resolver/host_caps.h"

#include <cpuinfo.h>
#include <fmt/format.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <fstream>
#include <set>

namespace cke {

namespace {

#if defined(__x86_64__)
struct Cpuid {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

Cpuid cpuid(uint32_t leaf, uint32_t sub) {
  Cpuid r;
  if (__get_cpuid_max(0, nullptr) < leaf) return r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

// XCR0: which register states the OS saves (0 when XGETBV is not enabled).
uint64_t xcr0() {
  if (!(cpuid(1, 0).c >> 27 & 1)) return 0;  // OSXSAVE
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return uint64_t(hi) << 32 | lo;
}

// Linux asks each process to opt in to the large AMX tile data state.
bool request_amx_permission() {
#if defined(__linux__)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

}  // namespace

uint32_t count_physical_cores(const std::string& sysfs_cpu_root) {
  std::set<std::string> siblings;
  for (uint32_t cpu = 0;; ++cpu) {
    std::ifstream in(fmt::format("{}/cpu{}/topology/thread_siblings", sysfs_cpu_root, cpu));
    if (!in) break;
    std::string line;
    if (std::getline(in, line)) siblings.insert(line);
  }
  return uint32_t(siblings.size());
}

HostCaps HostCaps::probe() {
  HostCaps h;
  h.origin = "probed";
  if (cpuinfo_initialize()) {
    using F = Feature;
    const std::pair<bool, F> from_cpuinfo[] = {
        {cpuinfo_has_x86_avx2(), F::avx2},
        {cpuinfo_has_x86_fma3(), F::fma},
        {cpuinfo_has_x86_f16c(), F::f16c},
        {cpuinfo_has_x86_avx512f(), F::avx512f},
        {cpuinfo_has_x86_avx512dq(), F::avx512dq},
        {cpuinfo_has_x86_avx512bw(), F::avx512bw},
        {cpuinfo_has_x86_avx512vl(), F::avx512vl},
        {cpuinfo_has_x86_avx512vbmi(), F::avx512vbmi},
        {cpuinfo_has_x86_avx512vnni(), F::avx512vnni},
        {cpuinfo_has_x86_avx512bf16(), F::avx512bf16},
    };
    for (auto [has, f] : from_cpuinfo)
      if (has) h.features.add(f);
    h.logical_cpus = cpuinfo_get_processors_count();
    h.physical_cores = cpuinfo_get_cores_count();
    if (cpuinfo_get_packages_count() > 0) h.cpu_name = cpuinfo_get_package(0)->name;
    if (cpuinfo_get_l1d_caches_count() > 0) h.l1d_bytes = cpuinfo_get_l1d_cache(0)->size;
    if (cpuinfo_get_l2_caches_count() > 0) h.l2_bytes = cpuinfo_get_l2_cache(0)->size;
    if (cpuinfo_get_l3_caches_count() > 0) h.l3_bytes = cpuinfo_get_l3_cache(0)->size;
  }
  if (const uint32_t cores = count_physical_cores("/sys/devices/system/cpu"); cores > 0)
    h.physical_cores = cores;
#if defined(__linux__)
  // A process confined to fewer CPUs (taskset, a container's cpuset) runs no faster with
  // more threads than it may use.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
      h.physical_cores > uint32_t(CPU_COUNT(&set)))
    h.physical_cores = uint32_t(CPU_COUNT(&set));
#endif
#if defined(__x86_64__)
  // What cpuinfo 2022 does not know: CPUID.7.0:EDX and CPUID.7.1:EAX, gated on XCR0.
  const uint64_t x = xcr0();
  const bool ymm = (x & 0x6) == 0x6;            // SSE + AVX state
  const bool zmm = (x & 0xe6) == 0xe6;          // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool tiles = (x & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  const Cpuid l70 = cpuid(7, 0), l71 = cpuid(7, 1);
  const Cpuid l0 = cpuid(0, 0), l1 = cpuid(1, 0);
  const bool amd = l0.b == 0x68747541 && l0.d == 0x69746e65 && l0.c == 0x444d4163;  // AuthenticAMD
  const uint32_t base_family = l1.a >> 8 & 0xf;
  const uint32_t family = base_family == 0xf ? base_family + (l1.a >> 20 & 0xff) : base_family;
  // Zen 4 decodes faster without the decode tiles' prefetch lead, Zen 5 (family 1Ah) with it
  // (jit/gen_tile.h has the numbers; cke-bench --decode-prefetch measures a new host).
  if (amd && family == 0x19 && h.has(Feature::avx512f)) h.decode_stream_prefetch = false;
  if (zmm && (l70.d >> 23 & 1)) h.features.add(Feature::avx512fp16);
  if (ymm && (l71.a >> 4 & 1)) h.features.add(Feature::avxvnni);
  const bool amx_tile = l70.d >> 24 & 1, amx_bf16 = l70.d >> 22 & 1, amx_int8 = l70.d >> 25 & 1;
  h.amx_cpu = tiles && amx_tile;
  if (h.amx_cpu) {
    h.amx_permission = request_amx_permission();
    if (h.amx_permission) {
      h.features.add(Feature::amx_tile);
      if (amx_int8) h.features.add(Feature::amx_int8);
      if (amx_bf16) h.features.add(Feature::amx_bf16);
    } else {
      h.origin += " (AMX present but the kernel refused XTILEDATA permission)";
    }
  }
#endif
  return h;
}

HostCaps HostCaps::synthetic(FeatureSet features) {
  HostCaps h;
  h.features = features;
  h.origin = "synthetic";
  h.amx_cpu = h.amx_permission = features.has(Feature::amx_tile);
  return h;
}

std::optional<HostCaps> HostCaps::for_level(std::string_view level) {
  std::optional<FeatureSet> f = isa_level_features(level);
  if (!f) return std::nullopt;
  HostCaps h = synthetic(*f);
  h.origin = "synthetic " + std::string(level);
  return h;
}

std::optional<FeatureSet> parse_cap_spec(std::string_view spec, std::string* error) {
  if (std::optional<FeatureSet> level = isa_level_features(spec)) return level;
  FeatureSet out;
  size_t b = 0;
  while (b <= spec.size()) {
    size_t e = spec.find(',', b);
    if (e == std::string_view::npos) e = spec.size();
    std::string_view name = spec.substr(b, e - b);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    std::optional<Feature> f = feature_from_name(name);
    if (!f) {
      if (error)
        *error = fmt::format(
            "unknown ISA cap '{}' (an ISA level: scalar, avx2, avx_vnni, avx512, avx512_vnni, amx; "
            "or a comma-separated feature list)",
            name);
      return std::nullopt;
    }
    out.add(*f);
    b = e + 1;
  }
  return out;
}

std::optional<HostCaps> HostCaps::cap(std::string_view spec, std::string* error) const {
  std::optional<FeatureSet> allowed = parse_cap_spec(spec, error);
  if (!allowed) return std::nullopt;
  HostCaps h = *this;
  h.features = features & *allowed;
  h.origin += ", capped to " + std::string(spec);
  return h;
}

}  // namespace cke
