// add / add_bias / scale: hand vectors (exact small integers and halfway cases), aliasing,
// and bit-identity with llama.cpp's ADD and SCALE nodes.
#include <gtest/gtest.h>

#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

TEST(RefOps, add_f32__ref) {
  const float a[4] = {1.0f, -2.5f, 16777216.0f, 1e30f};
  const float b[4] = {2.0f, 0.5f, 1.0f, -1e30f};
  float y[4];
  add_f32__ref(a, b, y, 4, 1, 4);  // the range ABI: elements [1, 4), then [0, 1)
  add_f32__ref(a, b, y, 4, 0, 1);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 16777216.0f);  // 2^24 + 1 rounds to even
  EXPECT_EQ(y[3], 0.0f);
  float z[4] = {1.0f, -2.5f, 16777216.0f, 1e30f};
  add_f32__ref(z, b, z, 4, 0, 4);  // y aliases a
  for (int i = 0; i < 4; ++i) EXPECT_EQ(z[i], y[i]);
  add_f32__ref(a, b, z, 4, 0, 5);  // a range past n writes nothing
  add_f32__ref(a, b, z, 4, 2, 2);
  EXPECT_EQ(z[0], 3.0f);
  EXPECT_EQ(z[3], 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(z[i], y[i]);
}

TEST(RefOps, add_bias_f32__ref) {
  const float x[6] = {1, 2, 3, 10, 20, 30};  // [n = 3, T = 2]
  const float b[3] = {0.5f, -1.0f, 4.0f};
  float y[6];
  add_bias_f32__ref(x, b, y, 3, 2, 1, 2);  // the range ABI: token 1, then token 0
  add_bias_f32__ref(x, b, y, 3, 2, 0, 1);
  const float want[6] = {1.5f, 1.0f, 7.0f, 10.5f, 19.0f, 34.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]) << i;
  float z[6] = {1, 2, 3, 10, 20, 30};
  add_bias_f32__ref(z, b, z, 3, 2, 0, 2);  // in place
  for (int i = 0; i < 6; ++i) EXPECT_EQ(z[i], want[i]) << i;
  add_bias_f32__ref(x, b, z, 3, 2, 0, 3);  // a range past T writes nothing
  add_bias_f32__ref(x, b, z, 3, 2, 1, 1);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(z[i], want[i]) << i;
}

TEST(RefOps, scale_f32__ref) {
  const float x[3] = {1.5f, -3.0f, 0x1p-149f};
  float y[3];
  scale_f32__ref(x, y, 3, 0.125f, 1, 3);  // the range ABI: elements [1, 3), then [0, 1)
  scale_f32__ref(x, y, 3, 0.125f, 0, 1);
  EXPECT_EQ(y[0], 0.1875f);
  EXPECT_EQ(y[1], -0.375f);
  EXPECT_EQ(y[2], 0.0f);  // the smallest subnormal · 1/8 rounds to 0
  float z[3] = {1.5f, -3.0f, 0x1p-149f};
  scale_f32__ref(z, z, 3, 0.125f, 0, 3);
  EXPECT_EQ(z[0], y[0]);
  scale_f32__ref(x, z, 3, 2.0f, -1, 3);  // a range outside n writes nothing
  scale_f32__ref(x, z, 3, 2.0f, 2, 1);
  EXPECT_EQ(z[0], y[0]);
  EXPECT_EQ(z[1], y[1]);
}

struct BinCase {
  const char* model;
  const char* a;
  const char* b;
  const char* out;
};

TEST(RefOpsCheckpoint, add_f32__ref_bit_exact) {
  const BinCase cases[] = {
      {"stories260K", "attn_out-0", "embd", "ffn_inp-0"},
      {"stories260K", "ffn_out-0", "ffn_inp-0", "l_out-0"},
      {"synth-gemma3-F32", "attn_post_norm-0", "inp_scaled", "sa_out-0"},
      {"synth-llama-Q4_K_M", "ffn_out-1", "ffn_inp-1", "l_out-1"},
  };
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  for (const BinCase& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.out);
    const auto a = read_f32(shared_path(ckpt_rel(c.model, c.a)));
    const auto b = read_f32(shared_path(ckpt_rel(c.model, c.b)));
    const auto want = read_f32(shared_path(ckpt_rel(c.model, c.out)));
    ASSERT_FALSE(a.empty());
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), want.size());
    std::vector<float> y(a.size());
    add_f32__ref(a.data(), b.data(), y.data(), int64_t(y.size()), 0, int64_t(y.size()));
    EXPECT_EQ(bit_diffs(y, want), 0);
  }
}

// gemma3: embeddings · √256 and Q · 1/√64 (op params 16 and 0.125 in index.json).
TEST(RefOpsCheckpoint, scale_f32__ref_bit_exact) {
  const struct {
    const char* in;
    const char* out;
    float s;
  } cases[] = {{"embd", "inp_scaled", 16.0f},
               {"Qcur-0.2", "node_9", 0.125f},
               {"Qcur-1.2", "node_54", 0.125f}};
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/synth-gemma3-F32");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.out);
    const auto x = read_f32(shared_path(ckpt_rel("synth-gemma3-F32", c.in)));
    const auto want = read_f32(shared_path(ckpt_rel("synth-gemma3-F32", c.out)));
    ASSERT_FALSE(x.empty());
    ASSERT_EQ(x.size(), want.size());
    std::vector<float> y(x.size());
    scale_f32__ref(x.data(), y.data(), int64_t(x.size()), c.s, 0, int64_t(x.size()));
    EXPECT_EQ(bit_diffs(y, want), 0);
  }
}

}  // namespace
}  // namespace cke::test
