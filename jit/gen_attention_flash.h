// Generated flash attention over the F16 KV cache (contract attention.f16_flash.ggml):
// ggml's FLASH_ATTN_EXT arithmetic of attention_f16_flash__ref (kernels/ref/
// ops_attention_flash.cpp) bit for bit, both of its loops, on 16-lane vectors
// (gen_lanes16.h) for AVX-512 and AVX2. Which loop runs depends on T, as in ggml.
//
// T < 64, per query token t and up to 4 (AVX2: 2) heads of one KV group:
//   qf     f32(f16(q)): the query as the F16 vec_dot sees it (a stack row)
//   score  ggml_vec_dot_f16(K cell, Q16): 4 x 16-lane FMAs over 64-element chunks, folded
//          (a0+a2)+(a1+a3), reduce_add tree; then fl(· scale) + 0
//   softmax ggml's online update, cells in blocks of 16: the max before each cell, then
//          every cell's ms / vs through libm's expf on 16 lanes (gen_libm_expf.h), then S
//   value  VKQ = f16(f16(VKQ · ms) ... ): ggml_vec_scale_f16 then ggml_vec_mad_f16, each
//          rounded to fp16 (vcvtps2ph + vcvtph2ps; ms = 1 is exact and left out)
//   out    f32(VKQ) · (S == 0 ? 0 : 1/S)      (cke_flash_finish)
// T >= 64: the 64x64-tiled loop with 16 query rows in the lanes, the heads of a KV group and
// several row groups sharing each widened tile (emit_tiled in the .cpp), all in vectors.
// head_dim must be a multiple of 64 (no vec_dot tail) and at most 256 (stack tiles); the map
// says so.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The attention.kv_cache_f16.v1 ABI of attention_f16_flash__ref.
using AttentionF16Fn = void (*)(const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
                                float* out, int64_t head_dim, int64_t n_head, int64_t n_head_kv,
                                int64_t n_ctx, int64_t pos0, int64_t T, float scale, int64_t window,
                                int64_t h0, int64_t h1);

bool build_attention_f16_flash_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_attention_f16_flash_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen

// The C helper the generated kernels call (exported: the emitted C links against it):
// st = {s, M, S, ms, vs, inv}; inv = S == 0 ? 0 : 1 / S.
extern "C" void cke_flash_finish(float* st);
