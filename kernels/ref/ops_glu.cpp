// §7 Gated FFN activations, fused as ggml's SWIGLU / GEGLU ops (ggml_vec_swiglu_f32,
// ggml_vec_geglu_f32 with GGML_GELU_FP16).
#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"

extern "C" {

// Per row: full 16-element groups from element 0 take the AVX-512 silu (ggml_v_expf, true
// division); the n % 16 leftovers take the scalar silu with libm expf. y = fl(silu · up).
void swiglu_f32__ref(const float* gate, const float* up, float* y, int64_t n, int64_t T,
                     int64_t begin, int64_t end) {
  if (!cke_ref_in_range(T, begin, end)) return;
  const int64_t n16 = n & ~int64_t(15);
  for (int64_t t = begin; t < end; ++t) {
    const float* g = gate + t * n;
    const float* u = up + t * n;
    float* o = y + t * n;
    for (int64_t i = 0; i < n16; ++i) o[i] = cke::ref::silu_simd(g[i]) * u[i];
    for (int64_t i = n16; i < n; ++i) o[i] = cke::ref::silu_libm(g[i]) * u[i];
  }
}

// The un-split form (ggml_swiglu of one tensor, llama.cpp's fused up+gate projection): row t
// of x holds 2n values, the gate in [0, n) and the up half in [n, 2n); the same arithmetic
// as swiglu_f32__ref on those halves (ggml_vec_swiglu_f32 on the two row pointers).
void swiglu_fused_f32__ref(const float* x, float* y, int64_t n, int64_t T, int64_t begin,
                           int64_t end) {
  if (!cke_ref_in_range(T, begin, end)) return;
  const int64_t n16 = n & ~int64_t(15);
  for (int64_t t = begin; t < end; ++t) {
    const float* g = x + t * 2 * n;
    const float* u = g + n;
    float* o = y + t * n;
    for (int64_t i = 0; i < n16; ++i) o[i] = cke::ref::silu_simd(g[i]) * u[i];
    for (int64_t i = n16; i < n; ++i) o[i] = cke::ref::silu_libm(g[i]) * u[i];
  }
}

// gate ≤ −10 → 0; gate ≥ 10 → fl(gate · up); otherwise fl(T[f16(gate)] · up) with ggml's
// FP16 table of the tanh GELU. NaN gates fall through to the table (NaN entry).
void geglu_f32__ref(const float* gate, const float* up, float* y, int64_t n, int64_t T,
                    int64_t begin, int64_t end) {
  if (!cke_ref_in_range(T, begin, end)) return;
  for (int64_t i = begin * n; i < end * n; ++i) {
    const float g = gate[i];
    if (g <= -10.0f) {
      y[i] = 0.0f;
    } else if (g >= 10.0f) {
      y[i] = g * up[i];
    } else {
      y[i] = cke::ref::gelu_table_f16(g) * up[i];
    }
  }
}

}  // extern "C"
