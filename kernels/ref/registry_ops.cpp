#include "kernels/ref/act_steps.h"
#include "kernels/ref/ops.h"
#include "kernels/registry.h"

namespace cke {
// One entry per reference op kernel (kernels/ref/ops*.cpp); names are the provider ids.
// Function-local, as ref_linear_symbols: built on first use, so a caller in another
// translation unit's static initializer (benchmark registration) never sees it empty.
std::span<const KernelSymbol> ref_op_symbols() {
  static const KernelSymbol kRefOps[] = {
      CKE_KERNEL_SYMBOL(embed_f32__ref),
      CKE_KERNEL_SYMBOL(embed_f16__ref),
      CKE_KERNEL_SYMBOL(embed_bf16__ref),
      CKE_KERNEL_SYMBOL(embed_q8_0__ref),
      CKE_KERNEL_SYMBOL(embed_q4_0__ref),
      CKE_KERNEL_SYMBOL(embed_q4_1__ref),
      CKE_KERNEL_SYMBOL(embed_q5_0__ref),
      CKE_KERNEL_SYMBOL(embed_q5_1__ref),
      CKE_KERNEL_SYMBOL(embed_q2_K__ref),
      CKE_KERNEL_SYMBOL(embed_q3_K__ref),
      CKE_KERNEL_SYMBOL(embed_q4_K__ref),
      CKE_KERNEL_SYMBOL(embed_q5_K__ref),
      CKE_KERNEL_SYMBOL(embed_q6_K__ref),
      CKE_KERNEL_SYMBOL(rmsnorm_f32__ref),
      CKE_KERNEL_SYMBOL(rmsnorm_act_quant_q8_0__ref),
      CKE_KERNEL_SYMBOL(layernorm_f32__ref),
      CKE_KERNEL_SYMBOL(rope_normal_f32__ref),
      CKE_KERNEL_SYMBOL(rope_neox_f32__ref),
      CKE_KERNEL_SYMBOL(kv_store_f32__ref),
      CKE_KERNEL_SYMBOL(attention_f32__ref),
      CKE_KERNEL_SYMBOL(kv_store_f16__ref),
      CKE_KERNEL_SYMBOL(attention_f16_flash__ref),
      CKE_KERNEL_SYMBOL(add_f32__ref),
      CKE_KERNEL_SYMBOL(add_bias_f32__ref),
      CKE_KERNEL_SYMBOL(scale_f32__ref),
      CKE_KERNEL_SYMBOL(swiglu_f32__ref),
      CKE_KERNEL_SYMBOL(geglu_f32__ref),
      CKE_KERNEL_SYMBOL(swiglu_fused_f32__ref),
      CKE_KERNEL_SYMBOL(relu_sqr_f32__ref),
      CKE_KERNEL_SYMBOL(moe_route_softmax_norm_f32__ref),
      CKE_KERNEL_SYMBOL(moe_group__ref),
      CKE_KERNEL_SYMBOL(moe_gather_f32__ref),
      CKE_KERNEL_SYMBOL(moe_combine_f32__ref),
      CKE_KERNEL_SYMBOL(act_quant_f16__ref),
      CKE_KERNEL_SYMBOL(act_quant_bf16__ref),
      CKE_KERNEL_SYMBOL(act_quant_q8_0__ref),
      CKE_KERNEL_SYMBOL(act_quant_q8_1__ref),
      CKE_KERNEL_SYMBOL(act_quant_q8_K__ref),
      CKE_KERNEL_SYMBOL(act_quant_q8_K_4x8__ref),
  };
  return kRefOps;
}
}  // namespace cke
