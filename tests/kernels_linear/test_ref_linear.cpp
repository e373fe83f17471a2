// Reference linear kernels against an independent oracle, one TEST per provider id.
//
// Oracle: the weight row and the kernel's converted activation are decoded exactly
// (linear_oracle.cpp, plain per-element formulas) and dotted in double. The kernel sums
// the same products in float, so the only difference is float rounding: every product
// term passes through at most h sequential roundings (fl(dw*da), the lane's FMA chain,
// the horizontal-sum tree, the tail / min-term adds; rounding_steps() counts them), and
// the classic bound for any summation tree of height h gives
//     |y - y_exact| <= gamma_h * sum |terms|,   gamma_h = h*u / (1 - h*u), u = 2^-24.
// With K = 4128 that is at most ~3e-6 of the magnitude, and a misplaced nibble, scale or
// sign is an O(1) error, so the bound is both safe and sharp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/formats/quant.h"
#include "kernels/registry.h"
#include "linear_oracle.h"

namespace cke::test {
namespace {

constexpr double kU = 1.0 / (1 << 24);

std::vector<int64_t> ks_for(const Provider& p) {
  const int64_t bs = dtype_info(p.wtype).block_size;
  if (p.tinyblas()) {
    std::vector<int64_t> ks;
    for (int64_t K : {16, 32, 48, 64, 96, 160, 256, 512, 4128})
      if (K % p.k_step() == 0) ks.push_back(K);
    return ks;
  }
  if (bs == 1) return {1, 7, 8, 15, 16, 31, 63, 64, 65, 127, 172, 256, 512, 4128, 4133};
  if (bs == 32) return {32, 256, 512, 4096 + 32};
  return {256, 512, 4096 + 256};
}

std::vector<float> random_acts(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(-3.0f, 3.0f);
  std::vector<float> x(n);
  // Per-32 block magnitudes vary by decades, as real activations do.
  for (int64_t i = 0; i < n; ++i) {
    if (i % 32 == 0) mag.reset();
    x[i] = nd(rng) * std::pow(10.0f, mag(rng) / 3.0f);
  }
  return x;
}

// Runs p on N random rows and T tokens and checks every output against the oracle.
void check_random(const Provider& p, int64_t K, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << p.id << " K=" << K);
  std::mt19937 rng(seed);
  const int64_t N = 6, T = 3;
  const std::vector<uint8_t> w = random_weights(p.wtype, K, N, rng);
  const std::vector<float> x = random_acts(K * T, rng);
  std::vector<float> y(N * T, -12345.0f);
  p.run(x.data(), w.data(), y.data(), K, N, T, 0, N);
  const size_t rb = row_bytes(p.wtype, K);
  const int64_t h = rounding_steps(p, K);
  const double gamma = h * kU / (1 - h * kU);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      const OracleDot o = oracle_dot(p, w.data() + n * rb, x.data() + t * K, K);
      ASSERT_GT(o.mag, 0.0);
      EXPECT_LE(std::fabs(y[t * N + n] - o.value), gamma * o.mag)
          << "t=" << t << " n=" << n << " y=" << y[t * N + n] << " exact=" << o.value;
    }
}

// Any split of the rows gives the same bits (rows are independent, no split-K), and rows
// outside [n0, n1) are not written.
void check_row_split(const Provider& p) {
  std::mt19937 rng(7);
  const int64_t K = dtype_info(p.wtype).block_size == 1 ? (p.tinyblas() ? 96 : 100) : 512;
  const int64_t N = 9, T = 2;
  const auto w = random_weights(p.wtype, K, N, rng);
  const auto x = random_acts(K * T, rng);
  std::vector<float> full(N * T), split(N * T, 99.0f);
  p.run(x.data(), w.data(), full.data(), K, N, T, 0, N);
  p.run(x.data(), w.data(), split.data(), K, N, T, 2, 5);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      if (n >= 2 && n < 5)
        EXPECT_EQ(split[t * N + n], full[t * N + n]);
      else
        EXPECT_EQ(split[t * N + n], 99.0f) << "row outside [n0, n1) written";
    }
  p.run(x.data(), w.data(), split.data(), K, N, T, 0, 2);
  p.run(x.data(), w.data(), split.data(), K, N, T, 5, N);
  for (int64_t i = 0; i < N * T; ++i) EXPECT_EQ(split[i], full[i]);
}

