// kv_store / attention: softmax attention in double with a bound derived from the data,
// exact cases by construction, and bit-identity with llama.cpp's KQ, soft_max, KQV nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/formats/quant.h"
#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

TEST(RefOps, kv_store_f32__ref) {
  // kv_dim 2, n_ctx 4; store 2 tokens at cells 1, 2.
  const float k[4] = {1, 2, 3, 4}, v[4] = {5, 6, 7, 8};  // token 0: (1,2)/(5,6)
  std::vector<float> kc(8, -1.0f), vc(8, -1.0f);
  // As the plan's split runs it: token 1, then token 0 (the range ABI: [begin, end) of T).
  kv_store_f32__ref(k, v, kc.data(), vc.data(), 2, 4, 1, 2, 1, 2);
  kv_store_f32__ref(k, v, kc.data(), vc.data(), 2, 4, 1, 2, 0, 1);
  const std::vector<float> kwant = {-1, -1, 1, 2, 3, 4, -1, -1};
  // V transposed: channel c row of 4 cells.
  const std::vector<float> vwant = {-1, 5, 7, -1, -1, 6, 8, -1};
  EXPECT_EQ(kc, kwant);
  EXPECT_EQ(vc, vwant);
  // Out of range: nothing written.
  kv_store_f32__ref(k, v, kc.data(), vc.data(), 2, 4, 3, 2, 0, 2);
  EXPECT_EQ(kc, kwant);
  EXPECT_EQ(vc, vwant);
  kv_store_f32__ref(k, v, kc.data(), vc.data(), 2, 4, 1, 2, 1, 3);  // range past T
  EXPECT_EQ(kc, kwant);
  EXPECT_EQ(vc, vwant);
}

struct Attn {
  int64_t hd, nh, nkv, n_ctx, pos0, T, window;
  float scale;
  std::vector<float> q, kc, vc, out;
};

// Random Q for this chunk, caches filled for cells 0 .. pos0+T−1 (history, then the chunk).
Attn make_case(int64_t hd, int64_t nh, int64_t nkv, int64_t pos0, int64_t T, int64_t window,
               uint32_t seed) {
  Attn a{hd, nh, nkv, pos0 + T + 3, pos0, T, window, 1.0f / std::sqrt(float(hd)), {}, {}, {}, {}};
  const int64_t kvd = nkv * hd;
  a.q = randn(size_t(hd * nh * T), seed);
  a.kc.assign(size_t(kvd * a.n_ctx), 0.0f);
  a.vc.assign(size_t(kvd * a.n_ctx), 0.0f);
  const auto k = randn(size_t(kvd * (pos0 + T)), seed + 1), v = randn(k.size(), seed + 2);
  if (pos0 > 0)
    kv_store_f32__ref(k.data(), v.data(), a.kc.data(), a.vc.data(), kvd, a.n_ctx, 0, pos0, 0, pos0);
  kv_store_f32__ref(k.data() + kvd * pos0, v.data() + kvd * pos0, a.kc.data(), a.vc.data(), kvd,
                    a.n_ctx, pos0, T, 0, T);
  a.out.assign(size_t(hd * nh * T), NAN);
  return a;
}

void run(Attn& a, int64_t h0, int64_t h1) {
  attention_f32__ref(a.q.data(), a.kc.data(), a.vc.data(), a.out.data(), a.hd, a.nh, a.nkv, a.n_ctx,
                     a.pos0, a.T, a.scale, a.window, h0, h1);
}

