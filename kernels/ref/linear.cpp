// The reference linear kernels: one ggml-exact dot product (kernels/ref/linear_dot.h) per
// output row in [n0, n1) and token, on activations already converted to the weight's
// vec_dot type by an act_quant step (act_steps.h).
//
// Repacked arithmetic (GGML-NUMERICS.md §0): llama.cpp's CPU backend stores Q4_0, Q4_K
// and Q2_K matrices whose row count N is a multiple of 8 in the CPU_REPACK buffer (Q2_K
// only on AVX-512 CPUs, which the references were made on), and those run ggml's repacked
// kernels instead of vec_dot. That is another arithmetic, so it is another contract
// (linear.q4_0x8.ggml, ...; `when: "w_ne1 % 8 == 0"`) with its own reference here
// (linear_q4_0x8_f32__ref, ...): the resolver decides which one a matrix gets, no kernel
// looks at N. Their forward_mul_mat quantizes tokens 0 .. 4*floor(T/4)-1 four at a time
// (ggml_quantize_mat_*_4x8) and multiplies them with the gemm; the last T % 4 tokens are
// quantized by the plain quantizer and go through the gemv (T = 1, i.e. decode, is always
// gemv):
//   t <  4*floor(T/4) -> 4x8 quantizer + gemm arithmetic;
//   t >= 4*floor(T/4) -> plain quantizer + gemv arithmetic.
// The 8-row interleave is a memory layout only: each output keeps its own accumulator and
// ggml aligns its thread chunks to 8 rows, so the bits of y[t][n] depend on T and t, never
// on n's place in a group of 8 or on the [n0, n1) split (linear_dot_repack.cpp).
#include "kernels/ref/linear.h"

#include <algorithm>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/ref/linear_dot.h"

namespace {

using cke::DType;

// Shapes come from a plan the resolver has validated; a call that still breaks the
// documented contract computes nothing rather than reading out of bounds.
bool valid_call(const void* x, const void* w, const void* y, int64_t K, int64_t N, int64_t T,
                int64_t n0, int64_t n1, int64_t block) {
  return x && w && y && K > 0 && K % block == 0 && N > 0 && T >= 0 && 0 <= n0 && n0 <= n1 &&
         n1 <= N;
}

// W: weight block (or element) type; A: activation element/block type, `act_per` elements
// per A; `dot(K, w_row, a_row)` returns y[t][n]; K must be a multiple of `k_step` too.
template <class W, class A, class Dot>
void run(DType wtype, int64_t act_per, const void* x, const void* w, float* y, int64_t K, int64_t N,
         int64_t T, int64_t n0, int64_t n1, Dot dot, int64_t k_step = 1) {
  const int64_t needed = std::max<int64_t>({cke::dtype_info(wtype).block_size, act_per, k_step});
  if (!valid_call(x, w, y, K, N, T, n0, n1, needed)) return;
  const size_t row_bytes = cke::row_bytes(wtype, K);
  const auto* wb = static_cast<const uint8_t*>(w);
  const A* act = static_cast<const A*>(x);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = n0; n < n1; ++n)
      y[t * N + n] =
          dot(K, reinterpret_cast<const W*>(wb + n * row_bytes), act + t * (K / act_per));
}

