// The mixture-of-experts reference kernels (ops.h §9): their definitions on synthetic rows
// (softmax in ggml's order, ties, the renormalisation, ggml's pair order), and bit-identity
// with llama.cpp's ffn_moe_* nodes of the qwen3moe checkpoints (`once_upon`, 5 tokens).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

// ggml's soft_max row written out for n < 16 (no SIMD group: libm expf for every element).
std::vector<float> softmax_scalar(const std::vector<float>& x) {
  float max = -INFINITY;
  for (float v : x) max = max > v ? max : v;
  double sum = 0;
  std::vector<float> p(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    p[i] = std::exp(x[i] - max);
    sum += p[i];
  }
  const float s = float(1.0 / sum);
  for (float& v : p) v *= s;
  return p;
}

TEST(RefOps, moe_route_softmax_norm_f32__ref) {
  // n_expert < 16: every value by the scalar definition, selection by probability.
  for (int64_t E : {2, 4, 8, 15}) {
    for (int64_t used = 1; used <= std::min<int64_t>(E, 4); ++used) {
      const int64_t T = 7;
      const auto logits = randn(size_t(E * T), uint32_t(E * 10 + used), 2.0f);
      std::vector<int32_t> ids(static_cast<size_t>(used * T), -1);
      std::vector<float> w(static_cast<size_t>(used * T), -1.0f);
      moe_route_softmax_norm_f32__ref(logits.data(), ids.data(), w.data(), E, used, T, 0, T);
      for (int64_t t = 0; t < T; ++t) {
        const std::vector<float> row(logits.begin() + t * E, logits.begin() + t * E + E);
        const auto p = softmax_scalar(row);
        std::vector<int32_t> order(static_cast<size_t>(E));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
        double sum = 0;
        for (int64_t s = 0; s < used; ++s) sum += p[size_t(order[size_t(s)])];
        const float fs = std::max(float(sum), 6.103515625e-5f);
        for (int64_t s = 0; s < used; ++s) {
          EXPECT_EQ(ids[size_t(t * used + s)], order[size_t(s)]) << "E=" << E << " t=" << t;
          EXPECT_EQ(w[size_t(t * used + s)], p[size_t(order[size_t(s)])] / fs);
        }
      }
    }
  }
  // Ties: for n_expert <= 16 std::sort is an insertion sort (stable): equal probabilities
  // keep expert order, as ggml's argsort of the same row does.
  {
    const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f, 2.0f, 0.5f};
    int32_t ids[3];
    float w[3];
    moe_route_softmax_norm_f32__ref(logits.data(), ids, w, 6, 3, 1, 0, 1);
    EXPECT_EQ(ids[0], 1);
    EXPECT_EQ(ids[1], 2);
    EXPECT_EQ(ids[2], 4);
    EXPECT_EQ(w[0], w[1]);
    EXPECT_EQ(w[1], w[2]);
  }
  // n_expert >= 16: the 16-groups through ggml_v_expf, each group's reduce_add into the
  // double sum; the selection is the top of the probabilities, the weights sum to ~1.
  for (int64_t E : {16, 20, 64, 128}) {
    const int64_t used = 8, T = 5;
    const auto logits = randn(size_t(E * T), uint32_t(E), 3.0f);
    std::vector<int32_t> ids(static_cast<size_t>(used * T));
    std::vector<float> w(static_cast<size_t>(used * T));
    moe_route_softmax_norm_f32__ref(logits.data(), ids.data(), w.data(), E, used, T, 0, T);
    for (int64_t t = 0; t < T; ++t) {
      const float* l = &logits[size_t(t * E)];
      float max = -INFINITY;
      for (int64_t i = 0; i < E; ++i) max = max > l[i] ? max : l[i];
      std::vector<float> e(static_cast<size_t>(E));
      double sum = 0;
      int64_t i = 0;
      for (; i + 15 < E; i += 16) {
        for (int k = 0; k < 16; ++k) e[size_t(i + k)] = cke::ref::ggml_expf(l[i + k] - max);
        sum += cke::ref::reduce_add16(&e[size_t(i)]);
      }
      for (; i < E; ++i) sum += (e[size_t(i)] = std::exp(l[i] - max));
      const float s = float(1.0 / sum);
      std::set<int32_t> seen;
      float prev = INFINITY, total = 0;
      double acc = 0;
      for (int64_t k = 0; k < used; ++k) {
        const int32_t id = ids[size_t(t * used + k)];
        ASSERT_GE(id, 0);
        ASSERT_LT(id, E);
        EXPECT_TRUE(seen.insert(id).second) << "expert chosen twice";
        const float p = e[size_t(id)] * s;
        EXPECT_LE(p, prev);  // descending
        prev = p;
        acc += p;
        total += w[size_t(t * used + k)];
      }
      for (int64_t k = 0; k < E; ++k)  // nothing left out is more probable
        if (!seen.count(int32_t(k))) {
          EXPECT_LE(e[size_t(k)] * s, prev);
        }
      for (int64_t k = 0; k < used; ++k)
        EXPECT_EQ(w[size_t(t * used + k)], e[size_t(ids[size_t(t * used + k)])] * s / float(acc));
      EXPECT_NEAR(total, 1.0f, 1e-5f);
    }
  }
  // A row range writes only its tokens.
  const auto logits = randn(40, 3);
  std::vector<int32_t> ids(20, -9);
  std::vector<float> w(20, -9.0f);
  moe_route_softmax_norm_f32__ref(logits.data(), ids.data(), w.data(), 4, 2, 10, 3, 5);
  for (int64_t t = 0; t < 10; ++t) EXPECT_EQ(ids[size_t(2 * t)] != -9, t >= 3 && t < 5) << t;
}

