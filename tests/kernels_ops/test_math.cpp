// The ggml building blocks (kernels/ref/ops_ggml_math.h) against hand-computed vectors and
// exact math. Bit-exactness with ggml itself is checked through the checkpoint tests of the
// kernels that use them (test_attention.cpp, test_glu.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/formats/quant.h"
#include "kernels/ref/ops_ggml_math.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::ref {
namespace {

using cke::test::ulp_dist;
constexpr float k2p24 = 16777216.0f;  // 2^24: from here on, float spacing is 2

// ggml_v_expf is documented as ≤ 1.45 ulp + 0.5 ulp rounding, so ≤ 2 ulp against exp
// computed in double, wherever the result is a normal float.
TEST(RefOpsMath, GgmlExpfWithinTwoUlpOfExp) {
  int64_t worst = 0;
  for (float x = -87.0f; x < 88.5f; x += 0.000731f) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    worst = std::max(worst, ulp_dist(ggml_expf(x), want));
  }
  EXPECT_LE(worst, 2);
  EXPECT_GE(worst, 1);  // it is an approximation, not libm
}

TEST(RefOpsMath, GgmlExpfSpecialValues) {
  EXPECT_EQ(ggml_expf(0.0f), 1.0f);
  EXPECT_EQ(ggml_expf(-INFINITY), 0.0f);  // masked softmax cells
  EXPECT_EQ(ggml_expf(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(ggml_expf(NAN)));
  EXPECT_EQ(ggml_expf(89.0f), INFINITY);  // overflows like expf
  EXPECT_EQ(ggml_expf(-1000.0f), 0.0f);   // |n| > 192 flushes to zero
  EXPECT_EQ(ggml_expf(1000.0f), INFINITY);
  // Subnormal results: within 2 subnormal steps of the exact value.
  for (float x : {-88.0f, -95.0f, -100.0f, -103.0f}) {
    const double want = std::exp(static_cast<double>(x));
    EXPECT_NEAR(ggml_expf(x), want, 2 * 0x1p-149) << x;
  }
}

// The tree matters: with 2^24 in lane 0 and ones in lanes 1 and 3, the tree adds 1 + 1 first
// (lanes 1, 3 meet at the last but one step), a sequential sum loses both ones.
TEST(RefOpsMath, ReduceAdd16Tree) {
  float v[16] = {};
  v[0] = k2p24;
  v[1] = 1.0f;
  v[3] = 1.0f;
  EXPECT_EQ(reduce_add16(v), k2p24 + 2.0f);
  // Lanes i and i+8 meet first: 1 + 1 = 2, then onto 2^24 exactly.
  float w[16] = {};
  w[2] = k2p24;
  w[5] = 1.0f;
  w[13] = 1.0f;
  EXPECT_EQ(reduce_add16(w), k2p24 + 2.0f);
  // Lanes 0 and 4 meet before 0 and 2: (2^24 + 1) rounds to 2^24, and so does + 1.
  float u[16] = {};
  u[0] = k2p24;
  u[4] = 1.0f;
  u[2] = 1.0f;
  EXPECT_EQ(reduce_add16(u), k2p24);
}

// Lane layout of ggml_vec_dot_f32: element i → accumulator (i % 64) / 16, lane i % 16;
// accumulators 1 and 3 are folded before meeting 0.
TEST(RefOpsMath, VecDotF32LaneStructure) {
  std::vector<float> x(72, 1.0f), y(72, 0.0f);
  y[0] = k2p24;  // acc0 lane 0
  y[16] = 1.0f;  // acc1 lane 0
  y[48] = 1.0f;  // acc3 lane 0 → acc1 + acc3 = 2, then 2^24 + 2 exactly
  EXPECT_EQ(vec_dot_f32(x.data(), y.data(), 64), k2p24 + 2.0f);
  EXPECT_EQ(vec_dot_f32_pad64(x.data(), y.data(), 64), k2p24 + 2.0f);
  // tinyBLAS puts 0, 16, 48 in one lane: 2^24 + 1 + 1 sequentially stays 2^24.
  EXPECT_EQ(dot_tinyblas16(x.data(), y.data(), 64), k2p24);
  // Leftovers (n % 64) are added one by one after the reduction: 2^24+2 +1 → tie → 2^24+4.
  y[64] = 1.0f;
  EXPECT_EQ(vec_dot_f32(x.data(), y.data(), 72), k2p24 + 4.0f);
  // ... while the padded variant puts element 64 into acc0 lane 0 (2^24 + 1 → 2^24).
  EXPECT_EQ(vec_dot_f32_pad64(x.data(), y.data(), 72), k2p24 + 2.0f);
}

// Against a double-precision dot: |err| ≤ n·2^-24·Σ|x·y| (a loose classic bound).
TEST(RefOpsMath, DotsCloseToExactDot) {
  for (int64_t n : {1, 7, 8, 16, 63, 64, 65, 128, 200, 256}) {
    auto x = cke::test::randn(n, 1 + n), y = cke::test::randn(n, 100 + n);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += double(x[i]) * y[i];
      mag += std::fabs(double(x[i]) * y[i]);
    }
    const double tol = n * 0x1p-24 * mag;
    EXPECT_NEAR(vec_dot_f32(x.data(), y.data(), n), exact, tol) << n;
    EXPECT_NEAR(vec_dot_f32_pad64(x.data(), y.data(), n), exact, tol) << n;
    EXPECT_NEAR(dot_tinyblas16(x.data(), y.data(), n), exact, tol) << n;
  }
}

