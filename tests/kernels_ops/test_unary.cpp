// relu_sqr_f32__ref: the definition on edge values, an independent double computation, and
// bit-identity with llama.cpp's RELU → SQR nodes from the nemotron checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

TEST(RefOps, relu_sqr_f32__ref) {
  auto x = randn(1000, 41, 3.0f);
  std::vector<float> y(x.size());
  const int64_t n = int64_t(x.size());
  relu_sqr_f32__ref(x.data(), y.data(), n, 400, n);  // the range ABI: [400, n), then [0, 400)
  relu_sqr_f32__ref(x.data(), y.data(), n, 0, 400);
  for (size_t i = 0; i < x.size(); ++i) {
    // One float product of an exact value: the double square rounded once.
    const double r = x[i] > 0 ? double(x[i]) : 0.0;
    EXPECT_EQ(y[i], float(r * r)) << i;
  }
  // Edges: −0, NaN and −inf give +0; +inf gives +inf; 2^64 overflows to +inf.
  const float inf = std::numeric_limits<float>::infinity();
  const float e[6] = {-0.0f, std::nanf(""), -inf, inf, 0x1p64f, -3.0f};
  float o[6];
  relu_sqr_f32__ref(e, o, 6, 0, 6);
  EXPECT_EQ(std::signbit(o[0]), false);
  EXPECT_EQ(o[0], 0.0f);
  EXPECT_EQ(o[1], 0.0f);
  EXPECT_EQ(o[2], 0.0f);
  EXPECT_EQ(o[3], inf);
  EXPECT_EQ(o[4], inf);
  EXPECT_EQ(o[5], 0.0f);
  // In place.
  std::vector<float> z = x;
  relu_sqr_f32__ref(z.data(), z.data(), n, 0, n);
  EXPECT_EQ(bit_diffs(z, y), 0);
  relu_sqr_f32__ref(x.data(), z.data(), n, 0, n + 1);  // a range past n writes nothing
  relu_sqr_f32__ref(e, z.data(), 6, 3, 3);
  EXPECT_EQ(bit_diffs(z, y), 0);
}

TEST(RefOpsCheckpoint, relu_sqr_f32__ref_bit_exact) {
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/synth-nemotron-F32");
  for (const char* layer : {"0", "1"}) {
    SCOPED_TRACE(layer);
    const auto x =
        read_f32(shared_path(ckpt_rel("synth-nemotron-F32", std::string("ffn_up-") + layer)));
    const auto want = read_f32(
        shared_path(ckpt_rel("synth-nemotron-F32", std::string("ffn_sqr_relu_-") + layer)));
    ASSERT_FALSE(x.empty());
    ASSERT_EQ(x.size(), want.size());
    std::vector<float> y(x.size());
    relu_sqr_f32__ref(x.data(), y.data(), int64_t(x.size()), 0, int64_t(x.size()));
    EXPECT_EQ(bit_diffs(y, want), 0) << "nmse " << nmse(y, want);
  }
}

}  // namespace
}  // namespace cke::test
