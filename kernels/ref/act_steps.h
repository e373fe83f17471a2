// Activation conversion steps: the f32 activations a matmul reads, converted once to the
// weight's vec_dot type exactly as ggml's CPU backend converts them (act_quant.h), as plan
// steps of op `act_quant` (resolver/conversions.h inserts them; contracts act_quant.*.ggml).
//
// ABI: x [K, T] f32 (token t at x + t*K), y [K, T] in the target type (token t at
// y + t * row_bytes(type, K)); converts tokens [t0, t1) (rows are independent, so any split
// of T gives the same bytes). K must be a multiple of the target's block; a call breaking
// that, or with a range outside [0, T], writes nothing.
#pragma once

#include <cstdint>

#define CKE_REF_ACT_STEP(name) \
  void name(const float* x, void* y, int64_t K, int64_t T, int64_t t0, int64_t t1)

extern "C" {
CKE_REF_ACT_STEP(act_quant_f16__ref);   // F16, round to nearest even (F16C)
CKE_REF_ACT_STEP(act_quant_bf16__ref);  // BF16, ggml's scalar RNE
CKE_REF_ACT_STEP(act_quant_q8_0__ref);  // Q8_0, ggml's x86 quantize_row_q8_0
CKE_REF_ACT_STEP(act_quant_q8_1__ref);  // Q8_1, ggml's x86 quantize_row_q8_1
CKE_REF_ACT_STEP(act_quant_q8_K__ref);  // Q8_K, quantize_row_q8_K
// Q8_K for ggml's repacked q4_K/q2_K matmuls: tokens t < 4*floor(T/4) (the gemm's groups of
// four) by ggml_quantize_mat_q8_K_4x8, the last T % 4 by quantize_row_q8_K.
CKE_REF_ACT_STEP(act_quant_q8_K_4x8__ref);
}
