// Unary FFN activations without a gate (ggml's UNARY nodes, one per element).
#include "kernels/ref/ops.h"

extern "C" {

// RELU then SQR, two ggml nodes: r = (x > 0) ? x : 0 (ggml_vec_relu_f32: −0 and NaN give
// +0), then fl(r · r) (ggml_vec_sqr_f32). The relu is exact, so one rounding in all.
void relu_sqr_f32__ref(const float* x, float* y, int64_t n, int64_t begin, int64_t end) {
  if (!cke_ref_in_range(n, begin, end)) return;
  for (int64_t i = begin; i < end; ++i) {
    const float r = (x[i] > 0.0f) ? x[i] : 0.0f;
    y[i] = r * r;
  }
}

}  // extern "C"
