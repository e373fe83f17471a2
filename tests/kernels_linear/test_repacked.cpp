// The repacked-arithmetic reference kernels linear_{q4_0,q4_K,q2_K}x8_f32__ref (ggml's
// CPU_REPACK gemm/gemv; contracts linear.<w>x8.ggml, which the resolver picks for matrices
// with a multiple of 8 rows), against an independent model of that arithmetic.
//
// The model here is written per token from the block layouts (per-element decode, ggml's
// get_scale_min_k4 formula, min terms from the quants themselves rather than the bsums
// field): one float accumulator per output and one FMA per block of the ggml kernel's
// granularity (GGML-NUMERICS.md §3.4) -- q4_0 per 32, q4_K per 256 (gemv) / 64 (gemm),
// q2_K per 256 (gemv) / 128 (gemm). Tokens 0 .. 4*floor(T/4)-1 are gemm tokens, the rest
// gemv tokens. The plain path is identified by cke::ref::vec_dot_* (the vec_dot emulation
// the rest of this suite checks). Every identity test also checks that the alternatives
// it tells apart really differ on its data, so a wrong dispatch cannot pass by accident.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/formats/quant.h"
#include "kernels/ref/act_quant.h"
#include "kernels/ref/linear_dot.h"
#include "linear_oracle.h"

