// tinyBLAS prefill on f32 copies (AVX2): the F16 and BF16 tinyBLAS contracts computed by the
// F32 tile (gen_linear_tinyblas.h) on a panel of weight rows and a chunk of tokens that the
// kernel first widens, exactly, into frame buffers:
//   linear.f16_tinyblas.ggml: element k of a row at f32 k (vcvtph2ps); the tile's 16-lane
//     steps are the contract's.
//   linear.bf16_tinyblas.ggml: each 32-element block as [16 odd | 16 even] f32 (lane l:
//     elements 2l + 1, then 2l), so the tile's two steps over a block are the two FMAs a lane
//     of the emulated vdpbf16ps makes, odd pair first, with MXCSR DAZ|FTZ set around them
//     (gen_linear_bf16.h, Dpbf16); the reduction runs in the default environment.
// Same products, same sums in the same order: the bits of the tiles that widen as they go.
//
// Why: on a Zen 1 core (K = N = 4096, T = 32, one thread) the F16 3x2 tile that converts
// as it goes runs 6.8 GMAC/s and the F32 one 13.4: vcvtph2ps (5 per 6 FMAs of a half step),
// not the FMA, bounds it; the copies convert a weight once per call and an activation once
// per panel.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows, tokens: the AVX2 F32 tile's (2 * rows * tokens + tokens + 1 <= 16).
// A panel holds at least one row tile: K <= kPanelBytes / (4 * rows) (the map states it).
bool build_linear_f16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                         std::string* err);
bool build_linear_bf16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                          std::string* err);

}  // namespace cke::jit::gen
