// rope_normal_f32__ref / rope_neox_f32__ref: rotation by pos·base^(−2k/n_rot) computed in
// double, pairing and pass-through by hand, and bit-identity with llama.cpp's ROPE nodes.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

using RopeFn = void (*)(float*, int64_t, int64_t, int64_t, int64_t, int64_t, float, float, int64_t,
                        int64_t);

// Double-precision RoPE with the textbook angle. `neox` picks the pairing.
std::vector<double> rope_exact(const std::vector<float>& x, int64_t hd, int64_t nh, int64_t T,
                               int64_t pos0, int64_t n_rot, double base, double fs, bool neox) {
  std::vector<double> y(x.begin(), x.end());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t k = 0; k < n_rot / 2; ++k) {
        const double th = fs * double(pos0 + t) * std::pow(base, -2.0 * k / double(n_rot));
        const int64_t i0 = neox ? k : 2 * k, i1 = neox ? k + n_rot / 2 : 2 * k + 1;
        const size_t o = size_t((t * nh + h) * hd);
        const double a = x[o + i0], b = x[o + i1];
        y[o + i0] = a * std::cos(th) - b * std::sin(th);
        y[o + i1] = a * std::sin(th) + b * std::cos(th);
      }
  return y;
}

// ggml's angle for pair k is k+1 float roundings away from pos·ts^k (the power itself, then
// one product per pair) and the power's own error is amplified k times: relative error
// ≤ (2k+2)·2^-24 of theta, i.e. an absolute angle error ≤ (2k+2)·2^-24·|theta|. cosf/sinf and
// the FMA forms add a few ulps of |x|. Per element: (|x0|+|x1|)·(angle error + 2^-21).
void check_against_exact(RopeFn fn, bool neox) {
  struct Case {
    int64_t hd, nh, T, pos0, n_rot;
    float base, fs;
  };
  const Case cases[] = {
      {8, 8, 5, 0, 8, 1e4f, 1.0f},       // stories shape
      {64, 4, 3, 37, 64, 1e6f, 1.0f},    // pos0 > 0, qwen/gemma base
      {64, 2, 1, 200, 32, 1e4f, 1.0f},   // n_rot < head_dim, decode
      {128, 1, 2, 5, 128, 5e5f, 0.25f},  // freq_scale ≠ 1
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "hd " << c.hd << " pos0 " << c.pos0 << " n_rot " << c.n_rot);
    auto x = randn(size_t(c.hd * c.nh * c.T), uint32_t(c.hd + c.pos0));
    const auto want = rope_exact(x, c.hd, c.nh, c.T, c.pos0, c.n_rot, c.base, c.fs, neox);
    auto y = x;
    // One call per token (the range ABI): token t's position is pos0 + t in every split.
    for (int64_t t = 0; t < c.T; ++t)
      fn(y.data(), c.hd, c.nh, c.T, c.pos0, c.n_rot, c.base, c.fs, t, t + 1);
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t h = 0; h < c.nh; ++h)
        for (int64_t i = 0; i < c.hd; ++i) {
          const size_t o = size_t((t * c.nh + h) * c.hd + i);
          if (i >= c.n_rot) {  // beyond n_rot: copied bit for bit
            EXPECT_EQ(y[o], x[o]);
            continue;
          }
          const int64_t k = neox ? i % (c.n_rot / 2) : i / 2;
          const int64_t mate =
              neox ? (i < c.n_rot / 2 ? i + c.n_rot / 2 : i - c.n_rot / 2) : (i ^ 1);
          const double th =
              c.fs * double(c.pos0 + t) * std::pow(double(c.base), -2.0 * k / c.n_rot);
          const double mag = std::fabs(x[o]) + std::fabs(x[o - i + mate]);
          const double tol = mag * ((2 * k + 2) * 0x1p-24 * std::fabs(th) + 0x1p-21);
          EXPECT_NEAR(y[o], want[o], tol) << t << " " << h << " " << i;
        }
  }
}

TEST(RefOps, rope_normal_f32__ref) {
  check_against_exact(rope_normal_f32__ref, false);
}
TEST(RefOps, rope_neox_f32__ref) {
  check_against_exact(rope_neox_f32__ref, true);
}

// Position 0 is the identity; the pairing is visible on a unit vector.
TEST(RefOps, rope_pairing_by_hand) {
  float a[4] = {1, 2, 3, 4};
  rope_normal_f32__ref(a, 4, 1, 1, 0, 4, 1e4f, 1.0f, 0, 1);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[3], 4.0f);
  // pos 1, pair 0 angle = 1 rad: normal rotates (x0, x1), neox rotates (x0, x2).
  float n[4] = {1, 0, 0, 0}, x[4] = {1, 0, 0, 0};
  rope_normal_f32__ref(n, 4, 1, 1, 1, 4, 1e4f, 1.0f, 0, 1);
  rope_neox_f32__ref(x, 4, 1, 1, 1, 4, 1e4f, 1.0f, 0, 1);
  EXPECT_FLOAT_EQ(n[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(n[1], std::sin(1.0f));
  EXPECT_EQ(n[2], 0.0f);
  EXPECT_FLOAT_EQ(x[0], std::cos(1.0f));
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_FLOAT_EQ(x[2], std::sin(1.0f));
}

struct RopeCase {
  const char* model;
  const char* input;
  const char* output;
  int64_t hd, nh;
  float base;
  bool neox;
};

// Bit-identity with ggml_compute_forward_rope_flt on the once_upon batch (positions 0..4).
TEST(RefOpsCheckpoint, rope_f32__ref_bit_exact) {
  const RopeCase cases[] = {
      {"stories260K", "Qcur-0", "Qcur-0.2", 8, 8, 1e4f, false},
      {"stories260K", "Kcur-0", "Kcur-0.2", 8, 4, 1e4f, false},
      {"synth-llama-Q4_K_M", "Qcur-0", "Qcur-0.2", 64, 4, 1e4f, false},
      {"synth-llama-Q4_K_M", "Kcur-1", "Kcur-1.2", 64, 2, 1e4f, false},
      {"synth-gemma3-F32", "Qcur_normed-0", "Qcur-0.2", 64, 4, 1e4f, true},  // local layer
      {"synth-gemma3-F32", "Kcur_normed-0", "Kcur-0.2", 64, 2, 1e4f, true},
      {"synth-gemma3-F32", "Qcur_normed-1", "Qcur-1.2", 64, 4, 1e6f, true},  // global layer
      {"synth-gemma3-F32", "Kcur_normed-1", "Kcur-1.2", 64, 2, 1e6f, true},
  };
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  for (const RopeCase& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.output);
    auto x = read_f32(shared_path(ckpt_rel(c.model, c.input)));
    const auto want = read_f32(shared_path(ckpt_rel(c.model, c.output)));
    ASSERT_EQ(x.size(), size_t(c.hd * c.nh * 5));
    ASSERT_EQ(x.size(), want.size());
    (c.neox ? rope_neox_f32__ref : rope_normal_f32__ref)(x.data(), c.hd, c.nh, 5, 0, c.hd, c.base,
                                                         1.0f, 0, 5);
    EXPECT_EQ(bit_diffs(x, want), 0) << "nmse " << nmse(x, want);
  }
}

}  // namespace
}  // namespace cke::test
