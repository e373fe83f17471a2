// Per-format reference rows behind dequantize_row / quantize_row (kernels/formats/quant.h).
//
// Named after their ggml counterparts in ggml-quants.c, which each one reproduces bit for
// bit. `k` is the element count and must be a multiple of the format's block size (the
// dispatcher in quant.cpp checks). Byte pointers carry no alignment requirement.
#pragma once

#include <cstdint>

namespace cke {

void dequantize_row_q4_0(const void* x, float* y, int64_t k);
void dequantize_row_q4_1(const void* x, float* y, int64_t k);
void dequantize_row_q5_0(const void* x, float* y, int64_t k);
void dequantize_row_q5_1(const void* x, float* y, int64_t k);
void dequantize_row_q8_0(const void* x, float* y, int64_t k);
void dequantize_row_q2_K(const void* x, float* y, int64_t k);
void dequantize_row_q3_K(const void* x, float* y, int64_t k);
void dequantize_row_q4_K(const void* x, float* y, int64_t k);
void dequantize_row_q5_K(const void* x, float* y, int64_t k);
void dequantize_row_q6_K(const void* x, float* y, int64_t k);
void dequantize_row_q8_K(const void* x, float* y, int64_t k);

void quantize_row_q4_0_ref(const float* x, void* y, int64_t k);
void quantize_row_q4_1_ref(const float* x, void* y, int64_t k);
void quantize_row_q5_0_ref(const float* x, void* y, int64_t k);
void quantize_row_q5_1_ref(const float* x, void* y, int64_t k);
void quantize_row_q8_0_ref(const float* x, void* y, int64_t k);
void quantize_row_q2_K_ref(const float* x, void* y, int64_t k);
void quantize_row_q3_K_ref(const float* x, void* y, int64_t k);
void quantize_row_q4_K_ref(const float* x, void* y, int64_t k);
void quantize_row_q5_K_ref(const float* x, void* y, int64_t k);
void quantize_row_q6_K_ref(const float* x, void* y, int64_t k);
void quantize_row_q8_K_ref(const float* x, void* y, int64_t k);

}  // namespace cke
