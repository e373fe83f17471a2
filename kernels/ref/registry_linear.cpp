#include "kernels/ref/linear.h"
#include "kernels/registry.h"

namespace cke {
// The reference linear kernels (kernels/ref/linear*.cpp), one entry per weight format.
std::span<const KernelSymbol> ref_linear_symbols() {
  static const KernelSymbol kSymbols[] = {
      CKE_KERNEL_SYMBOL(linear_f32_f32__ref),
      CKE_KERNEL_SYMBOL(linear_f16_f32__ref),
      CKE_KERNEL_SYMBOL(linear_bf16_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q8_0_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q4_0_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q4_1_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q5_0_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q5_1_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q2_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q3_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q4_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q5_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q6_K_f32__ref),
      // ggml's repacked arithmetic (contracts linear.<w>x8.ggml)
      CKE_KERNEL_SYMBOL(linear_q4_0x8_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q4_Kx8_f32__ref),
      CKE_KERNEL_SYMBOL(linear_q2_Kx8_f32__ref),
      // llamafile's tinyBLAS arithmetic (contracts linear.<w>_tinyblas.ggml)
      CKE_KERNEL_SYMBOL(linear_f32_tinyblas_f32__ref),
      CKE_KERNEL_SYMBOL(linear_f16_tinyblas_f32__ref),
      CKE_KERNEL_SYMBOL(linear_bf16_tinyblas_f32__ref),
      // expert matmuls (ggml's MUL_MAT_ID, contracts linear_id.<w>.ggml)
      CKE_KERNEL_SYMBOL(linear_id_f32_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_f16_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_bf16_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q8_0_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q4_0_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q4_0x8_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q4_1_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q5_0_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q5_1_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q2_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q2_Kx8_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q3_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q4_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q4_Kx8_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q5_K_f32__ref),
      CKE_KERNEL_SYMBOL(linear_id_q6_K_f32__ref),
  };
  return kSymbols;
}
}  // namespace cke
