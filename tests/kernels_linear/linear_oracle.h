// Test oracle for the reference linear kernels: an exact, double-precision model of what
// each weight block and each converted activation block *means*, written from the block
// layouts (kernels/formats/blocks.h) as plain per-element formulas, independently of the
// lane-structured code under test.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/ref/linear.h"
#include "tests/common/linear_call.h"

namespace cke::test {

using LinearFn = RawLinearFn;

// The activation format a weight type's dot product consumes.
enum class ActKind { F32, F16, BF16, Q8_0, Q8_1, Q8_K };

struct Provider {
  const char* id;
  DType wtype;
  ActKind act;
  LinearFn fn;  // takes converted activations
  bool repacked() const { return std::string(id).find("x8_") != std::string::npos; }
  // llamafile's tinyBLAS arithmetic: one 16-lane accumulator, K a multiple of k_step().
  bool tinyblas() const { return std::string(id).find("_tinyblas_") != std::string::npos; }
  int64_t k_step() const { return tinyblas() ? (wtype == DType::BF16 ? 32 : 16) : 1; }
  // The kernel on f32 activations, converted as its contract says (linear_call.h).
  void run(const float* x, const void* w, float* y, int64_t K, int64_t N, int64_t T, int64_t n0,
           int64_t n1) const {
    call_linear(fn, wtype, repacked(), x, w, y, K, N, T, n0, n1);
  }
};

// The reference linear providers, in registry order.
const std::vector<Provider>& providers();
const Provider& provider(const std::string& id);

// Weight element e of a row as (s_e, m_e) with value s_e - m_e, each exact in double:
// s_e = scale part (d * sub-block scale * integer quant), m_e = min/offset part. q4_1 and
// q5_1 put their "+m" in m_e as -m.
struct ExactRow {
  std::vector<double> s, m;
};
ExactRow decode_weight_exact(DType t, const uint8_t* row, int64_t K);

// The converted activation, decoded exactly: a_e, plus for Q8_1 the per-block `s` field
// the dot product uses for the min term.
struct ExactAct {
  std::vector<double> a;
  std::vector<double> s_q8_1;
};
ExactAct convert_activation_exact(ActKind k, const float* x, int64_t K);

// y_exact = sum of the products the kernel's format defines (for q4_1/q5_1 the min term
// is m * s per block), and `mag` = sum of the absolute values of those products: the
// quantity float accumulation error is proportional to.
struct OracleDot {
  double value = 0, mag = 0;
};
OracleDot oracle_dot(const Provider& p, const uint8_t* wrow, const float* x, int64_t K);

// Sequential roundings along the longest path of the kernel's accumulation for this K
// (see the derivation in test_ref_linear.cpp).
int64_t rounding_steps(const Provider& p, int64_t K);

// The same for ggml's repacked kernels (q4_0 / q4_K / q2_K with N % 8 == 0): one
// accumulator per output, one FMA per block of the gemm or gemv granularity.
int64_t rounding_steps_repacked(const Provider& p, int64_t K, bool gemm);

// A random weight matrix of N rows: random bits for every quant/scale byte, fp16 scale
// fields set to finite values of moderate size (random bits there would mean Inf/NaN).
std::vector<uint8_t> random_weights(DType t, int64_t K, int64_t N, std::mt19937& rng);

}  // namespace cke::test
