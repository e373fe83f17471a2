// §2 RMSNorm × weight, as ggml's RMS_NORM node followed by the MUL node:
//   sum   = Σ (double) fl(x_i · x_i)          (in index order)
//   mean  = (float)(sum / n)
//   scale = 1.0f / sqrtf(mean + eps)
//   y_i   = fl(fl(x_i · scale) · w_i)
#include <cmath>

#include "kernels/ref/ops.h"

extern "C" void rmsnorm_f32__ref(const float* x, const float* w, float* y, int64_t n, int64_t rows,
                                 float eps, int64_t begin, int64_t end) {
  if (!cke_ref_in_range(rows, begin, end)) return;
  for (int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    // In place is fine: element i is read before it is written and never read again.
    for (int64_t i = 0; i < n; ++i) {
      const float normed = xr[i] * scale;
      yr[i] = normed * w[i];
    }
  }
}
