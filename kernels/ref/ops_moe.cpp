// §9 Mixture of experts: the routing, grouping, gathering and combining steps around the
// expert matmuls (linear_id, linear_id.cpp), as llama.cpp's build_moe_ffn computes them on
// the CPU backend (softmax gating, weights normalised: qwen3moe, llama with experts).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/ref/ops.h"
#include "kernels/ref/ops_ggml_math.h"

namespace {

// ggml's MAX(a, b): ((a) > (b) ? (a) : (b)).
inline float ggml_max(float a, float b) {
  return a > b ? a : b;
}

// ggml_compute_forward_soft_max_f32 on one row (scale 1, no mask): wp = x * 1.0f, the max by
// MAX in index order, ggml_vec_soft_max_f32 (AVX-512: 16-groups through ggml_v_expf, each
// group's reduce_add into a double sum; the tail by libm expf into the same sum), then
// ggml_vec_scale_f32 by (float)(1.0 / sum).
void soft_max_row(const float* x, float* p, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) max = ggml_max(max, x[i] * 1.0f);
  double sum = 0;
  int64_t i = 0;
  for (; i + 15 < n; i += 16) {
    float e[16];
    for (int l = 0; l < 16; ++l) e[l] = cke::ref::ggml_expf(x[i + l] * 1.0f - max);
    for (int l = 0; l < 16; ++l) p[i + l] = e[l];
    sum += double(cke::ref::reduce_add16(e));
  }
  for (; i < n; ++i) {
    const float v = std::exp(x[i] * 1.0f - max);
    sum += double(v);
    p[i] = v;
  }
  sum = 1.0 / sum;
  const float s = float(sum);
  for (int64_t k = 0; k < n; ++k) p[k] *= s;
}

}  // namespace

extern "C" {

void moe_route_softmax_norm_f32__ref(const float* logits, int32_t* ids, float* weights,
                                     int64_t n_expert, int64_t n_used, int64_t T, int64_t t0,
                                     int64_t t1) {
  if (!logits || !ids || !weights || n_expert <= 0 || n_expert > INT32_MAX || n_used <= 0 ||
      n_used > n_expert || t0 < 0 || t1 > T || t0 >= t1)
    return;
  std::vector<float> p(static_cast<size_t>(n_expert));
  std::vector<int32_t> order(static_cast<size_t>(n_expert));
  for (int64_t t = t0; t < t1; ++t) {
    soft_max_row(logits + t * n_expert, p.data(), n_expert);
    cke::ref::argsort_desc_ggml(p.data(), order.data(), n_expert);
    int32_t* id = ids + t * n_used;
    float* w = weights + t * n_used;
    // GET_ROWS of the probabilities, SUM_ROWS (ggml_vec_sum_f32: a double sum, rounded once),
    // CLAMP to [6.103515625e-5, inf) (MAX(MIN(x, max), min)), DIV.
    double acc = 0;
    for (int64_t s = 0; s < n_used; ++s) {
      id[s] = order[size_t(s)];
      w[s] = p[size_t(order[size_t(s)])];
      acc += double(w[s]);
    }
    float sum = float(acc);
    sum = sum < INFINITY ? sum : INFINITY;  // MIN(x, max)
    sum = ggml_max(sum, 6.103515625e-5f);   // MAX(., min)
    for (int64_t s = 0; s < n_used; ++s) w[s] = w[s] / sum;
  }
}

void moe_group__ref(const int32_t* ids, int32_t* sched, int32_t* rows, int64_t n_expert,
                    int64_t n_used, int64_t T) {
  if (!ids || !sched || !rows || n_expert <= 0 || n_used <= 0 || T <= 0) return;
  const int64_t P = n_used * T;
  int32_t* count = sched;
  int32_t* first = sched + n_expert;
  for (int64_t e = 0; e < n_expert; ++e) count[e] = 0;
  for (int64_t j = 0; j < P; ++j)
    if (ids[j] >= 0 && ids[j] < n_expert) ++count[ids[j]];
  int32_t at = 0;
  for (int64_t e = 0; e < n_expert; ++e) {
    first[e] = at;
    at += count[e];
  }
  std::vector<int32_t> fill(first, first + n_expert);
  int32_t* pos = rows + P;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < n_used; ++s) {
      const int32_t e = ids[t * n_used + s];
      if (e < 0 || e >= n_expert) continue;
      const int32_t j = fill[size_t(e)]++;
      rows[j] = int32_t(t);
      pos[t * n_used + s] = j;
    }
}

void moe_gather_f32__ref(const float* x, const int32_t* rows, float* y, int64_t n, int64_t P,
                         int64_t j0, int64_t j1) {
  if (!x || !rows || !y || n <= 0 || j0 < 0 || j1 > P || j0 >= j1) return;
  for (int64_t j = j0; j < j1; ++j) std::copy(x + rows[j] * n, x + rows[j] * n + n, y + j * n);
}

void moe_combine_f32__ref(const float* x, const float* weights, const int32_t* rows, float* y,
                          int64_t n, int64_t n_used, int64_t T, int64_t t0, int64_t t1) {
  if (!x || !weights || !rows || !y || n <= 0 || n_used <= 0 || t0 < 0 || t1 > T || t0 >= t1)
    return;
  const int32_t* pos = rows + n_used * T;
  for (int64_t t = t0; t < t1; ++t) {
    float* o = y + t * n;
    for (int64_t s = 0; s < n_used; ++s) {
      const float* src = x + int64_t(pos[t * n_used + s]) * n;
      const float w = weights[t * n_used + s];
      for (int64_t i = 0; i < n; ++i) {
        const float v = src[i] * w;  // the MUL node: stored as float
        o[i] = s == 0 ? v : o[i] + v;
      }
    }
  }
}

}  // extern "C"
