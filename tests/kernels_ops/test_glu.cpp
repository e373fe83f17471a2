// swiglu / geglu: exact-math oracles with stated bounds, the ±10 GELU edges, and
// bit-identity with llama.cpp's fused SWIGLU / GEGLU nodes.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

// silu(g)·u with exp in double. The kernel's silu is ≤ 4 ulp off (see test_math), the
// product adds ½ ulp: 5 ulp of |y|, plus the smallest subnormal for underflowing results.
TEST(RefOps, swiglu_f32__ref) {
  for (int64_t n : {1, 15, 16, 17, 172, 768}) {  // groups of 16 and libm leftovers
    const int64_t T = 2;
    auto g = randn(n * T, 3 + n, 4.0f), u = randn(n * T, 4 + n);
    std::vector<float> y(g.size());
    swiglu_f32__ref(g.data(), u.data(), y.data(), n, T, 0, T);
    for (size_t i = 0; i < y.size(); ++i) {
      const double want = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * u[i];
      EXPECT_NEAR(y[i], want, 5 * 0x1p-24 * std::fabs(want) + 0x1p-149) << n << " " << i;
    }
    // y may alias gate or up.
    auto g2 = g, u2 = u;
    swiglu_f32__ref(g2.data(), u.data(), g2.data(), n, T, 0, T);
    swiglu_f32__ref(g.data(), u2.data(), u2.data(), n, T, 0, T);
    EXPECT_EQ(bit_diffs(g2, y), 0);
    EXPECT_EQ(bit_diffs(u2, y), 0);
  }
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x)));
}

// gelu(g)·u with tanh-GELU in double. The table path rounds g to FP16 (moves gelu by at most
// max|gelu'|·|g|·2^-11 ≤ 1.13·|g|·2^-11), then the entry error (test_math:
// 2^-10·|gelu| + |g|·2^-22 + 2^-24), then one float product.
TEST(RefOps, geglu_f32__ref) {
  const int64_t n = 300, T = 3;
  auto g = randn(n * T, 21, 5.0f), u = randn(n * T, 22);
  g[0] = -10.0f;  // edges: exactly ±10 leave the table
  g[1] = 10.0f;
  g[2] = -9.999f;
  g[3] = 25.0f;
  g[4] = -40.0f;
  std::vector<float> y(g.size());
  geglu_f32__ref(g.data(), u.data(), y.data(), n, T, 0, T);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 10.0f * u[1]);
  EXPECT_EQ(y[3], 25.0f * u[3]);
  EXPECT_EQ(y[4], 0.0f);
  for (size_t i = 0; i < y.size(); ++i) {
    const double x = g[i], gl = gelu_tanh(x);
    const double tol = std::fabs(u[i]) * (1.13 * std::fabs(x) * 0x1p-11 + 0x1p-10 * std::fabs(gl) +
                                          std::fabs(x) * 0x1p-22 + 0x1p-24) +
                       0x1p-24 * std::fabs(gl * u[i]);
    if (x <= -10.0) continue;  // exactly 0 by definition, gelu(−10) ≈ −1e−22
    EXPECT_NEAR(y[i], gl * u[i], tol) << i << " g " << x;
  }
  // It is the table, not exact GELU: 1.0001 and 1.0 share an FP16 entry.
  const float gg[2] = {1.0f, 1.0001f}, uu[2] = {1.0f, 1.0f};
  float yy[2];
  geglu_f32__ref(gg, uu, yy, 2, 1, 0, 1);
  EXPECT_EQ(yy[0], yy[1]);
}

struct GluCase {
  const char* model;
  const char* gate;
  const char* up;
  const char* out;
  int64_t n;
  bool gelu;
};

