// The op table: one entry per reference kernel, named after it, with the argument kinds of
// its C signature (what the resolver checks a kernel map's call_abi against).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kernels/registry.h"

namespace cke {
namespace {

TEST(RefOpsRegistry, EveryKernelOnce) {
  const std::set<std::string> want = {"embed_f32__ref",
                                      "embed_f16__ref",
                                      "embed_bf16__ref",
                                      "embed_q8_0__ref",
                                      "embed_q4_0__ref",
                                      "embed_q4_1__ref",
                                      "embed_q5_0__ref",
                                      "embed_q5_1__ref",
                                      "embed_q2_K__ref",
                                      "embed_q3_K__ref",
                                      "embed_q4_K__ref",
                                      "embed_q5_K__ref",
                                      "embed_q6_K__ref",
                                      "rmsnorm_f32__ref",
                                      "rope_normal_f32__ref",
                                      "rope_neox_f32__ref",
                                      "kv_store_f32__ref",
                                      "attention_f32__ref",
                                      "kv_store_f16__ref",
                                      "attention_f16_flash__ref",
                                      "add_f32__ref",
                                      "add_bias_f32__ref",
                                      "scale_f32__ref",
                                      "swiglu_f32__ref",
                                      "geglu_f32__ref",
                                      "act_quant_f16__ref",
                                      "act_quant_bf16__ref",
                                      "act_quant_q8_0__ref",
                                      "act_quant_q8_1__ref",
                                      "act_quant_q8_K__ref",
                                      "act_quant_q8_K_4x8__ref",
                                      "layernorm_f32__ref",
                                      "rmsnorm_act_quant_q8_0__ref",
                                      "relu_sqr_f32__ref",
                                      "swiglu_fused_f32__ref",
                                      "moe_route_softmax_norm_f32__ref",
                                      "moe_group__ref",
                                      "moe_gather_f32__ref",
                                      "moe_combine_f32__ref"};
  std::set<std::string> got;
  for (const KernelSymbol& s : ref_op_symbols()) {
    EXPECT_TRUE(got.insert(std::string(s.name)).second) << "duplicate " << s.name;
    EXPECT_NE(s.fn, nullptr) << s.name;
  }
  EXPECT_EQ(got, want);
}

TEST(RefOpsRegistry, ArgumentKinds) {
  using K = ArgKind;
  auto find = [](std::string_view n) -> const KernelSymbol* {
    for (const KernelSymbol& s : ref_op_symbols())
      if (s.name == n) return &s;
    return nullptr;
  };
  const KernelSymbol* a = find("attention_f32__ref");
  ASSERT_TRUE(a);
  const K att[] = {K::Ptr, K::Ptr, K::Ptr, K::Ptr, K::I64, K::I64, K::I64,
                   K::I64, K::I64, K::I64, K::F32, K::I64, K::I64, K::I64};
  ASSERT_EQ(a->n_args, 14);
  for (int i = 0; i < 14; ++i) EXPECT_EQ(a->args[i], att[i]) << i;
  const KernelSymbol* r = find("rmsnorm_f32__ref");
  ASSERT_TRUE(r);
  const K rms[] = {K::Ptr, K::Ptr, K::Ptr, K::I64, K::I64, K::F32, K::I64, K::I64};
  ASSERT_EQ(r->n_args, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r->args[i], rms[i]) << i;
}

}  // namespace
}  // namespace cke
