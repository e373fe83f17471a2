// ggml_vec_dot_f32 / _f16 / _bf16 (ggml-cpu/vec.cpp) of the AVX-512 build, as scalar code.
#include <array>
#include <cmath>

#include "kernels/formats/quant.h"
#include "kernels/ref/linear_dot.h"
#include "kernels/ref/linear_lanes.h"

namespace cke::ref {
namespace {

// fp16 -> fp32 is exact, so a table gives the same values as vcvtph2ps, only faster.
const std::array<float, 65536>& f16_table() {
  static const std::array<float, 65536> table = [] {
    std::array<float, 65536> t{};
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_fp32(static_cast<uint16_t>(h));
    return t;
  }();
  return table;
}

// GGML_F32_STEP = 64, GGML_F32_EPR = 16: four 16-lane accumulators, sum[j] += x*y (FMA)
// for elements 64c + 16j + lane; then sum0 += sum2, sum1 += sum3, sum0 += sum1 and
// _mm512_reduce_add_ps. `Load` widens an element to float (identity, or fp16 -> fp32).
template <class T, class Load>
float simd_f32_part(int64_t np, const T* x, const T* y, Load load) {
  float acc[4][16] = {};
  for (int64_t i = 0; i < np; i += 64)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 16; ++l) {
        const int64_t k = i + 16 * j + l;
        acc[j][l] = std::fma(load(x[k]), load(y[k]), acc[j][l]);
      }
  float r[16];
  for (int l = 0; l < 16; ++l) r[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  return lanes::reduce16(r);
}

}  // namespace

float vec_dot_f32(int64_t n, const float* w, const float* a) {
  const int64_t np = n & ~int64_t{63};
  float sumf = simd_f32_part(np, w, a, [](float v) { return v; });
  // Leftovers `sumf += x[i]*y[i]`, as GCC 12 -O3 -mavx512f vectorises that loop (an
  // in-order reduction): 16-wide groups and then one 8-wide group of rounded products
  // added one by one, and a scalar epilogue that -ffp-contract=fast turned into FMAs.
  int64_t i = np;
  for (; n - i >= 16; i += 16)
    for (int l = 0; l < 16; ++l) {
      const float p = w[i + l] * a[i + l];
      sumf = sumf + p;
    }
  if (n - i >= 8) {
    for (int l = 0; l < 8; ++l) {
      const float p = w[i + l] * a[i + l];
      sumf = sumf + p;
    }
    i += 8;
  }
  for (; i < n; ++i) sumf = std::fma(w[i], a[i], sumf);
  return sumf;
}

float vec_dot_f16(int64_t n, const uint16_t* w, const uint16_t* a) {
  const auto& t = f16_table();
  const int64_t np = n & ~int64_t{63};
  // ggml_float (double) sumf; the tail products are float, the sum double.
  double sumf = simd_f32_part(np, w, a, [&t](uint16_t h) { return t[h]; });
  for (int64_t i = np; i < n; ++i) sumf += static_cast<double>(t[w[i]] * t[a[i]]);
  return static_cast<float>(sumf);
}

float vec_dot_bf16(int64_t n, const uint16_t* w, const uint16_t* a) {
  using lanes::bf16_bits_to_f32;
  float c1[16] = {}, c2[16] = {};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int l = 0; l < 16; ++l) {
      const int64_t k1 = i + 2 * l, k2 = i + 32 + 2 * l;
      c1[l] = lanes::dpbf16_lane(c1[l], bf16_bits_to_f32(w[k1]), bf16_bits_to_f32(w[k1 + 1]),
                                 bf16_bits_to_f32(a[k1]), bf16_bits_to_f32(a[k1 + 1]));
      c2[l] = lanes::dpbf16_lane(c2[l], bf16_bits_to_f32(w[k2]), bf16_bits_to_f32(w[k2 + 1]),
                                 bf16_bits_to_f32(a[k2]), bf16_bits_to_f32(a[k2 + 1]));
    }
  double sumf = 0;
  sumf += static_cast<double>(lanes::reduce16(c1));
  sumf += static_cast<double>(lanes::reduce16(c2));
  for (; i < n; ++i) sumf += static_cast<double>(bf16_bits_to_f32(w[i]) * bf16_bits_to_f32(a[i]));
  return static_cast<float>(sumf);
}

float tinyblas_f32(int64_t n, const float* w, const float* a) {
  float acc[16] = {};
  for (int64_t i = 0; i < n; ++i) acc[i & 15] = std::fma(w[i], a[i], acc[i & 15]);
  return lanes::reduce16(acc);
}

float tinyblas_f16(int64_t n, const uint16_t* w, const uint16_t* a) {
  const auto& t = f16_table();
  float acc[16] = {};
  for (int64_t i = 0; i < n; ++i) acc[i & 15] = std::fma(t[w[i]], t[a[i]], acc[i & 15]);
  return lanes::reduce16(acc);
}

float tinyblas_bf16(int64_t n, const uint16_t* w, const uint16_t* a) {
  using lanes::bf16_bits_to_f32;
  float acc[16] = {};
  for (int64_t i = 0; i + 32 <= n; i += 32)
    for (int l = 0; l < 16; ++l) {
      const int64_t k = i + 2 * l;
      acc[l] = lanes::dpbf16_lane(acc[l], bf16_bits_to_f32(w[k]), bf16_bits_to_f32(w[k + 1]),
                                  bf16_bits_to_f32(a[k]), bf16_bits_to_f32(a[k + 1]));
    }
  return lanes::reduce16(acc);
}

}  // namespace cke::ref
