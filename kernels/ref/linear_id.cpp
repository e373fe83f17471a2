// The reference expert matmuls (ggml's MUL_MAT_ID, linear.h): every (row, pair) of an expert
// through the linear reference of the weight's format with T = 1. ggml's mul_mat_id runs
// vec_dot per (row, pair) (its one-chunk loop, never llamafile's sgemm), and for repacked
// weights (forward_mul_mat_id of the CPU_REPACK buffer) one gemv per pair on activations
// quantized by the plain quantizer: exactly the single-token arithmetic of linear.<format>.
#include <cstdint>

#include "kernels/formats/dtype.h"
#include "kernels/ref/linear.h"

namespace {

using cke::DType;
using LinearFn = void (*)(const void*, const void*, float*, int64_t, int64_t, int64_t, int64_t,
                          int64_t);

void run_id(LinearFn f, DType wtype, DType atype, const void* x, const void* w,
            const int32_t* sched, float* y, int64_t K, int64_t N, int64_t E, int64_t P, int64_t n0,
            int64_t n1) {
  if (!x || !w || !sched || !y || K <= 0 || N <= 0 || E <= 0 || P < 0 || n0 < 0 || n1 > N ||
      n0 >= n1)
    return;
  const cke::DTypeInfo& wi = cke::dtype_info(wtype);
  const cke::DTypeInfo& ai = cke::dtype_info(atype);
  if (K % wi.block_size != 0 || K % ai.block_size != 0) return;
  const size_t arow = cke::row_bytes(atype, K), wexp = cke::row_bytes(wtype, K) * size_t(N);
  const auto* xb = static_cast<const uint8_t*>(x);
  const auto* wb = static_cast<const uint8_t*>(w);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t count = sched[e], first = sched[E + e];
    if (count <= 0 || first < 0 || first + count > P) continue;
    for (int64_t j = first; j < first + count; ++j)
      f(xb + size_t(j) * arow, wb + size_t(e) * wexp, y + j * N, K, N, 1, n0, n1);
  }
}

}  // namespace

#define CKE_DEFINE_LINEAR_ID(fmt, wt, at)                                                       \
  CKE_REF_LINEAR_ID(linear_id_##fmt##_f32__ref) {                                               \
    run_id(&linear_##fmt##_f32__ref, DType::wt, DType::at, x, w, sched, y, K, N, E, P, n0, n1); \
  }

extern "C" {
CKE_DEFINE_LINEAR_ID(f32, F32, F32)
CKE_DEFINE_LINEAR_ID(f16, F16, F16)
CKE_DEFINE_LINEAR_ID(bf16, BF16, BF16)
CKE_DEFINE_LINEAR_ID(q8_0, Q8_0, Q8_0)
CKE_DEFINE_LINEAR_ID(q4_0, Q4_0, Q8_0)
CKE_DEFINE_LINEAR_ID(q4_0x8, Q4_0, Q8_0)
CKE_DEFINE_LINEAR_ID(q4_1, Q4_1, Q8_1)
CKE_DEFINE_LINEAR_ID(q5_0, Q5_0, Q8_0)
CKE_DEFINE_LINEAR_ID(q5_1, Q5_1, Q8_1)
CKE_DEFINE_LINEAR_ID(q2_K, Q2_K, Q8_K)
CKE_DEFINE_LINEAR_ID(q2_Kx8, Q2_K, Q8_K)
CKE_DEFINE_LINEAR_ID(q3_K, Q3_K, Q8_K)
CKE_DEFINE_LINEAR_ID(q4_K, Q4_K, Q8_K)
CKE_DEFINE_LINEAR_ID(q4_Kx8, Q4_K, Q8_K)
CKE_DEFINE_LINEAR_ID(q5_K, Q5_K, Q8_K)
CKE_DEFINE_LINEAR_ID(q6_K, Q6_K, Q8_K)
}