// Edge cases. What ggml's CPU path does, and therefore what the kernel must do:
//  - all-zero activations give exactly 0 for every format;
//  - one huge activation (1e4 among O(1) values) stays within the oracle bound; at 1e30,
//    f32/bf16/Q8_K keep a finite result, f16 rounds the activation to Inf (result Inf or
//    NaN), and Q8_0/Q8_1 store d = f16(1e30/127) = Inf, so every lane that met a zero
//    integer sum computes Inf*0 = NaN: the output is NaN;
//  - NaN: f32/f16/bf16 propagate it. Q8_K skips NaN when looking for the max and rounds
//    it to q = 0, so the output equals the one with that activation set to 0. Q8_0/Q8_1
//    find amax with the maxps tree, where a NaN survives only at element 27 of a block
//    (then d = NaN and the output is NaN); elsewhere it becomes q = -128 and the Q8_0
//    output stays finite, while Q8_1's s = f16(d * sum) sums the raw INT32_MIN of that
//    element, overflows f16 to -Inf and makes the q4_1/q5_1 output non-finite;
//  - Inf: amax = Inf gives d = Inf (f16) or -Inf (Q8_K's 1/iscale) and the output NaN;
//    the float formats give +-Inf or NaN.
void check_edges(const Provider& p) {
  std::mt19937 rng(11);
  const int64_t K = dtype_info(p.wtype).block_size == 256 ? 512 : 256, N = 4;
  const auto w = random_weights(p.wtype, K, N, rng);
  const size_t rb = row_bytes(p.wtype, K);
  std::vector<float> y(N);
  auto run = [&](const std::vector<float>& x) {
    p.run(x.data(), w.data(), y.data(), K, N, 1, 0, N);
  };

  std::vector<float> zero(K, 0.0f);
  run(zero);
  for (float v : y) EXPECT_EQ(v, 0.0f) << "all-zero activations";

  std::vector<float> x = random_acts(K, rng);
  for (float& v : x) v = std::fmod(v, 4.0f);
  x[37] = 1e4f;
  run(x);
  const int64_t h = rounding_steps(p, K);
  for (int64_t n = 0; n < N; ++n) {
    const OracleDot o = oracle_dot(p, w.data() + n * rb, x.data(), K);
    EXPECT_LE(std::fabs(y[n] - o.value), h * kU * 1.01 * o.mag) << "huge activation, n=" << n;
  }

  x[37] = 1e30f;
  run(x);
  for (float v : y) {
    switch (p.act) {
      case ActKind::F32:
      case ActKind::BF16:
      case ActKind::Q8_K:
        EXPECT_TRUE(std::isfinite(v)) << "1e30 activation: " << v;
        break;
      case ActKind::F16:
        EXPECT_FALSE(std::isfinite(v)) << "1e30 activation: " << v;
        break;
      case ActKind::Q8_0:
      case ActKind::Q8_1:
        EXPECT_TRUE(std::isnan(v)) << "1e30 activation: " << v;
        break;
    }
  }

  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int pos : {27, 32 + 27, 5, 40}) {
    std::vector<float> xn = random_acts(K, rng);
    std::vector<float> x0 = xn;
    xn[pos] = nan;
    x0[pos] = 0.0f;
    std::vector<float> y0(N);
    p.run(x0.data(), w.data(), y0.data(), K, N, 1, 0, N);
    run(xn);
    for (int64_t n = 0; n < N; ++n) {
      SCOPED_TRACE(::testing::Message() << "NaN at " << pos << " n=" << n);
      switch (p.act) {
        case ActKind::F32:
        case ActKind::F16:
        case ActKind::BF16:
          EXPECT_TRUE(std::isnan(y[n]));
          break;
        case ActKind::Q8_K:
          EXPECT_EQ(y[n], y0[n]);
          break;
        case ActKind::Q8_0:
          if (pos % 32 == 27)
            EXPECT_TRUE(std::isnan(y[n]));
          else
            EXPECT_TRUE(std::isfinite(y[n]));
          break;
        case ActKind::Q8_1:
          EXPECT_FALSE(std::isfinite(y[n]));
          break;
      }
    }
  }

  std::vector<float> xi = random_acts(K, rng);
  xi[100] = std::numeric_limits<float>::infinity();
  run(xi);
  for (float v : y) {
    if (p.act == ActKind::Q8_0 || p.act == ActKind::Q8_1 || p.act == ActKind::Q8_K)
      EXPECT_TRUE(std::isnan(v)) << "Inf activation: " << v;
    else
      EXPECT_FALSE(std::isfinite(v)) << "Inf activation: " << v;
  }
}

void check_provider(const char* id) {
  const Provider& p = provider(id);
  uint32_t seed = 1;
  for (int64_t K : ks_for(p)) check_random(p, K, seed++);
  check_row_split(p);
  check_edges(p);
  // The registry exports the kernel under its provider id.
  const KernelSymbol* s = find_kernel_symbol(id);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->fn, reinterpret_cast<void*>(p.fn));
  EXPECT_EQ(s->n_args, 8);
}

