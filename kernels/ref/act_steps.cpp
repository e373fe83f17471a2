#include "kernels/ref/act_steps.h"

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/ref/act_quant.h"

namespace {

using cke::DType;

// Converts tokens [t0, t1) with `convert(x_row, y_row, K)`, where `pick(t)` may choose the
// converter per token.
template <class Out, class Pick>
void run(DType out, const float* x, void* y, int64_t K, int64_t T, int64_t t0, int64_t t1,
         Pick pick) {
  const int64_t block = cke::dtype_info(out).block_size;
  if (!x || !y || K <= 0 || K % block != 0 || !(0 <= t0 && t0 <= t1 && t1 <= T)) return;
  const size_t rb = cke::row_bytes(out, K);
  auto* yb = static_cast<uint8_t*>(y);
  for (int64_t t = t0; t < t1; ++t) pick(t)(x + t * K, reinterpret_cast<Out*>(yb + t * rb), K);
}

}  // namespace

extern "C" {

CKE_REF_ACT_STEP(act_quant_f16__ref) {
  run<uint16_t>(DType::F16, x, y, K, T, t0, t1, [](int64_t) { return cke::act_convert_f16; });
}
CKE_REF_ACT_STEP(act_quant_bf16__ref) {
  run<uint16_t>(DType::BF16, x, y, K, T, t0, t1, [](int64_t) { return cke::act_convert_bf16; });
}
CKE_REF_ACT_STEP(act_quant_q8_0__ref) {
  run<cke::block_q8_0>(DType::Q8_0, x, y, K, T, t0, t1,
                       [](int64_t) { return cke::act_quantize_q8_0; });
}
CKE_REF_ACT_STEP(act_quant_q8_1__ref) {
  run<cke::block_q8_1>(DType::Q8_1, x, y, K, T, t0, t1,
                       [](int64_t) { return cke::act_quantize_q8_1; });
}
CKE_REF_ACT_STEP(act_quant_q8_K__ref) {
  run<cke::block_q8_K>(DType::Q8_K, x, y, K, T, t0, t1,
                       [](int64_t) { return cke::act_quantize_q8_K; });
}
CKE_REF_ACT_STEP(act_quant_q8_K_4x8__ref) {
  const int64_t t_gemm = T - T % 4;
  run<cke::block_q8_K>(DType::Q8_K, x, y, K, T, t0, t1, [t_gemm](int64_t t) {
    return t < t_gemm ? cke::act_quantize_q8_K_4x8 : cke::act_quantize_q8_K;
  });
}

}  // extern "C"
