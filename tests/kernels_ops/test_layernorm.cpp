// layernorm_f32__ref: exact math in double, a hand vector, the 16-group variance, and
// bit-identity with llama.cpp's NORM + MUL + ADD nodes from the nemotron checkpoints.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

// y = (x − mean) / sqrt(var + eps) · w + b in double. The float kernel rounds the mean, the
// differences, the squares and the variance, the sqrt, the reciprocal, two products and
// the bias add: a few ulps of |(x − mean)·s·w| plus half an ulp of |y| (the add), with the
// mean's rounding (an ulp of |mean|) carried through the difference.
TEST(RefOps, layernorm_f32__ref) {
  for (int64_t n : {1, 8, 15, 16, 17, 64, 250, 256, 4096}) {  // 16-groups and tails
    const int64_t rows = 3;
    auto x = randn(n * rows, 31 + n, 2.0f);
    for (auto& v : x) v += 0.5f;  // a non-zero mean
    auto w = randn(n, 32 + n), b = randn(n, 33 + n, 0.1f);
    std::vector<float> y(x.size());
    const float eps = 1e-5f;
    // The range ABI: rows [1, rows), then row 0.
    layernorm_f32__ref(x.data(), w.data(), b.data(), y.data(), n, rows, eps, 1, rows);
    layernorm_f32__ref(x.data(), w.data(), b.data(), y.data(), n, rows, eps, 0, 1);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + r * n;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i) mean += xr[i];
      mean /= double(n);
      for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
      var /= double(n);
      const double s = 1.0 / std::sqrt(var + double(eps));
      for (int64_t i = 0; i < n; ++i) {
        const double prod = (xr[i] - mean) * s * w[i];
        const double want = prod + b[i];
        const double tol = 8 * 0x1p-24 * std::fabs(prod) +
                           2 * 0x1p-24 * std::fabs(mean) * s * std::fabs(w[i]) +
                           0x1p-24 * std::fabs(want) + 0x1p-149;
        EXPECT_NEAR(y[r * n + i], want, tol) << n << " " << r << " " << i;
      }
    }
    // In place gives the same bits.
    std::vector<float> z = x;
    layernorm_f32__ref(z.data(), w.data(), b.data(), z.data(), n, rows, eps, 0, rows);
    EXPECT_EQ(bit_diffs(z, y), 0);
    // Ranges outside the rows write nothing.
    layernorm_f32__ref(x.data(), w.data(), b.data(), z.data(), n, rows, eps, 0, rows + 1);
    layernorm_f32__ref(x.data(), w.data(), b.data(), z.data(), n, rows, eps, -1, 1);
    EXPECT_EQ(bit_diffs(z, y), 0);
  }
}

// mean 2, differences ±1, variance 1, eps 0 → scale 1: y = ±w + b exactly.
TEST(RefOps, layernorm_f32__ref_hand_vector) {
  const float x[4] = {1, 3, 1, 3}, w[4] = {1, 2, 3, 4}, b[4] = {0.5f, 0.5f, -1, 1};
  float y[4];
  layernorm_f32__ref(x, w, b, y, 4, 1, 0.0f, 0, 1);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[1], 2.5f);
  EXPECT_EQ(y[2], -4.0f);
  EXPECT_EQ(y[3], 5.0f);
}

// The variance of a full 16-group is the _mm512_reduce_add_ps tree of the squares (lanes
// i+8 onto i, then 4, 2, 1), not their sequential sum: two large lanes (0 and 8) and small
// ones, where the two orders round differently. Expected bits from an explicit emulation.
TEST(RefOps, layernorm_f32__ref_variance_is_the_16_lane_tree) {
  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = (i % 2) ? 1.0f : -1.0f;
  x[0] = 4096.0f;
  x[8] = -4096.0f;
  const float w[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, b[16] = {};
  float y[16];
  layernorm_f32__ref(x, w, b, y, 16, 1, 0.0f, 0, 1);

  double sum = 0;
  for (float v : x) sum += v;
  const float mean = float(sum) / 16.0f;
  float d[16], sq[16];
  for (int i = 0; i < 16; ++i) {
    d[i] = x[i] - mean;
    sq[i] = d[i] * d[i];
  }
  float seq = 0;
  for (float v : sq) seq += v;
  for (int half = 8; half >= 1; half /= 2)
    for (int i = 0; i < half; ++i) sq[i] += sq[i + half];
  const float tree = sq[0];
  ASSERT_NE(tree, seq) << "the vector must tell the two orders apart";
  const float scale = 1.0f / std::sqrt(float(double(tree) / 16.0));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], d[i] * scale) << i;
}

struct LayerNormCase {
  const char* input;   // checkpoint of x
  const char* weight;  // GGUF tensors
  const char* bias;
  const char* output;  // checkpoint of the ADD node
};

// The same computation as llama.cpp, bit for bit, on the stored LayerNorms of synth-nemotron
// (n_embd 256, eps 1e-5f).
TEST(RefOpsCheckpoint, layernorm_f32__ref_bit_exact) {
  const LayerNormCase cases[] = {
      {"embd", "blk.0.attn_norm.weight", "blk.0.attn_norm.bias", "attn_norm-0"},
      {"ffn_inp-0", "blk.0.ffn_norm.weight", "blk.0.ffn_norm.bias", "ffn_norm-0"},
      {"l_out-0", "blk.1.attn_norm.weight", "blk.1.attn_norm.bias", "attn_norm-1"},
      {"ffn_inp-1", "blk.1.ffn_norm.weight", "blk.1.ffn_norm.bias", "ffn_norm-1"},
      {"l_out-1", "output_norm.weight", "output_norm.bias", "result_norm"},
  };
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/synth-nemotron-F32");
  const std::string model = shared_path("models/synthetic/synth-nemotron-F32.gguf");
  for (const LayerNormCase& c : cases) {
    SCOPED_TRACE(c.output);
    const auto x = read_f32(shared_path(ckpt_rel("synth-nemotron-F32", c.input)));
    const auto want = read_f32(shared_path(ckpt_rel("synth-nemotron-F32", c.output)));
    const auto w = gguf_f32(model, c.weight), b = gguf_f32(model, c.bias);
    ASSERT_FALSE(x.empty());
    ASSERT_EQ(x.size(), want.size());
    ASSERT_EQ(w.size(), 256u);
    ASSERT_EQ(b.size(), 256u);
    std::vector<float> y(x.size());
    const int64_t rows = int64_t(x.size()) / 256;
    layernorm_f32__ref(x.data(), w.data(), b.data(), y.data(), 256, rows, 1e-5f, 0, rows);
    EXPECT_EQ(bit_diffs(y, want), 0) << "nmse " << nmse(y, want);
  }
}

}  // namespace
}  // namespace cke::test
