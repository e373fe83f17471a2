// Reference conversions between F32 and every tensor format CKE computes with.
//
// These are the numerical ground truth of the project. They are bit-compatible with ggml's
// reference code (ggml-quants.c, built without FMA): `dequantize_row` equals ggml's
// `dequantize_row_*` / `to_float`, and `quantize_row` equals `quantize_row_*_ref` (round to
// nearest, no importance matrix), so a tensor quantized here is byte-identical to the same
// F32 tensor quantized by llama-quantize.
#pragma once

#include <cstdint>

#include "kernels/formats/dtype.h"

namespace cke {

// Supported types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, Q8_K (exactly those with dtype_info(t).has_reference). Any alignment is accepted.
//
// Both return false, and write nothing, when t has no reference conversion or n is negative
// or not a multiple of dtype_info(t).block_size. NaN/Inf inputs are not rejected: the
// results are deterministic and follow ggml's x86-64 build (docs/formats.md, per format).
//
// `src` holds row_bytes(t, n) bytes; `dst` receives n floats.
bool dequantize_row(DType t, const void* src, float* dst, int64_t n);
// `src` holds n floats; `dst` receives row_bytes(t, n) bytes. Blocks are independent, so
// any number of rows can be converted in one call (as llama-quantize does).
bool quantize_row(DType t, const float* src, void* dst, int64_t n);

// Scalar conversions, bit-exact with ggml-base's scalar code: fp16 round to nearest even
// (overflow to Inf); fp16 -> fp32 exact, signalling NaNs come back quiet; fp32 -> fp16 maps
// every NaN to 0x7e00 (with its sign); bf16 as documented below.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // ggml_compute_fp32_to_bf16: RNE, NaN forced quiet

}  // namespace cke
