// f32 -> f16 as ggml's CPU backend writes an F16 activation or KV-cache cell: vcvtps2ph,
// round to nearest even, overflow to inf; a NaN as the FP16 library's fp32_to_fp16 (the
// reference kernels' conversion) writes it, sign | 0x7e00 (no payload). One KIR body for the
// f16 activation conversion and the F16 KV store.
#pragma once

#include "jit/gen_tile.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// y[i] = fp16(x[i]) for i in [i0, i1): 8 lanes per step, then one element at a time, so any
// range is fine (no multiple of 8, no alignment).
void convert_f16_range(kir::Builder& b, Isa isa, kir::V x, kir::V y, kir::V i0, kir::V i1);

}  // namespace cke::jit::gen
