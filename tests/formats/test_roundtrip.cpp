// quantize -> dequantize round trips on random data. The legacy formats get per-element
// bounds derived from their definition (step size, fp16 rounding of d and m); the K-quants,
// whose scales come from a search, get a bound on the error relative to the data's RMS,
// per super-block, that a broken bit layout or scale would exceed by far.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/formats/quant.h"

namespace {

using cke::DType;

std::vector<float> roundtrip(DType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(cke::row_bytes(t, n));
  std::vector<float> y(x.size());
  EXPECT_TRUE(cke::quantize_row(t, x.data(), q.data(), n));
  EXPECT_TRUE(cke::dequantize_row(t, q.data(), y.data(), n));
  return y;
}

enum class Dist { Gauss, Uniform, Outliers, Positive, Tiny };

std::vector<float> make_data(Dist d, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) {
    switch (d) {
      case Dist::Gauss:
        x[i] = 0.02f * g(rng);
        break;
      case Dist::Uniform:
        x[i] = u(rng);
        break;
      case Dist::Outliers:
        x[i] = (i % 97 == 5) ? 40.0f * g(rng) : g(rng);
        break;
      case Dist::Positive:
        x[i] = 5.0f + std::fabs(g(rng));
        break;
      case Dist::Tiny:
        x[i] = 1e-3f * g(rng);
        break;
    }
  }
  return x;
}

const Dist kDists[] = {Dist::Gauss, Dist::Uniform, Dist::Outliers, Dist::Positive, Dist::Tiny};
constexpr float kH = 1.0f / 2048;  // fp16 relative rounding (half an ulp is 2^-11)
// fp16 absolute rounding in its subnormal range (scales of tiny data land there).
const float kHSub = std::ldexp(1.0f, -25);

// Symmetric formats (x = d*q): |x - y| <= |d| * (edge + nq * 2^-11), where d = amax/nmax
// and `edge` is 1/2 for q8_0 and 1 for q4_0/q5_0 (the largest-magnitude element of the
// sign that has one fewer level is off by a whole step).
void check_symmetric(DType t, int qk, float nmax, float edge) {
  for (Dist dist : kDists) {
    const auto x = make_data(dist, 32 * qk, 1000 + static_cast<uint32_t>(dist));
    const auto y = roundtrip(t, x);
    for (size_t b = 0; b < x.size() / qk; ++b) {
      float amax = 0;
      for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[b * qk + j]));
      const float d = amax / nmax;
      const float bound = d * (edge + (nmax + 1) * kH) * 1.0001f + (nmax + 1) * kHSub;
      for (int j = 0; j < qk; ++j) {
        const size_t i = b * qk + j;
        ASSERT_LE(std::fabs(x[i] - y[i]), bound)
            << cke::dtype_name(t) << " dist " << int(dist) << " element " << i;
      }
    }
  }
}

// Asymmetric formats (x = d*q + m): step = (max-min)/nmax; error <= step/2 plus fp16
// rounding of d (times q <= nmax) and of m.
void check_asymmetric(DType t, int qk, float nmax) {
  for (Dist dist : kDists) {
    const auto x = make_data(dist, 32 * qk, 2000 + static_cast<uint32_t>(dist));
    const auto y = roundtrip(t, x);
    for (size_t b = 0; b < x.size() / qk; ++b) {
      float mn = x[b * qk], mx = x[b * qk];
      for (int j = 0; j < qk; ++j) {
        mn = std::min(mn, x[b * qk + j]);
        mx = std::max(mx, x[b * qk + j]);
      }
      const float step = (mx - mn) / nmax;
      const float bound = (step * (0.5f + nmax * kH) + std::fabs(mn) * kH) * 1.0001f +
                          4e-7f * std::fabs(mx) + (nmax + 1) * kHSub;
      for (int j = 0; j < qk; ++j) {
        const size_t i = b * qk + j;
        ASSERT_LE(std::fabs(x[i] - y[i]), bound)
            << cke::dtype_name(t) << " dist " << int(dist) << " element " << i;
      }
    }
  }
}

TEST(RoundTrip, Q8_0) {
  check_symmetric(DType::Q8_0, 32, 127, 0.5f);
}
TEST(RoundTrip, Q4_0) {
  check_symmetric(DType::Q4_0, 32, 8, 1.0f);
}
TEST(RoundTrip, Q5_0) {
  check_symmetric(DType::Q5_0, 32, 16, 1.0f);
}
TEST(RoundTrip, Q4_1) {
  check_asymmetric(DType::Q4_1, 32, 15);
}
TEST(RoundTrip, Q5_1) {
  check_asymmetric(DType::Q5_1, 32, 31);
}