// softmax_row against softmax in double: ggml_expf (2 ulp), the float group sums and the
// float scaling keep every probability within 1e-6 relative; masked cells are exactly 0.
TEST(RefOpsMath, SoftmaxRowMatchesDouble) {
  for (int64_t len : {1, 5, 16, 17, 40, 100}) {
    for (int64_t first : {int64_t(0), len / 3}) {
      auto w = cke::test::randn((len + 15) / 16 * 16, 7 * len + first, 3.0f);
      std::vector<double> ref(len, 0.0);
      double mx = -INFINITY, s = 0;
      for (int64_t j = first; j < len; ++j) mx = std::max(mx, double(w[j]));
      for (int64_t j = first; j < len; ++j) s += ref[j] = std::exp(double(w[j]) - mx);
      softmax_row(w.data(), len, first);
      for (int64_t j = 0; j < len; ++j) {
        if (j < first) {
          EXPECT_EQ(w[j], 0.0f);
        } else {
          EXPECT_NEAR(w[j], ref[j] / s, 1e-6 * ref[j] / s + 1e-30) << len << " " << j;
        }
      }
    }
  }
}

// As ggml's MAX(max, x): a NaN score makes the whole row NaN (no silent renormalisation).
TEST(RefOpsMath, SoftmaxRowNanPropagates) {
  float w[16] = {0.5f, NAN, 1.0f};
  softmax_row(w, 3, 0);
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(w[j])) << j;
}

// silu = x / (1 + e^−x): ggml_expf (≤ 2 ulp), one add and one division (½ ulp each) give
// ≤ 4 ulp against the double formula; libm expf (≤ 1 ulp) gives ≤ 3.
TEST(RefOpsMath, SiluCloseToExact) {
  int64_t worst_simd = 0, worst_libm = 0;
  for (float x = -80.0f; x < 80.0f; x += 0.00137f) {
    const float want = static_cast<float>(double(x) / (1.0 + std::exp(-double(x))));
    worst_simd = std::max(worst_simd, ulp_dist(silu_simd(x), want));
    worst_libm = std::max(worst_libm, ulp_dist(silu_libm(x), want));
  }
  EXPECT_LE(worst_simd, 4);
  EXPECT_LE(worst_libm, 3);
  EXPECT_EQ(silu_simd(0.0f), 0.0f);
  EXPECT_EQ(silu_simd(-200.0f), 0.0f);  // e^200 = inf → −200 / inf = −0
}

// Every table entry against tanh-GELU in double, rounded to FP16 once: the table adds the
// float evaluation (|0.5x|·2^-23 absolute from 1 + tanhf near −1, plus a few float ulps) and
// its own FP16 rounding (2^-11 relative, 2^-25 absolute below the FP16 normal range).
TEST(RefOpsMath, GeluTableEntries) {
  int checked = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float x = fp16_to_fp32(static_cast<uint16_t>(h));
    if (!std::isfinite(x) || std::fabs(x) >= 10.0f) continue;
    const double xd = x;
    const double g =
        0.5 * xd * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * xd * (1.0 + 0.044715 * xd * xd)));
    const double got = fp16_to_fp32(gelu_table_entry(static_cast<uint16_t>(h)));
    EXPECT_NEAR(got, g, 0x1p-10 * std::fabs(g) + std::fabs(xd) * 0x1p-22 + 0x1p-24) << x;
    ++checked;
  }
  EXPECT_GT(checked, 35000);
  // The lookup rounds its input to FP16 first: 1.0001 and 1.0 share an entry.
  EXPECT_EQ(gelu_table_f16(1.0001f), gelu_table_f16(1.0f));
}

}  // namespace
}  // namespace cke::ref
