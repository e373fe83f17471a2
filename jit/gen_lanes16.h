// 16 f32 lanes, the unit of ggml's AVX-512 float arithmetic (GGML_F32_EPR = 16), as one zmm
// (AVX-512 levels) or as a pair of ymm, lanes 0-7 and 8-15 (AVX2). The lane structure is
// the contract's; the vector width is the machine's. Every op here is lane by lane, so both
// widths compute the same bits.
#pragma once

#include "jit/gen_tile.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

struct V16 {
  kir::V part[2];  // part[1] only with two ymm
};

struct Lanes16 {
  kir::Builder& b;
  int parts;  // 1 (zmm) or 2 (ymm pair)

  Lanes16(kir::Builder& builder, Isa isa) : b(builder), parts(isa == Isa::Avx2 ? 2 : 1) {}
  int width() const { return parts == 1 ? 512 : 256; }

  V16 vec(const char* name);
  V16 zero(const char* name);
  // Constants (read-only: with two ymm both parts are one register): every lane = the f32
  // of `bits`, or lane 0 of a 128-bit value.
  V16 splat(uint32_t bits, const char* name);
  V16 bcast(kir::V lane0, const char* name);
  void load(V16 d, kir::Mem m);  // 16 floats at m
  void store(kir::Mem m, V16 a);
  void fma(V16 d, V16 a, V16 b);         // d = fma(a, b, d)
  void fma_m(V16 d, V16 a, kir::Mem m);  // d = fma(a, [m], d)
  // d = fma(a, the f32 at m in every lane, d): AVX-512 an embedded {1to16} operand, AVX2 one
  // vbroadcastss both halves share.
  void fma_b(V16 d, V16 a, kir::Mem m);
  void add(V16 d, V16 a, V16 b);
  void sub(V16 d, V16 a, V16 b);
  void mul(V16 d, V16 a, V16 b);
  void max(V16 d, V16 a, V16 b);  // x86 maxps (a NaN gives b)
  void min(V16 d, V16 a, V16 b);  // x86 minps (a NaN gives b)
  void div(V16 d, V16 a, V16 b);
  void copy(V16 d, V16 a);

  // Lane 0 of the result: GCC's _mm512_reduce_add_ps of v (ggml_vec_reduce / reduce_add16):
  // lanes i+8 + i, then i+4 + i, then (u0 + u2) + (u1 + u3).
  kir::V reduce_add(V16 v);
  // ggml's four accumulators folded as (a0 + a2) + (a1 + a3), and its reduce_add.
  V16 fold4(const V16 acc[4]);
  kir::V fold4_reduce_add(const V16 acc[4]);
  // r[j] = lane 0 of reduce_add(v[j]) for the 16 vectors v[0..15], the same additions in
  // the same pairs, as one vector: 15 adds and 30 shuffles where 16 reduce_adds take 112
  // ops and 16 stores. One zmm only (parts == 1).
  V16 reduce_add16(const V16 v[16]);
  // The same on 256-bit vectors, 8 vectors at a time (either ISA level: a pair of ymm per
  // 16 lanes, or zmm whose halves half_sum adds): lane j of the (256-bit) result = lane 0
  // of reduce_add(v[j]), given s8[j] = half_sum(v[j]), the first stage (made as each v[j]
  // is, so only 8 ymm wait); 7 adds and 14 shuffles after it.
  kir::V half_sum(V16 v);
  kir::V reduce_add8(const kir::V s8[8]);
  // reduce_add8 in two steps, for a caller that makes its s8[] one at a time and would
  // rather not keep eight waiting: w[k] = reduce_pair8(s8[k], s8[k + 4]) once both exist,
  // then reduce_finish8(w) = reduce_add8(s8).
  kir::V reduce_pair8(kir::V a, kir::V b);
  kir::V reduce_finish8(const kir::V w[4]);
  // Lane 0: the largest lane (for NaN-free v; order of the max tree unspecified).
  kir::V reduce_max(V16 v);
};

// dst[i] = src[i] for i in [0, n): 16 floats per step, then one at a time (no rounding).
void copy_floats(Lanes16& L, kir::V src, kir::V dst, kir::V n);

// ggml_v_expf of an AVX-512 build on 16 lanes, bit for bit (kernels/ref/ops_ggml_math.cpp
// ggml_expf), on both ISA levels. Its polynomial j ~ exp(x - n ln2) as ggml writes it;
// its vscalefps(j, n) = j * 2^n rounded once as two power-of-two products:
//   (j * 2^n1) * 2^n2,  n1 = clamp(n, -100, 127),  n2 = clamp(n - n1, -126, 127)
// The first is exact (j in [0.7, 1.42], so j * 2^n1 is normal), the second is the one
// rounding (subnormal results and overflow to inf included). x is clamped to [-200, 200]
// first (exp is +0 below and inf above either way; ggml's |n| > 192 branch), which keeps
// every 2^k finite and needs no branch; NaN stays NaN.
struct ExpConsts {
  V16 lo, hi, log2e, round, ln2hi_neg, ln2lo_neg, c4, c3, c2, c1, c0, one, m100, m126, p127;
  kir::V bias;  // 127 in every dword (integer)
};
ExpConsts exp_consts(Lanes16& L);
void exp16(Lanes16& L, const ExpConsts& c, V16 d, V16 x);

// ggml_vec_soft_max_f32's 16-lane part over floats [0, n16) (n16 a multiple of 16):
// dst[i] = ggml_v_expf(src[i] - max) (exp16), each group's reduce_add added into the double
// in the low 64 bits of `sum` (a 128-bit value); src and dst may be the same row.
void exp_sub_groups(Lanes16& L, const ExpConsts& c, kir::V src, kir::V dst, kir::V n16, V16 max,
                    kir::V sum);
// The soft_max's scale, (float)(1.0 / sum) for the double `sum` (`one_d`: 1.0 as a double
// in the low 64 bits), in lane 0 of a new 128-bit value; scale_groups: row[i] = fl(row[i] *
// that) over the 16-groups of [0, n16).
kir::V inv_of_sum(kir::Builder& b, kir::V one_d, kir::V sum);
void scale_groups(Lanes16& L, kir::V row, kir::V n16, kir::V inv);

// d = silu(g) * u as ggml_vec_swiglu_f32: silu = g / (1 + ggml_v_expf(0 - g)), each step
// rounded (`zero`: +0 lanes). The SwiGLU providers (split and fused halves) share it.
void swiglu16(Lanes16& L, const ExpConsts& c, V16 zero, V16 d, V16 g, V16 u);

}  // namespace cke::jit::gen
