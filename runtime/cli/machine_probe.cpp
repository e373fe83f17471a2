// Probes: a read loop over 512 MiB per thread (best of 3), and FMA / int8-dot loops of
// independent accumulators long enough to hide latency (best of 3). Each kernel is compiled
// for its ISA with a target attribute and only called when the host has that ISA.
#include "runtime/cli/machine_probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace cke {
namespace {

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs f(i) on `threads` threads at once; returns the wall time of the slowest.
double parallel(int threads, const std::function<void(int)>& f) {
  return seconds([&] {
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i) ts.emplace_back(f, i);
    for (auto& t : ts) t.join();
  });
}

constexpr int64_t kIters = 20'000'000;  // loop trips per thread for the compute peaks

__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, size_t n) {
  __m256i acc = _mm256_setzero_si256();
  for (size_t i = 0; i < n; i += 128) {
    acc = _mm256_add_epi64(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    acc = _mm256_add_epi64(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    acc = _mm256_add_epi64(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    acc = _mm256_add_epi64(acc, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  uint64_t out[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), acc);
  return out[0] + out[1] + out[2] + out[3];
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t n) {
  __m256 a[8], x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (int i = 0; i < 8; ++i) a[i] = _mm256_set1_ps(float(i));
  for (int64_t k = 0; k < n; ++k)
    for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(a[i], x, y);
  __m256 s = a[0];
  for (int i = 1; i < 8; ++i) s = _mm256_add_ps(s, a[i]);
  return _mm256_cvtss_f32(s);
}
__attribute__((target("avx512f"))) float fma_avx512(int64_t n) {
  __m512 a[8], x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  for (int i = 0; i < 8; ++i) a[i] = _mm512_set1_ps(float(i));
  for (int64_t k = 0; k < n; ++k)
    for (int i = 0; i < 8; ++i) a[i] = _mm512_fmadd_ps(a[i], x, y);
  __m512 s = a[0];
  for (int i = 1; i < 8; ++i) s = _mm512_add_ps(s, a[i]);
  return _mm512_cvtss_f32(s);
}
// int8 dots: vpdpbusd zmm (64 MACs), or AVX2's vpmaddubsw + vpmaddwd + vpaddd (32 MACs).
__attribute__((target("avx512f,avx512vnni"))) int dot_vnni512(int64_t n) {
  __m512i a[8], x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
  for (int i = 0; i < 8; ++i) a[i] = _mm512_set1_epi32(i);
  for (int64_t k = 0; k < n; ++k)
    for (int i = 0; i < 8; ++i) a[i] = _mm512_dpbusd_epi32(a[i], x, y);
  __m512i s = a[0];
  for (int i = 1; i < 8; ++i) s = _mm512_add_epi32(s, a[i]);
  return _mm512_cvtsi512_si32(s);
}
__attribute__((target("avx2"))) int dot_avx2(int64_t n) {
  __m256i a[8], x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
  for (int i = 0; i < 8; ++i) a[i] = _mm256_set1_epi32(i);
  for (int64_t k = 0; k < n; ++k)
    for (int i = 0; i < 8; ++i)
      a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
  __m256i s = a[0];
  for (int i = 1; i < 8; ++i) s = _mm256_add_epi32(s, a[i]);
  return _mm256_cvtsi256_si32(s);
}

template <class F>
double best_rate(int threads, double work_per_thread, F body) {
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    const double s = parallel(threads, [&](int) { body(); });
    best = std::max(best, work_per_thread * threads / s);
  }
  return best;
}

}  // namespace

MachineLimits probe_machine(const HostCaps& caps, int threads) {
  MachineLimits m;
  threads = std::max(1, threads);
  const bool avx2 = caps.has(Feature::avx2) && caps.has(Feature::fma);
  const bool avx512 = caps.has(Feature::avx512f);
  if (!avx2) return m;  // below the lowest level CKE generates code for

  constexpr size_t kBytes = size_t(512) << 20;
  std::vector<uint8_t*> bufs(static_cast<size_t>(threads));
  for (auto& b : bufs) {
    b = static_cast<uint8_t*>(std::aligned_alloc(64, kBytes));
    std::memset(b, 1, kBytes);  // fault the pages in before timing
  }
  volatile uint64_t sink = 0;
  for (int r = 0; r < 3; ++r) {
    const double s =
        parallel(threads, [&](int i) { sink = sink + read_avx2(bufs[size_t(i)], kBytes); });
    m.read_gbps = std::max(m.read_gbps, double(kBytes) * threads / s / 1e9);
  }
  for (auto* b : bufs) std::free(b);

  volatile float fs = 0;
  const int lanes = avx512 ? 16 : 8;
  m.fma_isa = avx512 ? "avx512f vfmadd (zmm)" : "avx2 vfmadd (ymm)";
  m.f32_gflops = best_rate(threads, 2.0 * 8 * lanes * double(kIters),
                           [&] { fs = fs + (avx512 ? fma_avx512(kIters) : fma_avx2(kIters)); }) /
                 1e9;
  volatile int is = 0;
  const bool vnni = caps.has(Feature::avx512vnni);
  m.int8_isa = vnni ? "avx512vnni vpdpbusd (zmm)" : "avx2 vpmaddubsw+vpmaddwd (ymm)";
  const double macs = vnni ? 64.0 : 32.0;
  m.int8_gops = best_rate(threads, 2.0 * 8 * macs * double(kIters),
                          [&] { is = is + (vnni ? dot_vnni512(kIters) : dot_avx2(kIters)); }) /
                1e9;
  return m;
}

}  // namespace cke