namespace cke::test {
namespace {

constexpr double kU = 1.0 / (1 << 24);
const float kNaN = std::numeric_limits<float>::quiet_NaN();

template <class B>
B block_at(const uint8_t* row, int64_t i) {
  B b;
  std::memcpy(&b, row + i * static_cast<int64_t>(sizeof(B)), sizeof(B));
  return b;
}

// ggml's get_scale_min_k4.
void scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

float model_q4_0(const uint8_t* row, const float* x, int64_t K, bool gemm) {
  std::vector<block_q8_0> a(K / 32);
  act_quantize_q8_0(x, a.data(), K);  // ggml's 4x8 Q8_0 quantizer gives the same values
  float acc = 0.0f;
  for (int64_t b = 0; b < K / 32; ++b) {
    const auto w = block_at<block_q4_0>(row, b);
    int32_t isum = 0;
    for (int e = 0; e < 32; ++e) {
      const int q = (e < 16 ? (w.qs[e] & 0xF) : (w.qs[e - 16] >> 4)) - 8;
      const int av = a[b].qs[e];
      int p = q * av;
      // The gemv's vpsignb(activation, weight) wraps -(-128); the gemm's operand order
      // does not (an activation of -128 only comes from a NaN input).
      if (!gemm && av == -128 && q < 0) p = -p;
      isum += p;
    }
    acc = std::fma(static_cast<float>(isum), fp16_to_fp32(w.d) * fp16_to_fp32(a[b].d), acc);
  }
  return acc;
}

// `group` elements of a super-block per FMA pair; q(e) the weight integer, sc(e) / mn(e)
// the scale and min of element e's sub-block.
template <class B, class Q, class Sc, class Mn>
float model_k(const uint8_t* row, const float* x, int64_t K, int group, Q q, Sc sc, Mn mn) {
  std::vector<block_q8_K> a(K / 256);
  act_quantize_q8_K(x, a.data(), K);
  float acc = 0.0f, acc_min = 0.0f;
  for (int64_t i = 0; i < K / 256; ++i) {
    const auto w = block_at<B>(row, i);
    const float d = fp16_to_fp32(w.d) * a[i].d;
    const float dmin = fp16_to_fp32(w.dmin) * a[i].d;
    for (int e0 = 0; e0 < 256; e0 += group) {
      int64_t isum = 0, imin = 0;
      for (int e = e0; e < e0 + group; ++e) {
        isum += int64_t{sc(w, e)} * q(w, e) * a[i].qs[e];
        imin += int64_t{mn(w, e)} * a[i].qs[e];
      }
      acc = std::fma(static_cast<float>(isum), d, acc);
      acc_min = std::fma(static_cast<float>(imin), dmin, acc_min);
    }
  }
  return acc - acc_min;
}

float model_q4_K(const uint8_t* row, const float* x, int64_t K, bool gemm) {
  auto q = [](const block_q4_K& w, int e) {
    const uint8_t byte = w.qs[32 * (e / 64) + e % 32];
    return (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
  };
  auto sc = [](const block_q4_K& w, int e) {
    int s, m;
    scale_min_k4(e / 32, w.scales, &s, &m);
    return s;
  };
  auto mn = [](const block_q4_K& w, int e) {
    int s, m;
    scale_min_k4(e / 32, w.scales, &s, &m);
    return m;
  };
  return model_k<block_q4_K>(row, x, K, gemm ? 64 : 256, q, sc, mn);
}

float model_q2_K(const uint8_t* row, const float* x, int64_t K, bool gemm) {
  auto q = [](const block_q2_K& w, int e) {
    return (w.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
  };
  auto sc = [](const block_q2_K& w, int e) { return w.scales[e / 16] & 0xF; };
  auto mn = [](const block_q2_K& w, int e) { return w.scales[e / 16] >> 4; };
  return model_k<block_q2_K>(row, x, K, gemm ? 128 : 256, q, sc, mn);
}

float plain_q4_0(const uint8_t* row, const float* x, int64_t K) {
  std::vector<block_q8_0> a(K / 32);
  act_quantize_q8_0(x, a.data(), K);
  std::vector<block_q4_0> w(K / 32);
  std::memcpy(w.data(), row, w.size() * sizeof(block_q4_0));
  return ref::vec_dot_q4_0_q8_0(K, w.data(), a.data());
}

template <class B, float (*Dot)(int64_t, const B*, const block_q8_K*)>
float plain_k(const uint8_t* row, const float* x, int64_t K) {
  std::vector<block_q8_K> a(K / 256);
  act_quantize_q8_K(x, a.data(), K);
  std::vector<B> w(K / 256);
  std::memcpy(w.data(), row, w.size() * sizeof(B));
  return Dot(K, w.data(), a.data());
}

struct Format {
  const char* id;        // the repacked reference
  const char* plain_id;  // the plain (vec_dot) reference of the same weight format
  float (*model)(const uint8_t* row, const float* x, int64_t K, bool gemm);
  float (*plain)(const uint8_t* row, const float* x, int64_t K);
  int64_t K;  // a size where the float orders visibly differ
};

const std::vector<Format>& formats() {
  static const std::vector<Format> f = {
      {"linear_q4_0x8_f32__ref", "linear_q4_0_f32__ref", model_q4_0, plain_q4_0, 512},
      {"linear_q4_Kx8_f32__ref", "linear_q4_K_f32__ref", model_q4_K,
       plain_k<block_q4_K, ref::vec_dot_q4_K_q8_K>, 1024},
      {"linear_q2_Kx8_f32__ref", "linear_q2_K_f32__ref", model_q2_K,
       plain_k<block_q2_K, ref::vec_dot_q2_K_q8_K>, 1024},
  };
  return f;
}

std::vector<float> random_acts(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = nd(rng);
  return x;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Each reference computes its own contract's arithmetic whatever N is (the choice between
// them is the resolver's, by the contracts' `when`): the repacked one the model, the plain
// one ggml's vec_dot; the same rows give different bits under the two.
void each_reference_has_one_arithmetic_for_every_N(const Format& f, std::mt19937& rng) {
  const Provider& p = provider(f.id);
  const Provider& plain = provider(f.plain_id);
  const int64_t K = f.K, rows = 25;
  const auto w = random_weights(p.wtype, K, rows, rng);
  const size_t rb = row_bytes(p.wtype, K);
  int64_t told_apart = 0;
  for (int64_t T : {1, 5}) {
    const auto x = random_acts(K * T, rng);
    for (int64_t N : {8, 9, 12, 16, 20, 24, 25}) {
      std::vector<float> y(N * T), yp(N * T);
      p.run(x.data(), w.data(), y.data(), K, N, T, 0, N);
      plain.run(x.data(), w.data(), yp.data(), K, N, T, 0, N);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n) {
          const float* xt = x.data() + t * K;
          const float m = f.model(w.data() + n * rb, xt, K, t < T - T % 4);
          const float pl = f.plain(w.data() + n * rb, xt, K);
          told_apart += !same_bits(m, pl);
          ASSERT_TRUE(same_bits(y[t * N + n], m))
              << "N=" << N << " T=" << T << " t=" << t << " n=" << n << " y=" << y[t * N + n]
              << " model=" << m;
          ASSERT_TRUE(same_bits(yp[t * N + n], pl))
              << f.plain_id << ": N=" << N << " T=" << T << " t=" << t << " n=" << n;
        }
    }
  }
  EXPECT_GT(told_apart, 0) << "plain and repacked arithmetic never differ on this data";
}

// Prefill of T tokens: tokens 0 .. 4*floor(T/4)-1 take the gemm, the rest the gemv.
// q4_0's gemm and gemv differ only for an activation of -128, so its tokens carry a NaN
// (not at element 27 of a block: that one would turn the whole block NaN).
void tokens_split_into_gemm_groups_of_4_and_gemv_rest(const Format& f, std::mt19937& rng) {
  {
    const Provider& p = provider(f.id);
    const int64_t K = f.K, N = 16;
    const auto w = random_weights(p.wtype, K, N, rng);
    const size_t rb = row_bytes(p.wtype, K);
    int64_t told_apart = 0;
    for (int64_t T = 1; T <= 9; ++T) {
      auto x = random_acts(K * T, rng);
      if (p.wtype == DType::Q4_0)
        for (int64_t t = 0; t < T; ++t) x[t * K + 32 + 5] = kNaN;
      // Premise of the model: without +-amax ties the 4x8 Q8_K quantizer equals the plain.
      if (p.act == ActKind::Q8_K) {
        std::vector<block_q8_K> a(K * T / 256), b(K * T / 256);
        act_quantize_q8_K(x.data(), a.data(), K * T);
        act_quantize_q8_K_4x8(x.data(), b.data(), K * T);
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(block_q8_K)));
      }
      std::vector<float> y(N * T);
      p.run(x.data(), w.data(), y.data(), K, N, T, 0, N);
      const int64_t t_gemm = 4 * (T / 4);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t n = 0; n < N; ++n) {
          const float* xt = x.data() + t * K;
          const float gemm = f.model(w.data() + n * rb, xt, K, true);
          const float gemv = f.model(w.data() + n * rb, xt, K, false);
          told_apart += !same_bits(gemm, gemv);
          ASSERT_TRUE(same_bits(y[t * N + n], t < t_gemm ? gemm : gemv))
              << "T=" << T << " t=" << t << " n=" << n << " y=" << y[t * N + n] << " gemm=" << gemm
              << " gemv=" << gemv;
        }
    }
    EXPECT_GT(told_apart, 0) << "gemm and gemv arithmetic never differ on this data";
  }
}

// The gemm tokens really go through the 4x8 Q8_K quantizer: a NaN at element 251 of a
// block survives its amax tree (d = NaN, every output NaN), while the plain quantizer of
// a gemv token rounds that NaN to 0 (output = the one with 0 there).
void gemm_tokens_use_the_4x8_quantizer(const Format& f, std::mt19937& rng) {
  if (provider(f.id).act != ActKind::Q8_K) return;  // (q4_0's gemm quantizer is the plain one)
  {
    const Provider& p = provider(f.id);
    const int64_t K = 512, N = 8, T = 5;
    const auto w = random_weights(p.wtype, K, N, rng);
    auto x = random_acts(K * T, rng);
    auto x0 = x;
    for (int64_t t = 0; t < T; ++t) {
      x[t * K + 256 + 251] = kNaN;
      x0[t * K + 256 + 251] = 0.0f;
    }
    std::vector<float> y(N * T), y0(N * T);
    p.run(x.data(), w.data(), y.data(), K, N, T, 0, N);
    p.run(x0.data(), w.data(), y0.data(), K, N, T, 0, N);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t t = 0; t < 4; ++t) EXPECT_TRUE(std::isnan(y[t * N + n])) << "t=" << t;
      EXPECT_TRUE(same_bits(y[4 * N + n], y0[4 * N + n])) << "gemv token, n=" << n;
    }
  }
}

