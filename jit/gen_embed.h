// Generated embedding lookup (op embed, contracts embed.<type>.ggml), written once in KIR on
// 16-lane vectors (gen_lanes16.h: one zmm at AVX-512, a ymm pair at AVX2) for every table
// type ggml models store embeddings in: y[t] = to_float(table row tokens[t]), each row
// dequantized as ggml-base's dequantize_row_* (the reference, kernels/ref/ops_embed.cpp):
//   f32 copied; f16 by vcvtph2ps (exact; a NaN keeps its payload and gets the quiet bit, as
//   the reference's conversion); bf16 widened (<< 16);
//   q8_0 float(q) * d; q4_0 float(nibble - 8) * d; q4_1 float(nibble) * d + m; q5_0 / q5_1
//   the same with the fifth bit from qh; q2_K fl(fl(d * (sc & 15)) * float(q)) -
//   fl(dmin * (sc >> 4)); q3_K fl(d * float(sc - 32)) * float(q - (hbit ? 0 : 4)); q4_K / q5_K
//   fl(fl(d * sc) * float(q)) - fl(dmin * m) with the 6-bit scales unpacked in vector lanes; q6_K
//   fl(fl(d * sc) * float(q - 32)); every product and sum rounded as written (no FMA), d and m
//   through vcvtph2ps.
// A negative token id writes a row of zeros (as the reference); ids past the table are the
// caller's to prevent (the runtime checks them). A row width the map does not admit (not a
// multiple of the block, or of 16 for the float types) writes nothing.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The embed.row_gather.v1 ABI of embed_*__ref.
using EmbedFn = void (*)(const int32_t* tokens, const void* table, float* y, int64_t n_embd,
                         int64_t T);

// impl.params: none. One builder per table type and ISA level.
#define CKE_EMBED_GENERATORS(X) \
  X(f32)                        \
  X(f16)                        \
  X(bf16)                       \
  X(q8_0)                       \
  X(q4_0)                       \
  X(q4_1)                       \
  X(q5_0)                       \
  X(q5_1)                       \
  X(q2_K)                       \
  X(q3_K)                       \
  X(q4_K)                       \
  X(q5_K)                       \
  X(q6_K)
#define CKE_EMBED_DECLARE(t)                                                                 \
  bool build_embed_##t##_avx512(const GeneratorParams& p, kir::Module* m, std::string* err); \
  bool build_embed_##t##_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
CKE_EMBED_GENERATORS(CKE_EMBED_DECLARE)
#undef CKE_EMBED_DECLARE

}  // namespace cke::jit::gen
