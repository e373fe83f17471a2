// The oracles of fused contracts: their stages' reference kernels, called row by row in
// the pattern's order (rows are independent in every stage, so this is the unfused plan's
// result, row for row).
#include "kernels/ref/act_steps.h"
#include "kernels/ref/ops.h"

extern "C" void rmsnorm_act_quant_q8_0__ref(const float* x, const float* w, float* xn, void* y,
                                            int64_t n, int64_t rows, float eps, int64_t begin,
                                            int64_t end) {
  if (!cke_ref_in_range(rows, begin, end) || n <= 0 || n % 32 != 0) return;
  for (int64_t r = begin; r < end; ++r) {
    rmsnorm_f32__ref(x, w, xn, n, rows, eps, r, r + 1);
    act_quant_q8_0__ref(xn, y, n, rows, r, r + 1);
  }
}
