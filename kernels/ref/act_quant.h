// Activation conversion for the linear kernels: the F32 activation row is turned into the
// weight's "vec_dot type" exactly as ggml's CPU backend does it before a matmul.
//
// These are NOT ggml's reference quantizers (kernels/formats/quant.h): ggml-cpu quantizes
// activations with its x86 SIMD code, whose arithmetic differs in small but bit-visible
// ways (GGML-NUMERICS.md §3.1):
//   - Q8_0 / Q8_1: d = f16(amax / 127) is stored, but the multiplier is 127 / amax (not
//     1 / d), values are rounded half to even (vroundps), and amax is found with the
//     maxps tree of the SIMD code, so a NaN survives only in one lane position (element
//     27 of each block); other NaNs become -128 through vcvtps2dq + saturating packs.
//   - Q8_1 also stores s = f16(d * sum(q)) with the UNROUNDED float d.
//   - Q8_K: the element of largest magnitude (first one on ties) gives the sign:
//     iscale = -127 / max, q = min(127, nearest_int(iscale * x)) (round half to even),
//     d = 1 / iscale as float, plus the sums of each 16 quants. NaN elements quantize to
//     0; an all-zero block gets d = 0, q = 0 and (here) bsums = 0.
//   - F16: round to nearest even (F16C). BF16: ggml's scalar RNE, NaN forced quiet.
//   - Q8_K, 4x8 (ggml_quantize_mat_q8_K_4x8, the repacked q4_K/q2_K gemm's quantizer for
//     groups of 4 tokens; the interleaved layout is ggml's business, the values per row
//     are produced here as plain block_q8_K): amax by a maxps tree, and iscale = -127/amax
//     if ANY element equals +amax, else +127/amax -- so a block holding both +amax and
//     -amax maps +amax to -127 (plain Q8_K: the first of them decides). q is rounded half
//     to even with int8 saturation. A NaN survives the amax tree only at element 251 of a
//     block (then d = NaN); elsewhere it becomes q = -128.
//     The 4x8 quantizer of Q8_0 (q4_0 gemm) is act_quantize_q8_0: same instructions.
// Every function is pure and row-local: n must be a multiple of the block size (32 for
// Q8_0/Q8_1, 256 for Q8_K); callers validate.
#pragma once

#include <cstdint>

#include "kernels/formats/blocks.h"

namespace cke {

void act_convert_f16(const float* x, uint16_t* y, int64_t n);
void act_convert_bf16(const float* x, uint16_t* y, int64_t n);
void act_quantize_q8_0(const float* x, block_q8_0* y, int64_t n);
void act_quantize_q8_1(const float* x, block_q8_1* y, int64_t n);
void act_quantize_q8_K(const float* x, block_q8_K* y, int64_t n);
void act_quantize_q8_K_4x8(const float* x, block_q8_K* y, int64_t n);

}  // namespace cke
