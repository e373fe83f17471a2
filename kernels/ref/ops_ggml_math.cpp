#include "kernels/ref/ops_ggml_math.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/formats/quant.h"

namespace cke::ref {

float ggml_expf(float x) {
  // Round-to-integer trick: adding 1.5·2^23 after x·log2(e) leaves round(x·log2 e) in the
  // low mantissa bits; subtracting it back gives n exactly.
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  // b = x − n·ln2 in two steps (hi, lo parts of ln 2), each one fnmadd.
  float b = std::fma(-n, 0x1.62e4p-1f, x);
  b = std::fma(-n, 0x1.7f7d1cp-20f, b);
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;  // ±inf land here too
  if (std::isnan(n)) return n;
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                    std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  // vscalefps: j·2^n rounded once. In double the product is exact (|n| ≤ 192), so the
  // conversion to float is that single rounding, subnormal results included.
  return static_cast<float>(std::ldexp(static_cast<double>(j), static_cast<int>(n)));
}

float reduce_add16(const float v[16]) {
  float t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = v[i + 8] + v[i];
  for (int i = 0; i < 4; ++i) t4[i] = t8[i + 4] + t8[i];
  const float a = t4[0] + t4[2];
  const float b = t4[1] + t4[3];
  return a + b;
}

namespace {
// Folds ggml's 4 accumulators of 16 lanes (GGML_F32x16_REDUCE) and reduces them.
float fold4x16(float acc[4][16]) {
  for (int l = 0; l < 16; ++l) {
    acc[0][l] = acc[0][l] + acc[2][l];
    acc[1][l] = acc[1][l] + acc[3][l];
  }
  for (int l = 0; l < 16; ++l) acc[0][l] = acc[0][l] + acc[1][l];
  return reduce_add16(acc[0]);
}
}  // namespace

float vec_dot_f32(const float* x, const float* y, int64_t n) {
  float acc[4][16] = {};
  const int64_t np = n & ~int64_t(63);
  for (int64_t c = 0; c < np; c += 64)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 16; ++l) {
        const int64_t i = c + 16 * j + l;
        acc[j][l] = std::fma(x[i], y[i], acc[j][l]);
      }
  float sum = fold4x16(acc);
  for (int64_t i = np; i < n; ++i) sum = sum + x[i] * y[i];
  return sum;
}

float vec_dot_f32_pad64(const float* x, const float* y, int64_t n) {
  float acc[4][16] = {};
  for (int64_t i = 0; i < n; ++i) {
    float& a = acc[(i >> 4) & 3][i & 15];
    a = std::fma(x[i], y[i], a);
  }
  return fold4x16(acc);
}

float dot_tinyblas16(const float* x, const float* y, int64_t n) {
  float acc[16] = {};
  for (int64_t i = 0; i < n; ++i) acc[i & 15] = std::fma(x[i], y[i], acc[i & 15]);
  return reduce_add16(acc);
}

void softmax_row(float* w, int64_t len, int64_t first) {
  const int64_t len16 = (len + 15) / 16 * 16;
  float max = -INFINITY;
  for (int64_t j = 0; j < len16; ++j) {
    if (j < first || j >= len) w[j] = -INFINITY;  // mask: fl(w + (−inf))
    max = max > w[j] ? max : w[j];                // ggml's MAX(max, w): a NaN score propagates
  }
  double sum = 0.0;
  for (int64_t g = 0; g < len16; g += 16) {
    for (int64_t j = g; j < g + 16; ++j) w[j] = ggml_expf(w[j] - max);  // masked → exactly 0
    sum += static_cast<double>(reduce_add16(&w[g]));
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < len; ++j) w[j] = w[j] * inv;
}

float silu_simd(float x) {
  return x / (1.0f + ggml_expf(0.0f - x));
}

float silu_libm(float x) {
  return x / (1.0f + std::exp(-x));
}

namespace {
// ggml_gelu_f32 as ggml-cpu (FMA build, -ffp-contract=fast) evaluates it when it fills the
// table: GCC fuses `1 + GELU_COEF_A·x·x` into fma(A·x, x, 1); nothing else is a
// multiply-add. The result is rounded to FP16 afterwards, so this only matters in rare
// rounding ties.
float gelu_tanh_ggml(float x) {
  const float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  const float kCoefA = 0.044715f;
  const float inner = std::fma(kCoefA * x, x, 1.0f);
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * inner));
}

struct GeluTable {
  std::array<uint16_t, 65536> t;
  GeluTable() {
    for (uint32_t i = 0; i < 65536; ++i)
      t[i] = fp32_to_fp16(gelu_tanh_ggml(fp16_to_fp32(static_cast<uint16_t>(i))));
  }
};

const GeluTable& gelu_table() {
  static const GeluTable table;  // C++11 magic static: built once, thread-safe
  return table;
}
}  // namespace

float gelu_table_f16(float x) {
  return fp16_to_fp32(gelu_table().t[fp32_to_fp16(x)]);
}

uint16_t gelu_table_entry(uint16_t h) {
  return gelu_table().t[h];
}

const uint16_t* gelu_table_f16_data() {
  return gelu_table().t.data();
}

void argsort_desc_ggml(const float* p, int32_t* order, int64_t n) {
  for (int64_t e = 0; e < n; ++e) order[e] = int32_t(e);
  std::sort(order, order + n, [p](int32_t a, int32_t b) { return p[a] > p[b]; });
}

}  // namespace cke::ref