// The repacked arithmetic: tokens t < 4*floor(T/4) by `gemm`, the remaining T % 4 by `gemv`.
template <class W, class A, class Gemm, class Gemv>
void run_repacked(DType wtype, int64_t act_per, const void* x, const void* w, float* y, int64_t K,
                  int64_t N, int64_t T, int64_t n0, int64_t n1, Gemm gemm, Gemv gemv) {
  if (!valid_call(x, w, y, K, N, T, n0, n1, act_per)) return;
  const size_t row_bytes = cke::row_bytes(wtype, K);
  const auto* wb = static_cast<const uint8_t*>(w);
  const A* act = static_cast<const A*>(x);
  const int64_t t_gemm = T - T % 4;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = n0; n < n1; ++n) {
      const W* wr = reinterpret_cast<const W*>(wb + n * row_bytes);
      const A* a = act + t * (K / act_per);
      y[t * N + n] = t < t_gemm ? gemm(K, wr, a) : gemv(K, wr, a);
    }
}

}  // namespace
extern "C" {

CKE_REF_LINEAR(linear_f32_f32__ref) {
  run<float, float>(DType::F32, 1, x, w, y, K, N, T, n0, n1, cke::ref::vec_dot_f32);
}
CKE_REF_LINEAR(linear_f16_f32__ref) {
  run<uint16_t, uint16_t>(DType::F16, 1, x, w, y, K, N, T, n0, n1, cke::ref::vec_dot_f16);
}
CKE_REF_LINEAR(linear_bf16_f32__ref) {
  run<uint16_t, uint16_t>(DType::BF16, 1, x, w, y, K, N, T, n0, n1, cke::ref::vec_dot_bf16);
}
CKE_REF_LINEAR(linear_f32_tinyblas_f32__ref) {
  run<float, float>(DType::F32, 1, x, w, y, K, N, T, n0, n1, cke::ref::tinyblas_f32, 16);
}
CKE_REF_LINEAR(linear_f16_tinyblas_f32__ref) {
  run<uint16_t, uint16_t>(DType::F16, 1, x, w, y, K, N, T, n0, n1, cke::ref::tinyblas_f16, 16);
}
CKE_REF_LINEAR(linear_bf16_tinyblas_f32__ref) {
  run<uint16_t, uint16_t>(DType::BF16, 1, x, w, y, K, N, T, n0, n1, cke::ref::tinyblas_bf16, 32);
}
CKE_REF_LINEAR(linear_q8_0_f32__ref) {
  run<cke::block_q8_0, cke::block_q8_0>(DType::Q8_0, cke::kQK8_0, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q8_0_q8_0);
}
CKE_REF_LINEAR(linear_q4_0_f32__ref) {
  run<cke::block_q4_0, cke::block_q8_0>(DType::Q4_0, cke::kQK8_0, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q4_0_q8_0);
}
CKE_REF_LINEAR(linear_q4_0x8_f32__ref) {
  // ggml_quantize_mat_q8_0_4x8 runs quantize_row_q8_0's instructions: same values.
  run_repacked<cke::block_q4_0, cke::block_q8_0>(DType::Q4_0, cke::kQK8_0, x, w, y, K, N, T, n0, n1,
                                                 cke::ref::gemm_q4_0_8x8_q8_0,
                                                 cke::ref::gemv_q4_0_8x8_q8_0);
}
CKE_REF_LINEAR(linear_q4_1_f32__ref) {
  run<cke::block_q4_1, cke::block_q8_1>(DType::Q4_1, cke::kQK8_1, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q4_1_q8_1);
}
CKE_REF_LINEAR(linear_q5_0_f32__ref) {
  run<cke::block_q5_0, cke::block_q8_0>(DType::Q5_0, cke::kQK8_0, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q5_0_q8_0);
}
CKE_REF_LINEAR(linear_q5_1_f32__ref) {
  run<cke::block_q5_1, cke::block_q8_1>(DType::Q5_1, cke::kQK8_1, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q5_1_q8_1);
}
CKE_REF_LINEAR(linear_q2_K_f32__ref) {
  run<cke::block_q2_K, cke::block_q8_K>(DType::Q2_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q2_K_q8_K);
}
CKE_REF_LINEAR(linear_q2_Kx8_f32__ref) {
  run_repacked<cke::block_q2_K, cke::block_q8_K>(DType::Q2_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                                 cke::ref::gemm_q2_K_8x8_q8_K,
                                                 cke::ref::gemv_q2_K_8x8_q8_K);
}
CKE_REF_LINEAR(linear_q3_K_f32__ref) {
  run<cke::block_q3_K, cke::block_q8_K>(DType::Q3_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q3_K_q8_K);
}
CKE_REF_LINEAR(linear_q4_K_f32__ref) {
  run<cke::block_q4_K, cke::block_q8_K>(DType::Q4_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q4_K_q8_K);
}
CKE_REF_LINEAR(linear_q4_Kx8_f32__ref) {
  run_repacked<cke::block_q4_K, cke::block_q8_K>(DType::Q4_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                                 cke::ref::gemm_q4_K_8x8_q8_K,
                                                 cke::ref::gemv_q4_K_8x8_q8_K);
}
CKE_REF_LINEAR(linear_q5_K_f32__ref) {
  run<cke::block_q5_K, cke::block_q8_K>(DType::Q5_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q5_K_q8_K);
}
CKE_REF_LINEAR(linear_q6_K_f32__ref) {
  run<cke::block_q6_K, cke::block_q8_K>(DType::Q6_K, cke::kQK_K, x, w, y, K, N, T, n0, n1,
                                        cke::ref::vec_dot_q6_K_q8_K);
}

}  // extern "C"
