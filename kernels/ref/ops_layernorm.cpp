// LayerNorm × weight + bias, as ggml's NORM node (ggml_compute_forward_norm_f32, AVX-512
// build) followed by the MUL node (weight) and the ADD node (bias):
//   sum   = Σ (double) x_i in index order, then to float (ggml_vec_sum_f32)
//   mean  = fl(sum / (float) n)
//   d_i   = fl(x_i − mean)
//   var   = (float)(Σ_groups (double) reduce_add16(fl(d_i · d_i)) + Σ_tail (double) fl(d_i · d_i))
//   / n)
//           (ggml_vec_cvar_f32: full 16-groups from element 0 reduced by the _mm512_reduce_add_ps
//           tree, the n % 16 tail added one by one; the double sum divided by n in double)
//   scale = 1.0f / sqrtf(var + eps)
//   y_i   = fl(fl(fl(d_i · scale) · w_i) + b_i)
#include <cmath>

#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"

extern "C" void layernorm_f32__ref(const float* x, const float* w, const float* b, float* y,
                                   int64_t n, int64_t rows, float eps, int64_t begin, int64_t end) {
  if (!cke_ref_in_range(rows, begin, end)) return;
  const int64_t n16 = n & ~int64_t(15);
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i]);
    const float mean = static_cast<float>(sum) / static_cast<float>(n);
    // In place is fine: element i is read once, before it is written.
    double var_sum = 0.0;
    for (int64_t i = 0; i < n16; i += 16) {
      float sq[16];
      for (int j = 0; j < 16; ++j) {
        const float d = xr[i + j] - mean;
        yr[i + j] = d;
        sq[j] = d * d;
      }
      var_sum += static_cast<double>(cke::ref::reduce_add16(sq));
    }
    for (int64_t i = n16; i < n; ++i) {
      const float d = xr[i] - mean;
      yr[i] = d;
      var_sum += static_cast<double>(d * d);
    }
    const float variance = static_cast<float>(var_sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(variance + eps);
    for (int64_t i = 0; i < n; ++i) {
      const float normed = yr[i] * scale;
      const float weighted = normed * w[i];
      yr[i] = weighted + b[i];
    }
  }
}