// Any split of the rows gives the same bits; rows outside [n0, n1) are not written.
void row_split_gives_same_bits(const Format& f, std::mt19937& rng) {
  {
    const Provider& p = provider(f.id);
    const int64_t K = f.K, N = 24, T = 6;
    const auto w = random_weights(p.wtype, K, N, rng);
    const auto x = random_acts(K * T, rng);
    std::vector<float> full(N * T), split(N * T, 99.0f);
    p.run(x.data(), w.data(), full.data(), K, N, T, 0, N);
    p.run(x.data(), w.data(), split.data(), K, N, T, 3, 11);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = 0; n < N; ++n) {
        if (n >= 3 && n < 11)
          EXPECT_TRUE(same_bits(split[t * N + n], full[t * N + n]));
        else
          EXPECT_EQ(split[t * N + n], 99.0f) << "row outside [n0, n1) written";
      }
    p.run(x.data(), w.data(), split.data(), K, N, T, 0, 3);
    p.run(x.data(), w.data(), split.data(), K, N, T, 11, 17);
    p.run(x.data(), w.data(), split.data(), K, N, T, 17, N);
    for (int64_t i = 0; i < N * T; ++i) EXPECT_TRUE(same_bits(split[i], full[i])) << i;
  }
}

// Against the exact oracle (linear_oracle.h) with the float-accumulation bound of the
// repacked arithmetic: gamma_h * sum|terms|, h = rounding_steps_repacked (gemm for the
// first 4 tokens, gemv for the 5th).
void within_float_bound_of_exact_dot(const Format& f, std::mt19937& rng) {
  {
    const Provider& p = provider(f.id);
    const std::vector<int64_t> ks = p.wtype == DType::Q4_0
                                        ? std::vector<int64_t>{32, 256, 4096 + 32}
                                        : std::vector<int64_t>{256, 512, 4096 + 256};
    for (int64_t K : ks) {
      SCOPED_TRACE(::testing::Message() << f.id << " K=" << K);
      const int64_t N = 8, T = 5;
      const auto w = random_weights(p.wtype, K, N, rng);
      const auto x = random_acts(K * T, rng);
      std::vector<float> y(N * T);
      p.run(x.data(), w.data(), y.data(), K, N, T, 0, N);
      const size_t rb = row_bytes(p.wtype, K);
      for (int64_t t = 0; t < T; ++t) {
        const int64_t h = rounding_steps_repacked(p, K, t < 4);
        const double gamma = h * kU / (1 - h * kU);
        for (int64_t n = 0; n < N; ++n) {
          const OracleDot o = oracle_dot(p, w.data() + n * rb, x.data() + t * K, K);
          ASSERT_GT(o.mag, 0.0);
          EXPECT_LE(std::fabs(y[t * N + n] - o.value), gamma * o.mag)
              << "t=" << t << " n=" << n << " y=" << y[t * N + n] << " exact=" << o.value;
        }
      }
    }
  }
}

