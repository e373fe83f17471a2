// Helpers of the JIT kernel tests: the kernels under test with their reference oracles,
// random and edge-case data, and the bit comparison.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "jit/generators.h"
#include "kernels/formats/dtype.h"

namespace cke::test {

// Fills the stack below the caller with `fill`, so that a kernel frame that reads memory it
// never wrote sees that byte instead of whatever a previous call left (CI's ASan run found
// a moe_route bug that only other garbage showed). Call it right before a kernel.
__attribute__((noinline)) inline void dirty_stack(uint8_t fill) {
  volatile uint8_t junk[1 << 16];
  for (size_t i = 0; i < sizeof junk; ++i) junk[i] = fill;
}
// `dirtied(fn, fill)(args...)`: calls the kernel fn over a stack dirty_stack(fill) made.
template <class F>
F dirtied(F fn, int fill) {
  dirty_stack(uint8_t(fill));
  return fn;
}

// The range ABI (kernels/ref/ops.h) as the plan's split runs it: fn(args..., begin, end)
// over [0, extent) in two calls, [0, extent / 2) and [extent / 2, extent) (one call when
// extent < 2). Each call must write only its rows, so the pair writes what one whole call
// (the reference's) does.
template <class F, class... A>
void call_split(F fn, int line, int64_t extent, A... args) {
  const int64_t k = extent / 2;
  if (k > 0) dirtied(fn, line)(args..., int64_t(0), k);
  dirtied(fn, line)(args..., k, extent);
}

// Ranges outside the call (begin < 0, empty, past the extent): nothing may be written.
inline std::vector<std::pair<int64_t, int64_t>> bad_ranges(int64_t extent) {
  return {{-1, extent}, {0, 0}, {1, 1}, {extent, extent}, {0, extent + 1}, {2, 1}};
}

// Empty when this machine has every feature the generator needs, else the missing ones.
std::string missing_isa(const jit::Generator& g);

// Weight bytes of N rows of K elements.
enum class WeightStyle {
  Random,       // random quants (q8_0 without -128) and scales of varied magnitude
  Extreme,      // q8_0 quants -128/127 only, q4_0 nibbles 0/15, scales 65504, f32 +-1e30
  Zero,         // all-zero weights (scales too)
  SpecialScale  // random quants; some scales (or f32 values) Inf, NaN, subnormal, zero
};
std::vector<uint8_t> make_weights(DType t, int64_t K, int64_t N, WeightStyle s, std::mt19937& rng);

enum class ActStyle {
  Random,     // normal values, per-32 magnitudes varying by decades
  Zero,       // all zeros
  Large,      // magnitudes up to 3e38
  NaNs,       // random with some NaN and Inf elements (quantize to -128 / d = Inf)
  Subnormal,  // tiny values, including subnormals
  Tiny,       // normal values near FLT_MIN (1e-38..1e-33): products and sums subnormal
};
std::vector<float> make_acts(int64_t K, int64_t T, ActStyle s, std::mt19937& rng);

// Runs reference and JIT kernel (and, if given, the kernel's emitted C) for rows [n0, n1)
// on the same inputs (outputs prefilled with a sentinel) and returns "" when every output
// of the JIT is bit-identical to the reference (a NaN matches any NaN: see the .cpp) and
// the C's to the JIT's (memcmp; NaNs match NaNs), else a description of the first
// difference.
// `a` holds the activations as the kernels read them (converted as their contract says).
std::string compare_kernels(jit::LinearFn jit, jit::LinearFn ref, const std::vector<uint8_t>& w,
                            const std::vector<uint8_t>& a, int64_t K, int64_t N, int64_t T,
                            int64_t n0, int64_t n1, jit::LinearFn c = nullptr,
                            const std::vector<uint8_t>* w_kernel = nullptr);

// A kernel's emitted C (jit::kernel_c_source) compiled by the system C compiler with the
// flags --run-emitted uses, loaded; fn() is the function named `id`. Empty + error() on
// failure.
class CompiledC {
 public:
  CompiledC(const std::string& c_source, const std::string& id, const std::string& isa_flags);
  ~CompiledC();
  CompiledC(const CompiledC&) = delete;
  CompiledC& operator=(const CompiledC&) = delete;
  jit::LinearFn fn() const { return fn_; }
  template <class Fn>
  Fn fn_as() const {  // the same symbol, for a kernel of another ABI
    return reinterpret_cast<Fn>(sym_);
  }
  const std::string& error() const { return error_; }

 private:
  void* handle_ = nullptr;
  jit::LinearFn fn_ = nullptr;
  void* sym_ = nullptr;
  std::string error_;
};

// A copy of `bytes` that ends exactly where an inaccessible page begins, so a read or
// write past its end faults (the JIT code is not instrumented by AddressSanitizer).
class GuardedBuffer {
 public:
  explicit GuardedBuffer(const void* bytes, size_t n);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  void* data() const { return data_; }

 private:
  void* map_ = nullptr;
  size_t map_len_ = 0;
  void* data_ = nullptr;
};

}  // namespace cke::test