TEST(RefOpsCheckpoint, glu_f32__ref_bit_exact) {
  const GluCase cases[] = {
      {"stories260K", "ffn_gate-0", "ffn_up-0", "ffn_swiglu-0", 172, false},  // 10×16 + 12
      {"stories260K", "ffn_gate-4", "ffn_up-4", "ffn_swiglu-4", 172, false},
      {"synth-llama-Q4_K_M", "ffn_gate-0", "ffn_up-0", "ffn_swiglu-0", 768, false},
      {"synth-gemma3-F32", "ffn_gate-0", "ffn_up-0", "ffn_geglu-0", 768, true},
      {"synth-gemma3-F32", "ffn_gate-1", "ffn_up-1", "ffn_geglu-1", 768, true},
  };
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  for (const GluCase& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.out);
    const auto g = read_f32(shared_path(ckpt_rel(c.model, c.gate)));
    const auto u = read_f32(shared_path(ckpt_rel(c.model, c.up)));
    const auto want = read_f32(shared_path(ckpt_rel(c.model, c.out)));
    ASSERT_FALSE(g.empty());
    ASSERT_EQ(g.size(), u.size());
    ASSERT_EQ(g.size(), want.size());
    std::vector<float> y(g.size());
    const int64_t rows = int64_t(g.size()) / c.n;
    (c.gelu ? geglu_f32__ref : swiglu_f32__ref)(g.data(), u.data(), y.data(), c.n, rows, 0, rows);
    EXPECT_EQ(bit_diffs(y, want), 0) << "nmse " << nmse(y, want);
  }
}

// The fused form reads the gate and up halves of one row of 2n: the same bits as the split
// kernel on the halves copied out (n with and without a libm tail).
TEST(RefOps, swiglu_fused_f32__ref) {
  for (int64_t n : {1, 16, 23, 384}) {
    const int64_t T = 3;
    auto x = randn(2 * n * T, 51 + n, 4.0f);
    std::vector<float> g(n * T), u(n * T), want(n * T), y(n * T);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i) {
        g[t * n + i] = x[t * 2 * n + i];
        u[t * n + i] = x[t * 2 * n + n + i];
      }
    swiglu_f32__ref(g.data(), u.data(), want.data(), n, T, 0, T);
    swiglu_fused_f32__ref(x.data(), y.data(), n, T, 1, T);  // the range ABI: [1, T), [0, 1)
    swiglu_fused_f32__ref(x.data(), y.data(), n, T, 0, 1);
    EXPECT_EQ(bit_diffs(y, want), 0) << n;
    std::vector<float> z = y;
    swiglu_fused_f32__ref(g.data(), z.data(), n, T, 0, T + 1);  // outside T: nothing written
    swiglu_fused_f32__ref(g.data(), z.data(), n, T, 2, 2);
    EXPECT_EQ(bit_diffs(z, y), 0) << n;
    // And not the swapped halves (silu of the up half).
    swiglu_f32__ref(u.data(), g.data(), want.data(), n, T, 0, T);
    EXPECT_GT(bit_diffs(y, want), 0) << n;
  }
}

// llama.cpp's SWIGLU of glm4's fused ffn_up ([768, T] → [384, T]), bit for bit.
TEST(RefOpsCheckpoint, swiglu_fused_f32__ref_bit_exact) {
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/synth-glm4-F32");
  for (const char* layer : {"0", "1"}) {
    SCOPED_TRACE(layer);
    const auto x =
        read_f32(shared_path(ckpt_rel("synth-glm4-F32", std::string("ffn_up-") + layer)));
    const auto want =
        read_f32(shared_path(ckpt_rel("synth-glm4-F32", std::string("ffn_swiglu-") + layer)));
    ASSERT_FALSE(x.empty());
    ASSERT_EQ(x.size(), 2 * want.size());
    std::vector<float> y(want.size());
    const int64_t T = int64_t(want.size()) / 384;
    swiglu_fused_f32__ref(x.data(), y.data(), 384, T, 0, T);
    EXPECT_EQ(bit_diffs(y, want), 0) << "nmse " << nmse(y, want);
  }
}

}  // namespace
}  // namespace cke::test
