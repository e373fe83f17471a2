// Generated RoPE (contracts rope.normal.f32.ggml and rope.neox.f32.ggml), written once in KIR
// on 16-lane vectors (gen_lanes16.h) for AVX-512 and AVX2: rope_{normal,neox}_f32__ref's
// arithmetic bit for bit.
//
// Per token the cos/sin cache is ggml's, computed by the reference's own scalar code
// (cke::ref::rope_cache: the cumulative theta product, glibc cosf/sinf) through a C helper
// the kernel calls (cke_rope_cache_normal / cke_rope_cache_neox, which lay it out for the
// vectors); then every head of the token is rotated 16 lanes at a time, each output as one
// rounded product and one FMA, as the reference:
//   y0 = fma(x0, cos, fl(x1 * -sin))      (= fma(x0, cos, -fl(x1 * sin)))
//   y1 = fma(x0, sin, fl(x1 * cos))
// normal: pairs (x[2k], x[2k+1]), 8 pairs per 16 lanes (the pair's partner by an in-lane
// permute); neox: pairs (x[k], x[k + n_rot/2]), 16 pairs per two 16-lane loads. Dims
// n_rot .. head_dim - 1 (partial rotary) are left as they are, as the reference does.
// Shapes: n_rot a multiple of 16 (normal) or 32 (neox), at most kRopeMaxRot (the cache is a
// frame buffer); the maps admit only those, other calls write nothing.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The rope.in_place.v2 ABI of rope_{normal,neox}_f32__ref (tokens [begin, end) of T).
using RopeFn = void (*)(float* x, int64_t head_dim, int64_t n_heads, int64_t T, int64_t pos0,
                        int64_t n_rot, float freq_base, float freq_scale, int64_t begin,
                        int64_t end);

constexpr int64_t kRopeMaxRot = 512;

// impl.params: none.
bool build_rope_normal_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_rope_normal_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_rope_neox_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_rope_neox_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen

// The C helpers the generated kernels call (exported: the emitted C links against them).
// freq = {freq_base, freq_scale}; n_rot <= kRopeMaxRot, even.
// normal: cache[0, n_rot) = {cos0, sin0, cos1, sin1, ...}, cache[n_rot, 2 n_rot) =
//         {-sin0, cos0, -sin1, cos1, ...};
// neox:   with h = n_rot / 2: cache[0, h) = cos, cache[h, 2h) = sin, cache[2h, 3h) = -sin.
extern "C" void cke_rope_cache_normal(float* cache, int64_t n_rot, int64_t pos, const float* freq);
extern "C" void cke_rope_cache_neox(float* cache, int64_t n_rot, int64_t pos, const float* freq);
