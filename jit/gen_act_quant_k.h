// Generated activation conversions beside Q8_0 (gen_act_quant.h), written once in KIR for
// AVX-512 and AVX2 on 256-bit vectors (the AVX-512 modules encode them with EVEX and
// compare into k registers), each bit for bit its contract's reference (act_steps.h):
//
// act_quant.q8_K.ggml (act_quant_q8_K__ref, ggml's quantize_row_q8_K) per 256-block:
//   amax = the largest |x| (NaN ignored; exact, so the fold order is free); the sign of the
//   FIRST element of that magnitude, found lane-wise (strict > keeps each lane's first,
//   keyed 2 * index + sign bit) and then by the smallest key among the lanes holding amax;
//   iscale = -127 / max; q = min(127, nearest_int(iscale * x)) as ggml's bit trick
//   (fl(fl(iscale * x) + 1.5 * 2^23), mantissa - 2^22) stored as its low byte; d = 1 / iscale;
//   bsums = the sums of 16 stored quants. amax == 0: the whole block 0.
// act_quant.q8_K_4x8.ggml (act_quant_q8_K_4x8__ref): tokens t < T - T % 4 by ggml's
//   ggml_quantize_mat_q8_K_4x8 (AVX2): per lane the maxps chain over the block in ggml's
//   order beside the "a positive element equals this lane's max" mask (cleared when the max
//   changes, set by vcmpps EQ_OQ), the 8 lanes folded as the Q8_0 quantizer does; iscale =
//   -127 / amax if a lane holding amax has its mask set, else 127 / amax (0 for amax == 0);
//   q = saturate(cvtps2dq(x * iscale)); d = 1 / iscale; the last T % 4 tokens as q8_K.
// act_quant.f16.ggml: vcvtps2ph (RNE) after a NaN is made sign | 0x7fc00000 (the
//   reference's FP16-library conversion writes every NaN as sign | 0x7e00).
// act_quant.bf16.ggml: ggml_compute_fp32_to_bf16: (u + 0x7fff + (u >> 16 & 1)) >> 16, a NaN
//   (u >> 16) | 64.
// ABI act_quant.rows.v1 (tokens [t0, t1)); a call outside the contract's shapes (K not a
// multiple of the map's block, a bad range) writes nothing, as the reference.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params: none.
bool build_act_quant_q8_K_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_K_4x8_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_K_4x8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_f16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_f16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_bf16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_bf16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