// Attention in double. Error budget of the float kernel, from the data: each score is a
// float dot (≤ hd·2^-24·Σ|q·k|·scale) then scaled (½ ulp); a score error E moves every
// probability by ≤ 2E relative (its own and the max), ggml_expf/sums/scaling add ≤ 2e-6;
// the V·P dot adds len·2^-24·Σ p|v|. So |out − exact| ≤ Σ p|v| · (2E + 2e-6 + len·2^-24).
void check_against_exact(const Attn& a) {
  const int64_t kvd = a.nkv * a.hd, g = a.nh / a.nkv;
  for (int64_t t = 0; t < a.T; ++t) {
    const int64_t p = a.pos0 + t;
    const int64_t first = (a.window > 0 && p - a.window + 1 > 0) ? p - a.window + 1 : 0;
    for (int64_t h = 0; h < a.nh; ++h) {
      const float* q = &a.q[size_t((t * a.nh + h) * a.hd)];
      const int64_t hk = h / g;
      std::vector<double> s(size_t(p + 1));
      double mx = -INFINITY, E = 0;
      for (int64_t j = first; j <= p; ++j) {
        const float* k = &a.kc[size_t(j * kvd + hk * a.hd)];
        double d = 0, mag = 0;
        for (int64_t i = 0; i < a.hd; ++i) {
          d += double(q[i]) * k[i];
          mag += std::fabs(double(q[i]) * k[i]);
        }
        s[j] = d * a.scale;
        E = std::max(E, (a.hd * mag * a.scale + std::fabs(s[j])) * 0x1p-24);
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = first; j <= p; ++j) sum += s[j] = std::exp(s[j] - mx);
      for (int64_t d = 0; d < a.hd; ++d) {
        const float* v = &a.vc[size_t((hk * a.hd + d) * a.n_ctx)];
        double want = 0, pv = 0;
        for (int64_t j = first; j <= p; ++j) {
          want += s[j] / sum * v[j];
          pv += s[j] / sum * std::fabs(v[j]);
        }
        const double tol = pv * (2 * E + 2e-6 + (p + 1) * 0x1p-24);
        const float got = a.out[size_t(t * a.nh * a.hd + h * a.hd + d)];
        EXPECT_NEAR(got, want, tol) << "t " << t << " h " << h << " d " << d;
      }
    }
  }
}

TEST(RefOps, attention_f32__ref) {
  struct C {
    int64_t hd, nh, nkv, pos0, T, window;
  };
  const C cases[] = {
      {8, 8, 4, 0, 5, 0},      // stories shape, GQA 2
      {64, 4, 4, 0, 7, 0},     // GQA 1
      {64, 8, 2, 0, 6, 0},     // GQA 4
      {64, 4, 2, 17, 1, 0},    // decode at pos 17 (vec_dot path)
      {64, 4, 2, 40, 9, 0},    // chunk after a prefix
      {32, 2, 1, 0, 40, 8},    // sliding window: early cells masked, several 16-groups
      {128, 2, 2, 70, 3, 32},  // window with pos0 > 0
      {6, 2, 1, 0, 4, 0},      // head_dim % 4 ≠ 0: vec_dot path in prefill
  };
  for (const C& c : cases) {
    SCOPED_TRACE(testing::Message() << "hd " << c.hd << " nh " << c.nh << "/" << c.nkv << " pos0 "
                                    << c.pos0 << " T " << c.T << " win " << c.window);
    Attn a = make_case(c.hd, c.nh, c.nkv, c.pos0, c.T, c.window, uint32_t(c.hd * 7 + c.T));
    run(a, 0, a.nh);
    check_against_exact(a);
  }
}

// Window 1: every query sees only its own cell, so p = 1 exactly and the output is that
// cell's V, bit for bit (all other products are exact zeros).
TEST(RefOps, attention_f32__ref_all_masked_but_one) {
  Attn a = make_case(16, 4, 2, 3, 5, 1, 99);
  run(a, 0, a.nh);
  for (int64_t t = 0; t < a.T; ++t)
    for (int64_t h = 0; h < a.nh; ++h)
      for (int64_t d = 0; d < a.hd; ++d)
        EXPECT_EQ(a.out[size_t(t * a.nh * a.hd + h * a.hd + d)],
                  a.vc[size_t(((h / 2) * a.hd + d) * a.n_ctx + a.pos0 + t)]);
}

// Head ranges are independent: [0,3) + [3,8) gives the bits of [0,8).
TEST(RefOps, attention_f32__ref_head_split) {
  Attn a = make_case(64, 8, 2, 5, 4, 0, 5);
  Attn b = a;
  run(a, 0, 8);
  run(b, 0, 3);
  run(b, 3, 8);
  EXPECT_EQ(bit_diffs(a.out, b.out), 0);
}

// Shapes the plan must have proved: otherwise nothing is read or written.
TEST(RefOps, attention_f32__ref_rejects_bad_shapes) {
  Attn a = make_case(8, 4, 2, 0, 2, 0, 3);
  auto call = [&](int64_t nh, int64_t nkv, int64_t pos0, int64_t T, int64_t h0, int64_t h1) {
    attention_f32__ref(a.q.data(), a.kc.data(), a.vc.data(), a.out.data(), a.hd, nh, nkv, a.n_ctx,
                       pos0, T, a.scale, 0, h0, h1);
  };
  call(4, 3, 0, 2, 0, 4);            // n_head not a multiple of n_head_kv
  call(4, 2, 0, 2, 0, 5);            // head range beyond n_head
  call(4, 2, a.n_ctx - 1, 2, 0, 4);  // tokens beyond the cache
  call(4, 2, -1, 2, 0, 4);
  for (float v : a.out) EXPECT_TRUE(std::isnan(v));  // still the NaN fill of make_case
}