void check_repacked(const char* id) {
  for (const Format& f : formats()) {
    if (std::string(f.id) != id) continue;
    std::mt19937 rng(31);
    {
      SCOPED_TRACE("one arithmetic for every N");
      each_reference_has_one_arithmetic_for_every_N(f, rng);
    }
    {
      SCOPED_TRACE("gemm groups of 4, gemv rest");
      tokens_split_into_gemm_groups_of_4_and_gemv_rest(f, rng);
    }
    {
      SCOPED_TRACE("4x8 quantizer for gemm tokens");
      gemm_tokens_use_the_4x8_quantizer(f, rng);
    }
    {
      SCOPED_TRACE("row split");
      row_split_gives_same_bits(f, rng);
    }
    {
      SCOPED_TRACE("float bound");
      within_float_bound_of_exact_dot(f, rng);
    }
    return;
  }
  FAIL() << "no format " << id;
}

}  // namespace

TEST(RefLinearRepacked, linear_q4_0x8_f32__ref) {
  check_repacked("linear_q4_0x8_f32__ref");
}
TEST(RefLinearRepacked, linear_q4_Kx8_f32__ref) {
  check_repacked("linear_q4_Kx8_f32__ref");
}
TEST(RefLinearRepacked, linear_q2_Kx8_f32__ref) {
  check_repacked("linear_q2_Kx8_f32__ref");
}

}  // namespace cke::test
