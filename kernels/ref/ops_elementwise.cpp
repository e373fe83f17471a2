// §4 / §8 Elementwise ADD, bias ADD and SCALE: one float operation per element.
#include "kernels/ref/ops.h"

extern "C" {

void add_f32__ref(const float* a, const float* b, float* y, int64_t n, int64_t begin, int64_t end) {
  if (!cke_ref_in_range(n, begin, end)) return;
  for (int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
}

void add_bias_f32__ref(const float* x, const float* b, float* y, int64_t n, int64_t T,
                       int64_t begin, int64_t end) {
  if (!cke_ref_in_range(T, begin, end)) return;
  for (int64_t t = begin; t < end; ++t)
    for (int64_t i = 0; i < n; ++i) y[t * n + i] = x[t * n + i] + b[i];
}

void scale_f32__ref(const float* x, float* y, int64_t n, float s, int64_t begin, int64_t end) {
  if (!cke_ref_in_range(n, begin, end)) return;
  for (int64_t i = begin; i < end; ++i) y[i] = x[i] * s;
}

}  // extern "C"
