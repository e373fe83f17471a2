// Block layouts of the quantized formats, byte for byte as ggml stores them (ggml-common.h).
//
// A row of n elements of type T is n / block_size consecutive blocks, no padding. fp16
// fields are raw IEEE half bits (`uint16_t`), little endian like the rest of GGUF. Every
// struct has the exact size dtype_info() gives, checked at compile time below, so kernels
// may cast a (suitably aligned) row pointer to `const block_xxx*`. The reference code in
// kernels/formats/ itself copies blocks in and out with memcpy, so it accepts any alignment.
#pragma once

#include <cstdint>

#include "kernels/formats/dtype.h"

namespace cke {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK_K = 256;       // super-block of the K-quants
inline constexpr int kKScaleSize = 12;  // packed 6-bit scales/mins of q4_K and q5_K

// x = d * (q - 8), q in 0..15. qs[j]: low nibble = element j, high nibble = element j + 16.
struct block_q4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};

// x = d * q + m, q in 0..15; nibble order as q4_0.
struct block_q4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_1 / 2];
};

// x = d * (q - 16), q in 0..31: low 4 bits as q4_0, bit 4 of element j is bit j of qh
// (qh read as a little-endian uint32).
struct block_q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};

// x = d * q + m, q in 0..31; bit layout as q5_0.
struct block_q5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};

// x = d * q, q signed 8-bit.
struct block_q8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};

// Activation format of the q4_1/q5_1 dot products: as q8_0 plus s = d * sum(qs).
struct block_q8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK8_1];
};

// 16 sub-blocks of 16. scales[k]: low nibble = scale, high nibble = min of sub-block k.
// x = d*sc*q - dmin*m, q in 0..3. qs: per 128-element half h, byte qs[32h + l] holds
// elements 128h + l + 32s at bits 2s..2s+1 (s = 0..3).
struct block_q2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16, x = d * (sc - 32) * (q - 4), q in 0..7. Low 2 bits laid out as
// q2_K; the high bit of element e is bit e/32 of hmask[e % 32]. scales: 16 6-bit values,
// low 4 bits in scales[0..7] (sub-blocks 0..7 low nibble, 8..15 high nibble), high 2 bits
// of sub-block k in scales[8 + k%4] at bits 2*(k/4).
struct block_q3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32, x = d*sc*q - dmin*m, q in 0..15, 6-bit sc and m packed in `scales`
// (see get_scale_min_k4 in kernels/formats/kquant_util.h). qs: per 64-element chunk c,
// qs[32c + l] low nibble = element 64c + l, high nibble = element 64c + 32 + l.
struct block_q4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};

// As q4_K with q in 0..31: bit 4 of element 64c + l is bit 2c of qh[l], of element
// 64c + 32 + l bit 2c + 1.
struct block_q5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16, x = d * scales[k] * (q - 32), q in 0..63, scales signed 8-bit.
// Per 128-element half h (ql += 64h, qh += 32h), l = 0..31: element 128h + l + 32s has
// low 4 bits in ql[l] (s=0) / ql[l+32] (s=1) low nibble, ql[l] (s=2) / ql[l+32] (s=3) high
// nibble, and its high 2 bits at bits 2s..2s+1 of qh[l].
struct block_q6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// Activation format of the K-quant dot products: x = d * q with a float32 d, plus the
// sums of each group of 16 quants.
struct block_q8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

#define CKE_CHECK_BLOCK(T, dt, n)                                          \
  static_assert(sizeof(T) == dtype_info(DType::dt).type_size, #T " size"); \
  static_assert(n == dtype_info(DType::dt).block_size, #T " elements")
CKE_CHECK_BLOCK(block_q4_0, Q4_0, kQK4_0);
CKE_CHECK_BLOCK(block_q4_1, Q4_1, kQK4_1);
CKE_CHECK_BLOCK(block_q5_0, Q5_0, kQK5_0);
CKE_CHECK_BLOCK(block_q5_1, Q5_1, kQK5_1);
CKE_CHECK_BLOCK(block_q8_0, Q8_0, kQK8_0);
CKE_CHECK_BLOCK(block_q8_1, Q8_1, kQK8_1);
CKE_CHECK_BLOCK(block_q2_K, Q2_K, kQK_K);
CKE_CHECK_BLOCK(block_q3_K, Q3_K, kQK_K);
CKE_CHECK_BLOCK(block_q4_K, Q4_K, kQK_K);
CKE_CHECK_BLOCK(block_q5_K, Q5_K, kQK_K);
CKE_CHECK_BLOCK(block_q6_K, Q6_K, kQK_K);
CKE_CHECK_BLOCK(block_q8_K, Q8_K, kQK_K);
#undef CKE_CHECK_BLOCK

}  // namespace cke
