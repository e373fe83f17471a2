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
  void load(V16 d, kir::Mem m);                // 16 floats at m
  void store(kir::Mem m, V16 a);
  void fma(V16 d, V16 a, V16 b);               // d = fma(a, b, d)
  void fma_m(V16 d, V16 a, kir::Mem m);        // d = fma(a, [m], d)
  void add(V16 d, V16 a, V16 b);
  void sub(V16 d, V16 a, V16 b);
  void mul(V16 d, V16 a, V16 b);
  void max(V16 d, V16 a, V16 b);               // x86 maxps (a NaN gives b)
  void copy(V16 d, V16 a);

  // Lane 0 of the result: GCC's _mm512_reduce_add_ps of v (ggml_vec_reduce / reduce_add16):
  // lanes i+8 + i, then i+4 + i, then (u0 + u2) + (u1 + u3).
  kir::V reduce_add(V16 v);
  // reduce_add of ggml's four accumulators folded as (a0 + a2) + (a1 + a3).
  kir::V fold4_reduce_add(const V16 acc[4]);
  // Lane 0: the largest lane (for NaN-free v; order of the max tree unspecified).
  kir::V reduce_max(V16 v);
};

}  // namespace cke::jit::gen
