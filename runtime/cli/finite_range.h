// The range check of CKE's floating-point flags (--temp, --top-p, --delay, ...).
// CLI::Range lets "nan" through (every comparison with a NaN is false), so `--temp nan`
// would reach the sampler; this validator takes a finite number in [lo, hi] only.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/core/sampler.h"

namespace cke::cli {

inline CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
          return fmt::format("{} is not a finite number", s);
        if (v < lo || v > hi) return fmt::format("Value {} not in range [{} - {}]", s, lo, hi);
        return std::string();
      },
      fmt::format("FLOAT in [{} - {}]", lo, hi), "FINITE_RANGE");
}

// The flag of a sampling field takes its range of kSamplerRanges (runtime/core/sampler.h).
inline CLI::Validator sampler_flag_range(std::string_view field) {
  const SamplerRange& r = sampler_range(field);
  return finite_range(r.lo, r.hi);
}

}  // namespace cke::cli
