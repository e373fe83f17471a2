// The reference expert matmuls (linear_id_<w>_f32__ref, ggml's MUL_MAT_ID), one TEST per
// provider id: on random routings of pairs over experts (grouped by moe_group__ref), every
// output is (a) bit for bit the linear reference of its format on that expert's rows for that
// one pair (T = 1: ggml's mul_mat_id computes each (row, pair) with vec_dot, and its repacked
// path one gemv per pair), and (b) within the independent oracle's bound (linear_oracle.h).
// Rows outside [n0, n1) and experts without pairs are not touched. Then bit-identity with
// llama.cpp's MUL_MAT_ID nodes of the qwen3moe checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/ref/ops.h"
#include "kernels/registry.h"
#include "linear_oracle.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

using LinearIdFn = void (*)(const void*, const void*, const int32_t*, float*, int64_t, int64_t,
                            int64_t, int64_t, int64_t, int64_t);

constexpr double kU = 1.0 / (1 << 24);

struct Grouped {
  std::vector<int32_t> ids, sched, rows;
};
Grouped group(int64_t E, int64_t n_used, int64_t T, std::mt19937& rng) {
  Grouped g;
  g.sched.resize(static_cast<size_t>(2 * E));
  g.rows.resize(static_cast<size_t>(2 * n_used * T));
  std::vector<int32_t> perm(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    g.ids.insert(g.ids.end(), perm.begin(), perm.begin() + n_used);
  }
  moe_group__ref(g.ids.data(), g.sched.data(), g.rows.data(), E, n_used, T);
  return g;
}

void check_provider(const std::string& id) {
  const KernelSymbol* s = find_kernel_symbol(id);
  ASSERT_NE(s, nullptr) << id;
  ASSERT_EQ(s->n_args, 10);
  const auto fn = reinterpret_cast<LinearIdFn>(s->fn);
  // The linear reference of the same format: "linear_id_<w>_f32__ref" -> "linear_<w>_f32__ref".
  const std::string lin = "linear_" + id.substr(std::string("linear_id_").size());
  const Provider& p = provider(lin);
  const bool repacked = p.repacked();
  const DType at = act_type_for(p.wtype);
  const ActStepFn step = act_step_for(p.wtype, false);  // the plain quantizer, every pair
  std::mt19937 rng(31);
  const int64_t bs = dtype_info(p.wtype).block_size;
  for (auto [K, N, E, n_used, T] :
       std::vector<std::array<int64_t, 5>>{{bs == 1 ? 100 : bs, 8, 4, 2, 1},
                                           {bs == 1 ? 64 : 2 * bs, 16, 6, 3, 5},
                                           {bs == 1 ? 256 : bs, 24, 8, 2, 11}}) {
    SCOPED_TRACE(::testing::Message() << id << " K=" << K << " N=" << N << " E=" << E);
    const int64_t P = n_used * T;
    const auto w = random_weights(p.wtype, K, N * E, rng);
    const auto xf = randn(static_cast<size_t>(K * P), 9, 1.5f);
    const auto x = convert_activations(step, at, xf.data(), K, P);
    const Grouped g = group(E, n_used, T, rng);
    std::vector<float> y(static_cast<size_t>(N * P), -7.0f);
    fn(x.data(), w.data(), g.sched.data(), y.data(), K, N, E, P, 1, N - 1);
    const size_t wexp = row_bytes(p.wtype, K) * size_t(N), arow = row_bytes(at, K);
    const int64_t h = repacked ? rounding_steps_repacked(p, K, false) : rounding_steps(p, K);
    const double gamma = h * kU / (1 - h * kU);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t count = g.sched[size_t(e)], first = g.sched[size_t(E + e)];
      for (int64_t j = first; j < first + count; ++j) {
        std::vector<float> one(static_cast<size_t>(N), -7.0f);
        p.fn(x.data() + j * arow, w.data() + e * wexp, one.data(), K, N, 1, 1, N - 1);
        for (int64_t n = 0; n < N; ++n) {
          const float got = y[size_t(j * N + n)];
          ASSERT_EQ(std::memcmp(&got, &one[size_t(n)], 4), 0) << "pair " << j << " row " << n;
          if (n == 0 || n == N - 1) continue;
          const OracleDot o =
              oracle_dot(p, w.data() + e * wexp + n * row_bytes(p.wtype, K), &xf[j * K], K);
          EXPECT_LE(std::fabs(got - o.value), gamma * o.mag) << "pair " << j << " row " << n;
        }
      }
    }
  }
  // Calls outside the contract write nothing.
  const int64_t K = bs == 1 ? 32 : bs, N = 4, E = 2, P = 2;
  const auto w = random_weights(p.wtype, K, N * E, rng);
  const auto xf = randn(static_cast<size_t>(K * P), 3);
  const auto x = convert_activations(step, at, xf.data(), K, P);
  const std::vector<int32_t> past = {2, 1, 1, 2};  // every expert past P
  std::vector<float> y(static_cast<size_t>(N * P), 3.0f);
  fn(x.data(), w.data(), past.data(), y.data(), K, N, E, P, 0, N);
  fn(x.data(), w.data(), past.data(), y.data(), K, N, 0, P, 0, N);
  for (float v : y) EXPECT_EQ(v, 3.0f);
}

