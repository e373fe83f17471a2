// Generated attention over the F32 KV cache (contract attention.f32.ggml), written once in
// KIR on 16-lane vectors (gen_lanes16.h) for AVX-512 and AVX2: the ABI and the arithmetic of
// attention_f32__ref (kernels/ref/ops_attention.cpp), bit for bit.
//
// Per query token t and head h (KV head h / (n_head / n_head_kv)), over cells 0..p (p =
// pos0 + t), the row padded with -inf to a multiple of 16:
//   scores  ggml_vec_dot_f32(K cell, q): 4 x 16-lane FMA accumulators over 64-element
//           chunks, folded (a0+a2)+(a1+a3), reduce_add tree, head_dim % 64 tail as
//           rounded products added in order; then fl(· scale); masked cells -inf
//   max     lane-wise vmaxps, then across lanes (any order gives the same value unless a
//           score is NaN, and then every probability is NaN either way)
//   exp     ggml_v_expf (gen_lanes16.h exp16: vscalefps as two power-of-two products)
//   sum     each 16-group's reduce_add tree converted to double and added in order;
//           inv = (float)(1.0 / sum); p = fl(e · inv)
//   KQV     per output dim d, V^T row d (cells contiguous) · p over cells 0..p: one 16-lane
//           accumulator (tinyBLAS, T >= 2 and head_dim % 4 == 0) or ggml_vec_dot_f32's
//           4 x 16 lanes by cell index (decode), lanes past p untouched (zero-masked loads
//           that read nothing: fma(0, 0, acc) = acc as acc is never -0).
//
// At AVX-512 with head_dim % 64 == 0 and T >= 2, prefill goes in blocks of 8 / H tokens of
// the H heads of one KV group (H = 4, 2 or 1): scores in 64-cell pieces for all of the
// block's rows while K is in L1, one tinyBLAS KQV over the eight rows (a row whose cells end
// before the block's last token's reads zero probabilities there: fma(v, +0, acc) = acc for
// any finite v, and tinyBLAS itself runs every row over the whole cache) in 512-cell pieces
// with the accumulators kept in the frame between pieces. The order of every sum is the
// one-token order.
//
// At AVX2 (16 ymm: eight rows of two-ymm accumulators do not fit) prefill with the tinyBLAS
// KQV goes in blocks of 4 tokens of one head: scores in the same 64-cell pieces, and the
// block's KQV one pass per row of V^T for the four rows (kqv_block_avx2), the shorter rows
// reading zeros as above. One core, head_dim 64 / 128, T = 64 after 1984 cells: 36 / 41 ->
// 28.5 / 29 ms (scores and softmax are 17 of them).
//
// The probabilities live in a frame buffer of `cells` floats a row (a generator parameter;
// eight rows at AVX-512, four at AVX2); the map requires n_ctx <= cells, and the kernel returns
// without writing if pos0 + T > cells.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The attention.kv_cache.v1 ABI of attention_f32__ref.
using AttentionFn = void (*)(const float* q, const float* k_cache, const float* v_cache, float* out,
                             int64_t head_dim, int64_t n_head, int64_t n_head_kv, int64_t n_ctx,
                             int64_t pos0, int64_t T, float scale, int64_t window, int64_t h0,
                             int64_t h1);

// impl.params: cells (a multiple of 16, 16 .. 1048576).
bool build_attention_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_attention_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
