// Generated SwiGLU (contract glu.swiglu.f32.ggml), written once in KIR on 16-lane vectors
// (gen_lanes16.h) for AVX-512 and AVX2: swiglu_f32__ref's arithmetic bit for bit, i.e.
// ggml_vec_swiglu_f32 of an AVX-512 build on rows whose width is a multiple of 16:
//   y = fl(fl(g / fl(1 + ggml_v_expf(fl(0 - g)))) * up)
// (true division; exp16 is ggml_v_expf). Rows with n % 16 != 0 have a libm tail in ggml;
// the map admits n % 16 == 0 only, so those run on the reference. y may alias gate or up:
// each 16-group is read before it is written.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The glu.gated.v1 ABI of swiglu_f32__ref.
using GluFn = void (*)(const float* gate, const float* up, float* y, int64_t n, int64_t T);

// impl.params: none.
bool build_swiglu_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_swiglu_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
