// Activation rows in the layout the generated quantized linear kernels read: C helpers a
// generated kernel calls by name (their machine code and their emitted C alike).
//
// Q8_0 with f32 scales ("q8_0f"): per token row of K values (K % 32 == 0), K/32 blocks of
// 36 bytes: 32 int8 quants, then the block scale as float. Quants and scale are exactly
// act_quantize_q8_0's (ggml's x86 quantizer; the fp16 scale widened to f32 is exact), so a
// kernel reading this layout computes the bits of one reading block_q8_0.
#pragma once

#include <cstdint>

namespace cke {
constexpr int64_t kQ8_0fBlockBytes = 36;
}

extern "C" {
// Rows t in [0, T) of x (token t at x + t*K) into out (row t at out + t * (K/32) * 36).
void cke_act_q8_0f_rows(const float* x, int64_t K, int64_t T, uint8_t* out);
}
