// rmsnorm_f32__ref: exact math in double, a hand vector, and bit-identity with llama.cpp's
// RMS_NORM + MUL nodes from the checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "kernels/ref/act_steps.h"
#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

// y = x / sqrt(mean(x²) + eps) · w in double. The float kernel rounds x², the mean, the
// sqrt, the reciprocal and two products: a few ulps, so 8·2^-24 relative per element.
TEST(RefOps, rmsnorm_f32__ref) {
  for (int64_t n : {1, 8, 64, 172, 256, 4096}) {
    const int64_t rows = 3;
    auto x = randn(n * rows, 11 + n, 2.0f);
    auto w = randn(n, 12 + n);
    std::vector<float> y(x.size());
    const float eps = 1e-5f;
    rmsnorm_f32__ref(x.data(), w.data(), y.data(), n, rows, eps, 0, rows);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x[r * n + i]) * x[r * n + i];
      const double s = 1.0 / std::sqrt(ss / n + double(eps));
      for (int64_t i = 0; i < n; ++i) {
        const double want = x[r * n + i] * s * w[i];
        EXPECT_NEAR(y[r * n + i], want, 8 * 0x1p-24 * std::fabs(want)) << n << " " << r << " " << i;
      }
    }
    // In place gives the same bits.
    std::vector<float> z = x;
    rmsnorm_f32__ref(z.data(), w.data(), z.data(), n, rows, eps, 0, rows);
    EXPECT_EQ(bit_diffs(z, y), 0);
  }
}

// The oracle of the fused contract rmsnorm_act_quant.q8_0.ggml against the plan it
// replaces: rmsnorm_f32__ref over every row, then act_quant_q8_0__ref over every row. xn and
// the q8_0 blocks byte for byte, whole, split in row ranges, and in place (xn = x); calls
// outside the contract write nothing.
TEST(RefOps, rmsnorm_act_quant_q8_0__ref) {
  for (int64_t n : {32, 64, 256, 4096}) {
    const int64_t rows = 5;
    auto x = randn(n * rows, 21 + n, 3.0f);
    auto w = randn(n, 22 + n);
    x[size_t(n + 1)] = 0.0f;
    const float eps = 1e-6f;
    const size_t yb = size_t(n / 32 * 34 * rows);
    std::vector<float> xs(x.size());
    std::vector<uint8_t> ys(yb);
    rmsnorm_f32__ref(x.data(), w.data(), xs.data(), n, rows, eps, 0, rows);
    act_quant_q8_0__ref(xs.data(), ys.data(), n, rows, 0, rows);
    std::vector<float> xn(x.size(), 7.0f);
    std::vector<uint8_t> y(yb, 0xAB);
    rmsnorm_act_quant_q8_0__ref(x.data(), w.data(), xn.data(), y.data(), n, rows, eps, 0, 2);
    rmsnorm_act_quant_q8_0__ref(x.data(), w.data(), xn.data(), y.data(), n, rows, eps, 2, rows);
    EXPECT_EQ(bit_diffs(xn, xs), 0) << n;
    EXPECT_EQ(y, ys) << n;
    std::vector<float> z = x;
    std::vector<uint8_t> yz(yb, 0xAB);
    rmsnorm_act_quant_q8_0__ref(z.data(), w.data(), z.data(), yz.data(), n, rows, eps, 0, rows);
    EXPECT_EQ(bit_diffs(z, xs), 0) << "in place, " << n;
    EXPECT_EQ(yz, ys) << "in place, " << n;
  }
  std::vector<float> x(64, 1.0f), w(64, 1.0f), xn(64, 7.0f);
  std::vector<uint8_t> y(68, 0xAB);
  for (auto [n, b, e] : {std::tuple<int64_t, int64_t, int64_t>{16, 0, 2},
                         {48, 0, 1},
                         {0, 0, 1},
                         {32, -1, 1},
                         {32, 1, 1},
                         {32, 0, 3}})
    rmsnorm_act_quant_q8_0__ref(x.data(), w.data(), xn.data(), y.data(), n, 2, 1e-5f, b, e);
  EXPECT_EQ(xn, std::vector<float>(64, 7.0f));
  EXPECT_EQ(y, std::vector<uint8_t>(68, 0xAB));
}

// mean(x²) = 4 and eps = 0 → scale exactly 0.5.
TEST(RefOps, rmsnorm_f32__ref_hand_vector) {
  const float x[4] = {2, -2, 2, -2}, w[4] = {1, 2, 3, 4};
  float y[4];
  rmsnorm_f32__ref(x, w, y, 4, 1, 0.0f, 0, 1);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[3], -4.0f);
}

struct NormCase {
  const char* model;   // checkpoint folder
  const char* gguf;    // model file (norm weights)
  const char* input;   // checkpoint of x
  const char* weight;  // GGUF tensor
  const char* output;  // checkpoint of the MUL node
  int64_t n;           // normalized width (n_embd or head_dim)
  float eps;
};

// The same computation as llama.cpp, bit for bit, on every stored norm of layer 0 / the
// output norm. eps is the op parameter stored in index.json (1e-5f or 1e-6f).
TEST(RefOpsCheckpoint, rmsnorm_f32__ref_bit_exact) {
  const NormCase cases[] = {
      {"stories260K", "stories260K.gguf", "embd", "blk.0.attn_norm.weight", "attn_norm-0", 64,
       1e-5f},
      {"stories260K", "stories260K.gguf", "ffn_inp-0", "blk.0.ffn_norm.weight", "ffn_norm-0", 64,
       1e-5f},
      {"stories260K", "stories260K.gguf", "l_out-4", "output_norm.weight", "result_norm", 64,
       1e-5f},
      {"synth-gemma3-F32", "synthetic/synth-gemma3-F32.gguf", "inp_scaled",
       "blk.0.attn_norm.weight", "attn_norm-0", 256, 1e-6f},
      {"synth-gemma3-F32", "synthetic/synth-gemma3-F32.gguf", "Qcur-0", "blk.0.attn_q_norm.weight",
       "Qcur_normed-0", 64, 1e-6f},
      {"synth-gemma3-F32", "synthetic/synth-gemma3-F32.gguf", "Kcur-0", "blk.0.attn_k_norm.weight",
       "Kcur_normed-0", 64, 1e-6f},
      {"synth-gemma3-F32", "synthetic/synth-gemma3-F32.gguf", "node_34",
       "blk.0.post_attention_norm.weight", "attn_post_norm-0", 256, 1e-6f},
      {"synth-llama-Q4_K_M", "synthetic/synth-llama-Q4_K_M.gguf", "embd", "blk.0.attn_norm.weight",
       "attn_norm-0", 256, 1e-5f},
  };
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  for (const NormCase& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.output);
    const auto x = read_f32(shared_path(ckpt_rel(c.model, c.input)));
    const auto want = read_f32(shared_path(ckpt_rel(c.model, c.output)));
    const auto w = gguf_f32(shared_path(std::string("models/") + c.gguf), c.weight);
    ASSERT_FALSE(x.empty());
    ASSERT_EQ(x.size(), want.size());
    ASSERT_EQ(int64_t(w.size()), c.n);
    std::vector<float> y(x.size());
    const int64_t rows = int64_t(x.size()) / c.n;
    rmsnorm_f32__ref(x.data(), w.data(), y.data(), c.n, rows, c.eps, 0, rows);
    EXPECT_EQ(bit_diffs(y, want), 0) << "nmse " << nmse(y, want);
  }
}

}  // namespace
}  // namespace cke::test