TEST(RefLinear, linear_f32_f32__ref) {
  check_provider("linear_f32_f32__ref");
}
TEST(RefLinear, linear_f16_f32__ref) {
  check_provider("linear_f16_f32__ref");
}
TEST(RefLinear, linear_bf16_f32__ref) {
  check_provider("linear_bf16_f32__ref");
}
TEST(RefLinear, linear_f32_tinyblas_f32__ref) {
  check_provider("linear_f32_tinyblas_f32__ref");
}
TEST(RefLinear, linear_f16_tinyblas_f32__ref) {
  check_provider("linear_f16_tinyblas_f32__ref");
}
TEST(RefLinear, linear_bf16_tinyblas_f32__ref) {
  check_provider("linear_bf16_tinyblas_f32__ref");
}
TEST(RefLinear, linear_q8_0_f32__ref) {
  check_provider("linear_q8_0_f32__ref");
}
TEST(RefLinear, linear_q4_0_f32__ref) {
  check_provider("linear_q4_0_f32__ref");
}
TEST(RefLinear, linear_q4_1_f32__ref) {
  check_provider("linear_q4_1_f32__ref");
}
TEST(RefLinear, linear_q5_0_f32__ref) {
  check_provider("linear_q5_0_f32__ref");
}
TEST(RefLinear, linear_q5_1_f32__ref) {
  check_provider("linear_q5_1_f32__ref");
}
TEST(RefLinear, linear_q2_K_f32__ref) {
  check_provider("linear_q2_K_f32__ref");
}
TEST(RefLinear, linear_q3_K_f32__ref) {
  check_provider("linear_q3_K_f32__ref");
}
TEST(RefLinear, linear_q4_K_f32__ref) {
  check_provider("linear_q4_K_f32__ref");
}
TEST(RefLinear, linear_q5_K_f32__ref) {
  check_provider("linear_q5_K_f32__ref");
}
TEST(RefLinear, linear_q6_K_f32__ref) {
  check_provider("linear_q6_K_f32__ref");
}

// The oracle's exact decoder agrees with the formats library's dequantize_row (written
// independently, ggml-base arithmetic: at most two float roundings per element).
TEST(RefLinearOracle, decoder_matches_dequantize_row) {
  std::mt19937 rng(5);
  for (const Provider& p : providers()) {
    if (p.wtype == DType::F32 || p.wtype == DType::F16 || p.wtype == DType::BF16) continue;
    SCOPED_TRACE(p.id);
    const int64_t K = 512;
    const auto w = random_weights(p.wtype, K, 1, rng);
    std::vector<float> deq(K);
    dequantize_row(p.wtype, w.data(), deq.data(), K);
    const ExactRow ex = decode_weight_exact(p.wtype, w.data(), K);
    for (int64_t e = 0; e < K; ++e)
      ASSERT_LE(std::fabs(deq[e] - (ex.s[e] - ex.m[e])),
                2 * kU * (std::fabs(ex.s[e]) + std::fabs(ex.m[e])) + 1e-30)
          << "element " << e;
  }
}

// vpsignb wraps -(-128) to -128: a Q8_0 activation of -128 (what a NaN that the amax tree
// dropped becomes) against a negative weight contributes -(w*a). Hand-computed: weight
// block d = 1, w[0] = -3; activations NaN at element 0 (dropped by the next vmaxps in its
// lane), 127 at element 1, so d_a = 1, q[0] = -128, and ggml's dot is -3 * 128 = -384
// (the mathematical product would be +384).
TEST(RefLinear, linear_q8_0_f32__ref_sign_fixup_wraps_minus_128) {
  block_q8_0 w{};
  w.d = fp32_to_fp16(1.0f);
  w.qs[0] = -3;
  std::vector<float> x(32, 0.0f);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = 127.0f;
  float y = 0;
  call_linear(linear_q8_0_f32__ref, DType::Q8_0, false, x.data(), &w, &y, 32, 1, 1, 0, 1);
  EXPECT_EQ(y, -384.0f);
}

// Bad calls compute nothing (and do not crash).
TEST(RefLinear, invalid_shapes_write_nothing) {
  std::vector<float> x(64, 1.0f), y(4, 7.0f);
  std::vector<uint8_t> w(1024, 0);
  linear_q4_0_f32__ref(x.data(), w.data(), y.data(), 48, 2, 1, 0, 2);  // K % 32 != 0
  linear_q4_K_f32__ref(x.data(), w.data(), y.data(), 64, 2, 1, 0, 2);  // K % 256 != 0
  linear_f32_f32__ref(x.data(), w.data(), y.data(), 8, 2, 1, 1, 3);    // n1 > N
  linear_f32_f32__ref(x.data(), w.data(), y.data(), 8, 2, 1, 2, 1);    // n0 > n1
  linear_f32_f32__ref(nullptr, w.data(), y.data(), 8, 2, 1, 0, 2);
  for (float v : y) EXPECT_EQ(v, 7.0f);
}

}  // namespace
}  // namespace cke::test