// Prefill (tinyBLAS lanes) and token-by-token decode (vec_dot lanes) agree to rounding.
TEST(RefOps, attention_f32__ref_prefill_vs_decode) {
  Attn a = make_case(64, 4, 2, 0, 20, 0, 8);
  run(a, 0, a.nh);
  std::vector<float> dec(a.out.size());
  for (int64_t t = 0; t < a.T; ++t)
    attention_f32__ref(a.q.data() + t * a.nh * a.hd, a.kc.data(), a.vc.data(),
                       dec.data() + t * a.nh * a.hd, a.hd, a.nh, a.nkv, a.n_ctx, t, 1, a.scale, 0,
                       0, a.nh);
  EXPECT_LT(nmse(dec, a.out), 1e-12);
}

// ------------------------------------------------------------------------------------------
// Bit-identity with llama.cpp (once_upon, positions 0..4, exact variant).

struct AttnCkpt {
  const char* model;
  int layer;
  const char* q;  // [head_dim, n_head, 5] as attention input (after RoPE / gemma3 scale)
  int64_t hd, nh, nkv;
  float scale;  // soft_max op param
  int64_t window;
};

const AttnCkpt kAttnCkpts[] = {
    {"stories260K", 0, "Qcur-0.2", 8, 8, 4, 0.3535533845424652f, 0},
    {"stories260K", 4, "Qcur-4.2", 8, 8, 4, 0.3535533845424652f, 0},
    {"synth-llama-Q4_K_M", 0, "Qcur-0.2", 64, 4, 2, 0.125f, 0},
    {"synth-llama-Q4_K_M", 1, "Qcur-1.2", 64, 4, 2, 0.125f, 0},
    {"synth-gemma3-F32", 0, "node_9", 64, 4, 2, 1.0f, 32},  // local (window never reached)
    {"synth-gemma3-F32", 1, "node_54", 64, 4, 2, 1.0f, 0},
};

std::vector<float> ck(const AttnCkpt& c, const std::string& name) {
  return read_f32(shared_path(ckpt_rel(c.model, name)));
}
std::string L(const char* base, int layer) {
  return base + std::to_string(layer);
}

// Caches [kv_dim, 256] built by kv_store from the layer's Kcur (after RoPE) and Vcur.
void build_caches(const AttnCkpt& c, std::vector<float>& kc, std::vector<float>& vc) {
  const auto k = ck(c, L("Kcur-", c.layer) + ".2"), v = ck(c, L("Vcur-", c.layer));
  const int64_t kvd = c.nkv * c.hd;
  ASSERT_EQ(k.size(), size_t(kvd * 5));
  ASSERT_EQ(v.size(), size_t(kvd * 5));
  kc.assign(size_t(kvd * 256), 0.0f);
  vc.assign(kc.size(), 0.0f);
  kv_store_f32__ref(k.data(), v.data(), kc.data(), vc.data(), kvd, 256, 0, 5, 0, 5);
}

