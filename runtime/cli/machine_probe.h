// The machine's limits, measured on the spot (cke-bench --probe): what a decode step can read
// per second and what a prefill can compute, so a benchmark reports the fraction of the
// limit it reaches and not only a ratio to another engine.
#pragma once

#include "resolver/host_caps.h"

namespace cke {

struct MachineLimits {
  double read_gbps = 0;      // streaming read of a buffer far larger than the caches
  double f32_gflops = 0;     // FMA throughput (2 flops per lane per FMA)
  double int8_gops = 0;      // int8 dot products (2 ops per multiply-add)
  const char* fma_isa = "";  // the instructions the peaks were measured with
  const char* int8_isa = "";
};

// Measures with `threads` threads (each on its own data), at the widest vector width the
// host's features allow. Takes about a second.
MachineLimits probe_machine(const HostCaps& caps, int threads);

}  // namespace cke
