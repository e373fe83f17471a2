// Generated SwiGLU and GEGLU (contracts glu.swiglu.f32.ggml, glu.geglu.f32.ggml), written
// once in KIR on 16-lane vectors (gen_lanes16.h) for AVX-512 and AVX2.
//
// SwiGLU is swiglu_f32__ref's arithmetic bit for bit, i.e.
// ggml_vec_swiglu_f32 of an AVX-512 build on rows whose width is a multiple of 16:
//   y = fl(fl(g / fl(1 + ggml_v_expf(fl(0 - g)))) * up)
// (true division; exp16 is ggml_v_expf). Rows with n % 16 != 0 have a libm tail in ggml;
// the map admits n % 16 == 0 only, so those run on the reference. y may alias gate or up:
// each 16-group is read before it is written.
//
// GEGLU is ggml_vec_geglu_f32 with GGML_GELU_FP16, geglu_f32__ref bit for bit:
//   y = g <= -10 ? +0 : g >= 10 ? fl(g * up) : fl(f32(T[f16(g)]) * up)
// f16(g) by vcvtps2ph (RNE, the reference's conversion for every non-NaN g; a NaN gate
// gives a NaN entry either way), the entries read from ggml's FP16 GELU table (the
// reference's own, 128 KB) by a C helper per chunk of kGegluChunk elements
// (cke_gelu_f16_lookup: data movement only), widened by vcvtph2ps, compared and selected
// per lane. Rows of a multiple of 16 (the map admits only those).
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The glu.gated.v2 ABI of swiglu_f32__ref and geglu_f32__ref (rows [begin, end) of T).
using GluFn = void (*)(const float* gate, const float* up, float* y, int64_t n, int64_t T,
                       int64_t begin, int64_t end);

// impl.params: none.
bool build_swiglu_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_swiglu_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_geglu_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_geglu_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

constexpr int64_t kGegluChunk = 512;

}  // namespace cke::jit::gen

// The C helper of the GEGLU kernels (exported: the emitted C links against it): h[i] =
// T[h[i]] for i < count, T ggml's FP16 GELU table.
extern "C" void cke_gelu_f16_lookup(uint16_t* h, int64_t count);