TEST(RefOps, moe_group__ref) {
  // ggml's mul_mat_id order: per expert, tokens ascending then slots.
  const std::vector<int32_t> ids = {2, 0, 0, 2, 1, 0};  // T = 3 tokens, 2 slots
  std::vector<int32_t> sched(8, -1), rows(12, -1);
  moe_group__ref(ids.data(), sched.data(), rows.data(), 4, 2, 3);
  EXPECT_EQ(sched, (std::vector<int32_t>{3, 1, 2, 0, 0, 3, 4, 6}));
  // sorted pairs: e0: (t0 s1), (t1 s0), (t2 s1); e1: (t2 s0); e2: (t0 s0), (t1 s1)
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.begin() + 6),
            (std::vector<int32_t>{0, 1, 2, 2, 0, 1}));
  EXPECT_EQ(std::vector<int32_t>(rows.begin() + 6, rows.end()),
            (std::vector<int32_t>{4, 0, 1, 5, 3, 2}));
}

TEST(RefOps, moe_gather_f32__ref) {
  const auto x = randn(3 * 5, 17);
  const std::vector<int32_t> rows = {2, 0, 2, 1, -7, -7, -7, -7};
  std::vector<float> y(4 * 5, 9.0f);
  moe_gather_f32__ref(x.data(), rows.data(), y.data(), 5, 4, 1, 4);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(y[size_t(i)], 9.0f);  // pair 0 is outside [1, 4)
    EXPECT_EQ(y[size_t(5 + i)], x[size_t(i)]);
    EXPECT_EQ(y[size_t(10 + i)], x[size_t(10 + i)]);
    EXPECT_EQ(y[size_t(15 + i)], x[size_t(5 + i)]);
  }
}

TEST(RefOps, moe_combine_f32__ref) {
  // 3 slots: ((x0 * w0) + x1 * w1) + x2 * w2, each step rounded to float.
  const int64_t n = 37, used = 3, T = 2;
  const auto x = randn(size_t(n * used * T), 5, 10.0f);
  const auto w = randn(size_t(used * T), 6);
  const std::vector<int32_t> rows = {0, 0, 0, 1, 1, 1, /* pos */ 5, 0, 3, 1, 4, 2};
  std::vector<float> y(static_cast<size_t>(n * T));
  moe_combine_f32__ref(x.data(), w.data(), rows.data(), y.data(), n, used, T, 0, T);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0;
      for (int64_t s = 0; s < used; ++s) {
        const float v =
            x[size_t(rows[size_t(used * T + t * used + s)] * n + i)] * w[size_t(t * used + s)];
        acc = s == 0 ? v : acc + v;
      }
      EXPECT_EQ(y[size_t(t * n + i)], acc);
    }
}

// llama.cpp's own routing and weighted sum, bit for bit: ffn_moe_logits -> ffn_moe_topk and
// ffn_moe_weights_norm; ffn_moe_down with those weights -> ffn_moe_out.
TEST(RefOpsCheckpoint, moe_route_and_combine_bit_exact) {
  const std::string stem = "synth-qwen3moe-F32";
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/" + stem);
  const int64_t E = 4, used = 2, T = 5, n = 256;
  for (const std::string L : {"0", "1"}) {
    SCOPED_TRACE("layer " + L);
    const auto logits = read_f32(shared_path(ckpt_rel(stem, "ffn_moe_logits-" + L)));
    const auto topk = read_f32(shared_path(ckpt_rel(stem, "ffn_moe_topk-" + L)));
    const auto wn = read_f32(shared_path(ckpt_rel(stem, "ffn_moe_weights_norm-" + L)));
    const auto down = read_f32(shared_path(ckpt_rel(stem, "ffn_moe_down-" + L)));
    const auto out = read_f32(shared_path(ckpt_rel(stem, "ffn_moe_out-" + L)));
    ASSERT_EQ(logits.size(), size_t(E * T));
    ASSERT_EQ(topk.size(), size_t(used * T));
    ASSERT_EQ(down.size(), size_t(n * used * T));
    std::vector<int32_t> ids(static_cast<size_t>(used * T));
    std::vector<float> w(static_cast<size_t>(used * T));
    moe_route_softmax_norm_f32__ref(logits.data(), ids.data(), w.data(), E, used, T, 0, T);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(float(ids[i]), topk[i]) << i;
    EXPECT_EQ(bit_diffs(w, wn), 0);
    // ffn_moe_down is in (slot, token) order: pos(s, t) = t * used + s.
    std::vector<int32_t> rows(static_cast<size_t>(2 * used * T));
    for (int64_t j = 0; j < used * T; ++j) {
      rows[size_t(j)] = int32_t(j / used);
      rows[size_t(used * T + j)] = int32_t(j);
    }
    std::vector<float> y(static_cast<size_t>(n * T));
    moe_combine_f32__ref(down.data(), wn.data(), rows.data(), y.data(), n, used, T, 0, T);
    EXPECT_EQ(bit_diffs(y, out), 0) << "nmse " << nmse(y, out);
  }
}

}  // namespace
}  // namespace cke::test