// K/V cells from kv_store equal ggml's SET_ROWS caches (n_ctx 256, cells ≥ 5 zero).
TEST(RefOpsCheckpoint, kv_store_f32__ref_bit_exact) {
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  int checked = 0;
  for (const AttnCkpt& c : kAttnCkpts) {
    SCOPED_TRACE(std::string(c.model) + " layer " + std::to_string(c.layer));
    std::vector<float> kc, vc;
    build_caches(c, kc, vc);
    if (kc.empty()) continue;
    const auto kwant = ck(c, "cache_k_l" + std::to_string(c.layer) + "__view_");
    if (kwant.empty()) continue;  // stories260K stores the caches of layer 0 only
    EXPECT_EQ(bit_diffs(kc, kwant), 0);
    EXPECT_EQ(bit_diffs(vc, ck(c, "cache_v_l" + std::to_string(c.layer) + "__reshaped___view_")),
              0);
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

// KQ through vec_dot_f32 and the masked softmax, row by row against kq-L / kq_soft_max-L
// ([256, 5, n_head]); cells ≥ 5 must be exact zeros.
TEST(RefOpsCheckpoint, attention_softmax_bit_exact) {
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  for (const AttnCkpt& c : kAttnCkpts) {
    SCOPED_TRACE(std::string(c.model) + " layer " + std::to_string(c.layer));
    const auto q = ck(c, c.q);
    std::vector<float> kc, vc;
    build_caches(c, kc, vc);
    if (kc.empty()) continue;
    const auto kq_want = ck(c, L("kq-", c.layer)), sm_want = ck(c, L("kq_soft_max-", c.layer));
    ASSERT_EQ(sm_want.size(), size_t(256 * 5 * c.nh));
    std::vector<float> kq(sm_want.size(), 0.0f), sm(sm_want.size(), 0.0f);
    const int64_t kvd = c.nkv * c.hd;
    for (int64_t h = 0; h < c.nh; ++h)
      for (int64_t t = 0; t < 5; ++t) {
        float* kr = &kq[size_t((h * 5 + t) * 256)];
        float* row = &sm[size_t((h * 5 + t) * 256)];
        for (int64_t j = 0; j < 5; ++j)  // raw scores of the filled cells
          kr[j] = ref::vec_dot_f32(&kc[size_t(j * kvd + (h / (c.nh / c.nkv)) * c.hd)],
                                   &q[size_t((t * c.nh + h) * c.hd)], c.hd);
        for (int64_t j = 0; j <= t; ++j) row[j] = kr[j] * c.scale;
        ref::softmax_row(row, t + 1, 0);
        for (int64_t j = t + 1; j < 256; ++j) row[j] = 0.0f;
        for (int64_t j = 5; j < 256; ++j) kr[j] = kq_want[size_t((h * 5 + t) * 256 + j)];
      }
    EXPECT_EQ(bit_diffs(kq, kq_want), 0) << "nmse " << nmse(kq, kq_want);
    EXPECT_EQ(bit_diffs(sm, sm_want), 0) << "nmse " << nmse(sm, sm_want);
  }
}

// The whole kernel: Q + caches → kqv_out-L ([n_head·head_dim, 5]).
TEST(RefOpsCheckpoint, attention_f32__ref_bit_exact) {
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  for (const AttnCkpt& c : kAttnCkpts) {
    SCOPED_TRACE(std::string(c.model) + " layer " + std::to_string(c.layer));
    const auto q = ck(c, c.q);
    std::vector<float> kc, vc;
    build_caches(c, kc, vc);
    if (kc.empty()) continue;
    const auto want = ck(c, L("kqv_out-", c.layer));
    ASSERT_EQ(want.size(), size_t(c.hd * c.nh * 5));
    std::vector<float> out(want.size());
    attention_f32__ref(q.data(), kc.data(), vc.data(), out.data(), c.hd, c.nh, c.nkv, 256, 0, 5,
                       c.scale, c.window, 0, c.nh);
    EXPECT_EQ(bit_diffs(out, want), 0) << "nmse " << nmse(out, want);
  }
}

}  // namespace
}  // namespace cke::test

