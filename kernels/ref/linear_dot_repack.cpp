// ggml's repacked ("CPU_REPACK") matmul kernels, ggml-cpu/arch/x86/repack.cpp of an
// AVX-512 build, one output at a time: ggml_gemv_* (one token) and ggml_gemm_* (four
// tokens) of q4_0_8x8, q4_K_8x8 and q2_K_8x8 (GGML-NUMERICS.md §3.4).
//
// Repacking interleaves 8 weight rows so one vector holds the same position of 8 rows;
// every output column keeps its own float accumulator lane from the first block to the
// store (AVX-512 gemm: 16 columns x 4 tokens, AVX2 remainder: 8 x 4, gemv: 8 x 1), and
// ggml's thread chunks are aligned to 8 rows. So the interleave changes the memory layout
// only: per output the arithmetic below is the whole story, independent of the row's
// place in its group of 8 and of how rows are split between threads. What differs from
// the plain vec_dot (linear_dot_k.cpp / linear_dot_q.cpp) is the float part: no 8-lane
// split of K and no horizontal sum, one FMA per block of the granularity below:
//   q4_0: per 32-block    acc = fma(float(sum_32 qw*qa), fl(dw*da), acc)
//   q4_K: per super-block (gemv) or per 64-element pair of sub-blocks (gemm)
//           acc    = fma(float(sum_j sc_j * sum_32 q*qa), fl(dw*da), acc)
//           accmin = fma(float(sum_j m_j * bsum32_j),    fl(dmin_w*da), accmin)
//   q2_K: as q4_K with sub-blocks of 16, per super-block (gemv) or per 128-element half
//         (gemm);  output acc - accmin for both K-quants.
// The integer parts are exact: products accumulate in int16 lanes (vpmaddubsw + vpaddw;
// at most 16 products of 15 * 128 per lane, no saturation or wrap), then vpmaddwd with the
// scales into int32. Only int32 -> float (vcvtdq2ps, round to nearest even) may round.
#include <cmath>

#include "kernels/formats/quant.h"
#include "kernels/ref/linear_dot.h"
#include "kernels/ref/linear_lanes.h"

namespace cke::ref {
namespace {

// q4_0 weight integers of one block: element e < 16 is the low nibble of qs[e], e >= 16
// the high nibble of qs[e - 16], minus 8 (repacking XORs 0x88 and a sign-extending lookup
// undoes it: the same values).
void q4_0_ints(const block_q4_0& b, int8_t q[32]) {
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>((b.qs[j] & 0x0F) - 8);
    q[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
  }
}

// Sum of a q4_0 block's 32 products. The gemv calls mul_sum_i8_pairs_acc_int32x8(weights,
// activations): vpsignb moves the weight's sign onto the activation, which wraps an
// activation of -128 against a negative weight (lanes::mul_sign_i8, as in the plain
// vec_dot). The gemm passes the operands the other way round (activations first): |a| of
// -128 is read as the unsigned byte 128 and the weight (-8..7) is negated without wrap,
// so every product is exact. (Activations are -128 only after a NaN input.)
int32_t q4_0_block_sum(const block_q4_0& w, const block_q8_0& a, bool gemm) {
  int8_t q[32];
  q4_0_ints(w, q);
  bool has_min = false;
  for (int e = 0; e < 32; ++e) has_min |= a.qs[e] == -128;
  int32_t s = 0;
  if (gemm || !has_min)  // the common case: plain products (a vectorisable loop)
    for (int e = 0; e < 32; ++e) s += static_cast<int32_t>(q[e]) * a.qs[e];
  else
    for (int e = 0; e < 32; ++e) s += lanes::mul_sign_i8(q[e], a.qs[e]);
  return s;
}

float q4_0_8x8(int64_t n, const block_q4_0* w, const block_q8_0* a, bool gemm) {
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d);
    acc = std::fma(static_cast<float>(q4_0_block_sum(w[b], a[b], gemm)), d, acc);
  }
  return acc;
}

