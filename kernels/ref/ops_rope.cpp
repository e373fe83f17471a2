// §5 RoPE (ggml_compute_forward_rope_flt, ext_factor 0, attn_factor 1, no freq factors).
//
// Angles follow ggml's per-token cache exactly: theta starts at (float)pos and is multiplied
// by theta_scale = powf(base, −2/n_rot) after each pair, so pair k uses k successive float
// roundings, not pos·base^(−2k/n). Then cos/sin of fl(freq_scale·theta) with libm cosf/sinf.
// The rotation is written as GCC contracts ggml's `x0*cos − x1*sin` / `x0*sin + x1*cos`
// under -ffp-contract=fast: the first product is fused, the second rounded.
#include <cmath>
#include <vector>

#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"

namespace cke::ref {

void rope_cache(float* cache, int64_t n_rot, int64_t pos, float freq_base, float freq_scale) {
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int64_t k = 0; k < n_rot / 2; ++k) {
    const float th = freq_scale * theta;
    cache[2 * k + 0] = std::cos(th);
    cache[2 * k + 1] = std::sin(th);
    theta = theta * theta_scale;
  }
}

}  // namespace cke::ref

namespace {

using cke::ref::rope_cache;

inline void rotate(float* a, float* b, float c, float s) {
  const float x0 = *a, x1 = *b;
  *a = std::fma(x0, c, -(x1 * s));
  *b = std::fma(x0, s, x1 * c);
}

// `stride` = distance between the two elements of a pair (1 normal, n_rot/2 neox);
// `step` = distance between consecutive pairs (2 normal, 1 neox).
void rope(float* x, int64_t head_dim, int64_t n_heads, int64_t T, int64_t pos0, int64_t n_rot,
          float freq_base, float freq_scale, int64_t stride, int64_t step, int64_t begin,
          int64_t end) {
  if (n_rot <= 0 || n_rot > head_dim || n_rot % 2 != 0) return;  // nothing valid to rotate
  if (!cke_ref_in_range(T, begin, end)) return;
  std::vector<float> cache(static_cast<size_t>(n_rot));
  for (int64_t t = begin; t < end; ++t) {
    rope_cache(cache.data(), n_rot, pos0 + t, freq_base, freq_scale);
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * head_dim;
      // Dims n_rot.. head_dim−1 are left as they are (ggml copies them).
      for (int64_t k = 0; k < n_rot / 2; ++k)
        rotate(v + k * step, v + k * step + stride, cache[2 * k], cache[2 * k + 1]);
    }
  }
}

}  // namespace

extern "C" {

void rope_normal_f32__ref(float* x, int64_t head_dim, int64_t n_heads, int64_t T, int64_t pos0,
                          int64_t n_rot, float freq_base, float freq_scale, int64_t begin,
                          int64_t end) {
  rope(x, head_dim, n_heads, T, pos0, n_rot, freq_base, freq_scale, 1, 2, begin, end);
}

void rope_neox_f32__ref(float* x, int64_t head_dim, int64_t n_heads, int64_t T, int64_t pos0,
                        int64_t n_rot, float freq_base, float freq_scale, int64_t begin,
                        int64_t end) {
  rope(x, head_dim, n_heads, T, pos0, n_rot, freq_base, freq_scale, n_rot / 2, 1, begin, end);
}

}  // extern "C"