// --- F16 cache, flash attention (contract attention.f16_flash.ggml) ----------------------
namespace cke::test {
namespace {

TEST(RefOps, kv_store_f16__ref) {
  // kv_dim 2, n_ctx 4; 2 tokens at cells 1, 2; both caches cell-major. 1/3 rounds to fp16.
  const float k[4] = {1, 2, 3, 1.0f / 3.0f}, v[4] = {5, 6, 7, -8};
  std::vector<uint16_t> kc(8, 0xFFFF), vc(8, 0xFFFF);
  kv_store_f16__ref(k, v, kc.data(), vc.data(), 2, 4, 1, 2, 1, 2);  // token 1, then token 0
  kv_store_f16__ref(k, v, kc.data(), vc.data(), 2, 4, 1, 2, 0, 1);
  const std::vector<uint16_t> kwant = {0xFFFF, 0xFFFF, 0x3C00, 0x4000,
                                       0x4200, 0x3555, 0xFFFF, 0xFFFF};
  const std::vector<uint16_t> vwant = {0xFFFF, 0xFFFF, 0x4500, 0x4600,
                                       0x4700, 0xC800, 0xFFFF, 0xFFFF};
  EXPECT_EQ(kc, kwant);
  EXPECT_EQ(vc, vwant);
  kv_store_f16__ref(k, v, kc.data(), vc.data(), 2, 4, 3, 2, 0, 2);  // out of range: nothing written
  EXPECT_EQ(kc, kwant);
}

struct FlashCase {
  int64_t hd, nh, nkv, pos0, T, window;
};

// Against softmax attention in double on the same fp16 K/V (and, for T < 64, fp16 Q): the
// value accumulator is rounded to fp16 after every cell, so the bound grows with the visible
// cells: (cells + 2) * 2^-11 * max|V| (plus the f32 score error, far smaller).
void check_flash(const FlashCase& c, uint32_t seed) {
  const int64_t kvd = c.nkv * c.hd, n_ctx = c.pos0 + c.T + 3;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(size_t(c.hd * c.nh * c.T)), out(q.size(), -7.0f);
  std::vector<uint16_t> kc(size_t(kvd * n_ctx)), vc(kc.size());
  for (float& x : q) x = nd(rng);
  for (size_t i = 0; i < kc.size(); ++i) {
    kc[i] = fp32_to_fp16(nd(rng));
    vc[i] = fp32_to_fp16(nd(rng));
  }
  const float scale = 1.0f / std::sqrt(float(c.hd));
  attention_f16_flash__ref(q.data(), kc.data(), vc.data(), out.data(), c.hd, c.nh, c.nkv, n_ctx,
                           c.pos0, c.T, scale, c.window, 0, c.nh);
  const bool q16 = c.T < 64;
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.nh; ++h) {
      const int64_t p = c.pos0 + t, hk = h / (c.nh / c.nkv);
      const int64_t first = c.window > 0 ? std::max<int64_t>(0, p - c.window + 1) : 0;
      const float* qh = &q[size_t((t * c.nh + h) * c.hd)];
      std::vector<double> s;
      double mx = -INFINITY, vmax = 0;
      for (int64_t j = first; j <= p; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < c.hd; ++d) {
          const double qd = q16 ? fp16_to_fp32(fp32_to_fp16(qh[d])) : qh[d];
          dot += qd * fp16_to_fp32(kc[size_t(j * kvd + hk * c.hd + d)]);
        }
        s.push_back(dot * scale);
        mx = std::max(mx, s.back());
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < c.hd; ++d) {
        double want = 0;
        for (int64_t j = first; j <= p; ++j) {
          const double vd = fp16_to_fp32(vc[size_t(j * kvd + hk * c.hd + d)]);
          vmax = std::max(vmax, std::fabs(vd));
          want += s[size_t(j - first)] / sum * vd;
        }
        const double bound = double(p - first + 3) * std::ldexp(1.0, -11) * vmax + 1e-5;
        EXPECT_NEAR(out[size_t((t * c.nh + h) * c.hd + d)], want, bound)
            << "t " << t << " h " << h << " d " << d;
      }
    }
}

TEST(RefOps, attention_f16_flash__ref) {
  const FlashCase cases[] = {
      {8, 8, 4, 0, 5, 0},       // stories shape, one-chunk loop
      {64, 4, 2, 17, 1, 0},     // decode
      {64, 4, 2, 40, 9, 8},     // window
      {64, 4, 2, 0, 70, 0},     // tiled loop (T >= 64), two row groups past 64 cells
      {32, 2, 1, 30, 100, 20},  // tiled with a window
  };
  for (const FlashCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "hd " << c.hd << " T " << c.T << " win " << c.window);
    check_flash(c, uint32_t(c.hd * 5 + c.T));
  }
}

// Window 1: every query sees only its own cell, so both loops give that cell's V exactly
// (weight 1, the rest 0, S = 1).
TEST(RefOps, attention_f16_flash__ref_window_one_is_exact) {
  for (int64_t T : {3, 64, 80}) {
    const int64_t hd = 64, nh = 2, nkv = 1, n_ctx = T;
    std::mt19937 rng{uint32_t(T)};
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> q(size_t(hd * nh * T)), out(q.size());
    std::vector<uint16_t> kc(size_t(hd * n_ctx)), vc(kc.size());
    for (float& x : q) x = nd(rng);
    for (size_t i = 0; i < kc.size(); ++i) {
      kc[i] = fp32_to_fp16(nd(rng));
      vc[i] = fp32_to_fp16(nd(rng));
    }
    attention_f16_flash__ref(q.data(), kc.data(), vc.data(), out.data(), hd, nh, nkv, n_ctx, 0, T,
                             0.125f, 1, 0, nh);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < nh; ++h)
        for (int64_t d = 0; d < hd; ++d)
          ASSERT_EQ(out[size_t((t * nh + h) * hd + d)], fp16_to_fp32(vc[size_t(t * hd + d)]))
              << "T " << T << " t " << t << " d " << d;
  }
}

}  // namespace
}  // namespace cke::test
