// Generated activation quantization (op act_quant), written once in KIR for AVX-512 and
// AVX2. Contract act_quant.q8_0.ggml: act_quant_q8_0__ref bit for bit, i.e. ggml's x86
// quantize_row_q8_0 (AVX path) per 32-float block:
//   amax = |x| of four 8-lane vectors max-folded lane-wise in vector order (maxps, whose
//          NaN rule makes the order matter), then hi-onto-lo 128, movehl, movehdup;
//   d = amax / 127, id = amax != 0 ? 127 / amax : 0 (branchless: 127 / (amax + z) masked
//       to 0, z = 1.0 exactly when amax's bits are 0);
//   q = int8 saturate(cvtps2dq(x * id)) in element order, y.d = fp16(d) as the reference's
//       FP16-library conversion (vcvtps2ph RNE; a NaN d is first made 0x7fc00000, so it
//       becomes 0x7e00 as there, not F16C's payload-keeping NaN).
// Tokens [t0, t1) of the act_quant.rows.v1 ABI; rows outside the contract's shapes (K not a
// multiple of 32, a bad range) write nothing, as the reference.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The act_quant.rows.v1 ABI of act_quant_q8_0__ref.
using ActQuantFn = void (*)(const float* x, void* y, int64_t K, int64_t T, int64_t t0, int64_t t1);

// impl.params: none.
bool build_act_quant_q8_0_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// Contract act_quant.q8_1.ggml (act_quant_q8_1__ref): ggml's x86 quantize_row_q8_1, the
// q8_0 body plus s = fp16(d * sum q) (the wrapping int32 sum of the unsaturated quants, the
// unrounded float d; fp16 as above, a NaN keeps its sign).
bool build_act_quant_q8_1_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
