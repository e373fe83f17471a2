// Helpers of the JIT kernel tests: the kernels under test with their reference oracles,
// random and edge-case data, and the bit comparison.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "jit/generators.h"
#include "kernels/formats/dtype.h"

namespace cke::test {

// A generated kernel and the reference kernel of its contract.
struct JitCase {
  std::string id;  // generator name = provider id
  DType wtype;
  jit::LinearFn reference;
};
const JitCase& jit_case(const std::string& id);

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
};
std::vector<float> make_acts(int64_t K, int64_t T, ActStyle s, std::mt19937& rng);

// Runs reference and JIT kernel for rows [n0, n1) on the same inputs (outputs prefilled
// with a sentinel) and returns "" when every output is bit-identical (a NaN matches any
// NaN: see the .cpp), else a description of the first difference.
std::string compare_kernels(jit::LinearFn jit, jit::LinearFn ref, const std::vector<uint8_t>& w,
                            const std::vector<float>& x, int64_t K, int64_t N, int64_t T,
                            int64_t n0, int64_t n1);

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