// q4_K: `per_fma` sub-blocks of 32 (8 = gemv, 2 = gemm) go into each pair of FMAs.
float q4_K_8x8(int64_t n, const block_q4_K* w, const block_q8_K* a, int per_fma) {
  float acc = 0.0f, acc_min = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q4_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = fp16_to_fp32(x.d) * y.d;
    const float dmin = fp16_to_fp32(x.dmin) * y.d;
    uint8_t sc[8], mn[8];
    lanes::unpack_scales_k4(x.scales, sc, mn);
    for (int j0 = 0; j0 < 8; j0 += per_fma) {
      int32_t isum = 0, imin = 0;
      for (int j = j0; j < j0 + per_fma; ++j) {
        // Sub-block j = 2c + h: elements 64c + 32h + l, nibble h of qs[32c + l].
        const int c = j / 2, h = j % 2;
        int32_t s = 0;
        for (int l = 0; l < 32; ++l) {
          const int q = h ? (x.qs[32 * c + l] >> 4) : (x.qs[32 * c + l] & 0x0F);
          s += q * y.qs[32 * j + l];
        }
        isum += sc[j] * s;
        // The 32-element bsum is vphaddw of two int16 bsums (no overflow: |sum| <= 4096).
        imin += mn[j] * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
      }
      acc = std::fma(static_cast<float>(isum), d, acc);
      acc_min = std::fma(static_cast<float>(imin), dmin, acc_min);
    }
  }
  return acc - acc_min;
}

// q2_K: `per_fma` sub-blocks of 16 (16 = gemv, 8 = gemm) go into each pair of FMAs.
float q2_K_8x8(int64_t n, const block_q2_K* w, const block_q8_K* a, int per_fma) {
  float acc = 0.0f, acc_min = 0.0f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const block_q2_K& x = w[i];
    const block_q8_K& y = a[i];
    const float d = fp16_to_fp32(x.d) * y.d;
    const float dmin = fp16_to_fp32(x.dmin) * y.d;
    for (int k0 = 0; k0 < 16; k0 += per_fma) {
      int32_t isum = 0, imin = 0;
      for (int k = k0; k < k0 + per_fma; ++k) {
        // Sub-block k covers elements 16k..16k+15, all in 128-element half h = k/8 and
        // 32-element group g = (k%8)/2: element 128h + 32g + l has its 2 bits at 2g of
        // qs[32h + l], l = 16*(k%2) .. +15.
        const int h = k / 8, g = (k % 8) / 2, l0 = 16 * (k % 2);
        const uint8_t* qs = x.qs + 32 * h + l0;
        const int8_t* qa = y.qs + 16 * k;
        int32_t s = 0;
        for (int l = 0; l < 16; ++l) s += ((qs[l] >> (2 * g)) & 3) * qa[l];
        isum += (x.scales[k] & 0x0F) * s;
        imin += (x.scales[k] >> 4) * y.bsums[k];
      }
      acc = std::fma(static_cast<float>(isum), d, acc);
      acc_min = std::fma(static_cast<float>(imin), dmin, acc_min);
    }
  }
  return acc - acc_min;
}

}  // namespace

float gemv_q4_0_8x8_q8_0(int64_t n, const block_q4_0* w, const block_q8_0* a) {
  return q4_0_8x8(n, w, a, false);
}
float gemm_q4_0_8x8_q8_0(int64_t n, const block_q4_0* w, const block_q8_0* a) {
  return q4_0_8x8(n, w, a, true);
}
float gemv_q4_K_8x8_q8_K(int64_t n, const block_q4_K* w, const block_q8_K* a) {
  return q4_K_8x8(n, w, a, 8);
}
float gemm_q4_K_8x8_q8_K(int64_t n, const block_q4_K* w, const block_q8_K* a) {
  return q4_K_8x8(n, w, a, 2);
}
float gemv_q2_K_8x8_q8_K(int64_t n, const block_q2_K* w, const block_q8_K* a) {
  return q2_K_8x8(n, w, a, 16);
}
float gemm_q2_K_8x8_q8_K(int64_t n, const block_q2_K* w, const block_q8_K* a) {
  return q2_K_8x8(n, w, a, 8);
}

}  // namespace cke::ref
