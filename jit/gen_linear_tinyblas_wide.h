// tinyBLAS prefill at AVX2 for F16 and BF16 weights (contracts linear.f16_tinyblas.ggml,
// linear.bf16_tinyblas.ggml): a tile of 4 rows x 3 tokens that computes each output's 16
// lanes as two 8-lane halves, one after the other, over the weight rows as the file holds
// them (widened as loaded) and an f32 copy of a chunk of tokens made per call:
//   F16: element k of a row at f32 k (vcvtph2ps); lane l takes elements 16c + l.
//   BF16: lane l of a 32-element block takes element 2l + 1 and then 2l (the two FMAs of the
//     emulated vdpbf16ps, odd pair first) under MXCSR DAZ|FTZ (gen_linear_bf16.h, Dpbf16);
//     the copy holds a block as [odd | even] f32 a half.
// The copy is split by halves ([lanes 0-7 of every step | lanes 8-15 of every step] a
// token), so a half is one contiguous stream. Same products, same sums in the same order:
// the bits of the tiles that keep both halves in registers.
//
// Why. The contract's 16 lanes are two ymm an output at AVX2: a tile with both halves live
// holds 3 x 2 outputs (12 accumulators), 10 loads per 12 FMAs. One half at a time holds
// 4 x 3, 7 loads per 12 FMAs, and the 4 weight rows stay in L1 across the chunk's token
// groups. One core of an AMD EPYC Zen 5 capped to AVX2 (K = 2048 / 5632, N = 4096, T = 32,
// GMAC/s): F16 38.0 -> 43.3 / 34.9 -> 40.8, BF16 38.6 -> 43.3 / 36.7 -> 38.0 against the 3x2
// tile on f32 copies of both operands; the ymm FMA peak there is about 53.
// (On a Zen 1 core, with 128-bit FP units, vcvtph2ps was what bound the tile that converted
// as it went, 6.8 GMAC/s against 13.4 on f32: that is why the first version widened the
// weights too. Not measured there since.)
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows, tokens: rows * tokens + tokens + 1 <= 16 (the halves tile's vectors).
// A panel holds at least one row tile: K <= kPanelBytes / (2 * rows) (the map states it).
bool build_linear_f16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                         std::string* err);
bool build_linear_bf16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                          std::string* err);

}  // namespace cke::jit::gen