// q8_K keeps a float32 d: error <= d/2 with d = amax/127 (plus float rounding).
TEST(RoundTrip, Q8_K) {
  check_symmetric(DType::Q8_K, 256, 127, 0.5f);
}

TEST(RoundTrip, F16AndBF16) {
  for (Dist dist : kDists) {
    const auto x = make_data(dist, 4096, 3000 + static_cast<uint32_t>(dist));
    const auto h = roundtrip(DType::F16, x);
    const auto b = roundtrip(DType::BF16, x);
    const auto f = roundtrip(DType::F32, x);
    for (size_t i = 0; i < x.size(); ++i) {
      // fp16: relative 2^-11 for normal halves, absolute 2^-25 in the subnormal range.
      EXPECT_LE(std::fabs(x[i] - h[i]), std::fabs(x[i]) * kH + std::ldexp(1.0f, -25)) << i;
      EXPECT_LE(std::fabs(x[i] - b[i]), std::fabs(x[i]) * (1.0f / 256)) << i;
      EXPECT_EQ(f[i], x[i]);
    }
  }
}

// K-quants: per super-block, RMS(error) <= limit * RMS(x) (for data centred at zero), and
// no element off by more than `max_steps` quantization steps of the super-block's range
// (range / nmax). Measured on this data: relative RMS ~0.30 / 0.15 / 0.072 / 0.036 / 0.018
// for q2_K..q6_K on Gaussian blocks, worst element 1.38 steps (q6_K on tiny data, whose
// fp16 d is subnormal). Limits are ~1.5x the worst case; a wrong scale, min or bit
// position gives errors of order 1.
struct KLimit {
  DType t;
  float rel_rms;
  int nmax;         // levels - 1
  float max_steps;  // max error in units of range/nmax
};
const KLimit kKLimits[] = {
    {DType::Q2_K, 0.45f, 3, 2.0f},   {DType::Q3_K, 0.25f, 7, 2.0f},  {DType::Q4_K, 0.13f, 15, 2.0f},
    {DType::Q5_K, 0.075f, 31, 2.0f}, {DType::Q6_K, 0.05f, 63, 2.0f},
};

TEST(RoundTrip, KQuants) {
  for (const KLimit& lim : kKLimits) {
    for (Dist dist : {Dist::Gauss, Dist::Uniform, Dist::Outliers, Dist::Tiny}) {
      const auto x = make_data(dist, 64 * 256, 4000 + static_cast<uint32_t>(dist));
      const auto y = roundtrip(lim.t, x);
      double tot_e = 0, tot_x = 0;
      for (size_t b = 0; b < x.size() / 256; ++b) {
        double se = 0, sx = 0;
        float mn = x[b * 256], mx = x[b * 256];
        for (int j = 0; j < 256; ++j) {
          const size_t i = b * 256 + j;
          se += double(x[i] - y[i]) * (x[i] - y[i]);
          sx += double(x[i]) * x[i];
          mn = std::min(mn, x[i]);
          mx = std::max(mx, x[i]);
        }
        tot_e += se;
        tot_x += sx;
        const float step = (mx - mn) / lim.nmax;
        for (int j = 0; j < 256; ++j) {
          const size_t i = b * 256 + j;
          ASSERT_LE(std::fabs(x[i] - y[i]), lim.max_steps * step)
              << cke::dtype_name(lim.t) << " dist " << int(dist) << " element " << i;
        }
        if (dist != Dist::Outliers) {  // an outlier block is dominated by one value
          ASSERT_LE(std::sqrt(se / sx), lim.rel_rms)
              << cke::dtype_name(lim.t) << " dist " << int(dist) << " block " << b;
        }
      }
      // Whole-row relative RMS: reported on failure for calibration.
      EXPECT_LE(std::sqrt(tot_e / tot_x), lim.rel_rms)
          << cke::dtype_name(lim.t) << " dist " << int(dist);
    }
  }
}

// Quantization is per block: quantizing a row in one call or block by block gives the
// same bytes, for every format.
TEST(RoundTrip, BlocksAreIndependent) {
  const DType types[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                         DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                         DType::Q8_K, DType::F16,  DType::BF16};
  const auto x = make_data(Dist::Uniform, 1024, 99);
  for (DType t : types) {
    const int64_t bs = cke::dtype_info(t).block_size, ts = cke::dtype_info(t).type_size;
    std::vector<uint8_t> whole(cke::row_bytes(t, 1024)), parts(whole.size());
    ASSERT_TRUE(cke::quantize_row(t, x.data(), whole.data(), 1024));
    for (int64_t b = 0; b < 1024 / bs; ++b)
      ASSERT_TRUE(cke::quantize_row(t, x.data() + b * bs, parts.data() + b * ts, bs));
    EXPECT_EQ(whole, parts) << cke::dtype_name(t);
  }
}

}  // namespace
