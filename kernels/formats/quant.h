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

// n must be a multiple of dtype_info(t).block_size; t must have has_reference.
// `src` holds row_bytes(t, n) bytes; `dst` n floats.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// `dst` receives row_bytes(t, n) bytes.
void quantize_row(DType t, const float* src, void* dst, int64_t n);

// Scalar conversions (round to nearest even; NaN stays NaN).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // ggml_compute_fp32_to_bf16: RNE, NaN forced quiet

}  // namespace cke