TEST(RefLinear, linear_id_f32_f32__ref) {
  check_provider("linear_id_f32_f32__ref");
}
TEST(RefLinear, linear_id_f16_f32__ref) {
  check_provider("linear_id_f16_f32__ref");
}
TEST(RefLinear, linear_id_bf16_f32__ref) {
  check_provider("linear_id_bf16_f32__ref");
}
TEST(RefLinear, linear_id_q8_0_f32__ref) {
  check_provider("linear_id_q8_0_f32__ref");
}
TEST(RefLinear, linear_id_q4_0_f32__ref) {
  check_provider("linear_id_q4_0_f32__ref");
}
TEST(RefLinear, linear_id_q4_0x8_f32__ref) {
  check_provider("linear_id_q4_0x8_f32__ref");
}
TEST(RefLinear, linear_id_q4_1_f32__ref) {
  check_provider("linear_id_q4_1_f32__ref");
}
TEST(RefLinear, linear_id_q5_0_f32__ref) {
  check_provider("linear_id_q5_0_f32__ref");
}
TEST(RefLinear, linear_id_q5_1_f32__ref) {
  check_provider("linear_id_q5_1_f32__ref");
}
TEST(RefLinear, linear_id_q2_K_f32__ref) {
  check_provider("linear_id_q2_K_f32__ref");
}
TEST(RefLinear, linear_id_q2_Kx8_f32__ref) {
  check_provider("linear_id_q2_Kx8_f32__ref");
}
TEST(RefLinear, linear_id_q3_K_f32__ref) {
  check_provider("linear_id_q3_K_f32__ref");
}
TEST(RefLinear, linear_id_q4_K_f32__ref) {
  check_provider("linear_id_q4_K_f32__ref");
}
TEST(RefLinear, linear_id_q4_Kx8_f32__ref) {
  check_provider("linear_id_q4_Kx8_f32__ref");
}
TEST(RefLinear, linear_id_q5_K_f32__ref) {
  check_provider("linear_id_q5_K_f32__ref");
}
TEST(RefLinear, linear_id_q6_K_f32__ref) {
  check_provider("linear_id_q6_K_f32__ref");
}

// llama.cpp's MUL_MAT_ID nodes of synth-qwen3moe-F32 (`once_upon`, 5 tokens, 2 of 4 experts):
// ffn_moe_gate / up from ffn_norm, ffn_moe_down from ffn_moe_swiglu, with ffn_moe_topk's
// routing, [rows, slot, token] in ggml's order. Bit for bit (ggml_vec_dot_f32 per output).
TEST(RefLinearGgml, linear_id_f32_f32__ref_synth_qwen3moe_F32) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-qwen3moe-F32.gguf");
  const std::string stem = "synth-qwen3moe-F32";
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/" + stem);
  gguf::GgufError err;
  auto file = gguf::File::open(model, &err);
  ASSERT_TRUE(file) << err.message;
  const int64_t T = 5, n_used = 2, E = 4;
  for (const std::string L : {"0", "1"}) {
    const auto topk = read_f32(shared_path(ckpt_rel(stem, "ffn_moe_topk-" + L)));
    ASSERT_EQ(topk.size(), size_t(n_used * T));
    std::vector<int32_t> ids(topk.begin(), topk.end());
    std::vector<int32_t> sched(static_cast<size_t>(2 * E)), rows(size_t(2 * n_used * T));
    moe_group__ref(ids.data(), sched.data(), rows.data(), E, n_used, T);
    const int32_t* pos = rows.data() + n_used * T;
    struct Case {
      std::string weight, input, output;
      bool per_token;  // the input is one row per token (gate, up), else one per (slot, token)
    };
    for (const Case& c : {Case{"ffn_gate_exps", "ffn_norm-", "ffn_moe_gate-", true},
                          Case{"ffn_up_exps", "ffn_norm-", "ffn_moe_up-", true},
                          Case{"ffn_down_exps", "ffn_moe_swiglu-", "ffn_moe_down-", false}}) {
      SCOPED_TRACE(c.output + L);
      const gguf::TensorInfo* t = file->tensor("blk." + L + "." + c.weight + ".weight");
      ASSERT_TRUE(t);
      const int64_t K = t->ne[0], N = t->ne[1];
      ASSERT_EQ(t->ne[2], E);
      const auto in = read_f32(shared_path(ckpt_rel(stem, c.input + L)));
      const auto want = read_f32(shared_path(ckpt_rel(stem, c.output + L)));
      ASSERT_EQ(want.size(), size_t(N * n_used * T));
      // The sorted pairs' rows (moe_gather for the per-token inputs).
      std::vector<float> xs(static_cast<size_t>(K * n_used * T));
      for (int64_t tok = 0; tok < T; ++tok)
        for (int64_t s = 0; s < n_used; ++s) {
          const int64_t j = pos[tok * n_used + s];
          const float* src = &in[size_t((c.per_token ? tok : tok * n_used + s) * K)];
          std::copy(src, src + K, &xs[size_t(j * K)]);
        }
      std::vector<float> y(static_cast<size_t>(N * n_used * T));
      linear_id_f32_f32__ref(xs.data(), t->data, sched.data(), y.data(), K, N, E, n_used * T, 0, N);
      std::vector<float> got(want.size());
      for (int64_t tok = 0; tok < T; ++tok)
        for (int64_t s = 0; s < n_used; ++s) {
          const int64_t j = pos[tok * n_used + s];
          std::copy(&y[size_t(j * N)], &y[size_t(j * N + N)], &got[size_t((tok * n_used + s) * N)]);
        }
      EXPECT_EQ(bit_diffs(got, want), 0) << "nmse " << nmse(got, want);
    }
  }
}

}  // namespace
}  // namespace cke::test
