// §1 Embedding lookup (GET_ROWS): each row converted with ggml-base's scalar to_float.
//
// F32 / F16 / BF16 widen exactly; the block formats go through cke::dequantize_row, which
// is bit-compatible with ggml's dequantize_row_* (built without FMA).
#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/ref/ops.h"

namespace {
using cke::DType;

// Token ids are validated against n_vocab by the caller (the plan proves them); a negative
// id cannot index anything, so its row is zeros rather than a wild read.
template <class RowFn>
void embed_rows(const int32_t* tokens, const void* table, float* y, int64_t n_embd, int64_t T,
                size_t row_bytes, RowFn&& convert_row) {
  const auto* base = static_cast<const uint8_t*>(table);
  for (int64_t t = 0; t < T; ++t) {
    float* out = y + t * n_embd;
    if (tokens[t] < 0) {
      for (int64_t i = 0; i < n_embd; ++i) out[i] = 0.0f;
      continue;
    }
    convert_row(base + static_cast<size_t>(tokens[t]) * row_bytes, out);
  }
}

void embed_block(DType type, const int32_t* tokens, const void* table, float* y, int64_t n_embd,
                 int64_t T) {
  embed_rows(tokens, table, y, n_embd, T, cke::row_bytes(type, n_embd),
             [&](const uint8_t* row, float* out) { cke::dequantize_row(type, row, out, n_embd); });
}
}  // namespace

extern "C" {

void embed_f32__ref(const int32_t* tokens, const void* table, float* y, int64_t n_embd, int64_t T) {
  embed_rows(
      tokens, table, y, n_embd, T, sizeof(float) * n_embd,
      [&](const uint8_t* row, float* out) { std::memcpy(out, row, sizeof(float) * n_embd); });
}

void embed_f16__ref(const int32_t* tokens, const void* table, float* y, int64_t n_embd, int64_t T) {
  embed_rows(tokens, table, y, n_embd, T, sizeof(uint16_t) * n_embd,
             [&](const uint8_t* row, float* out) {
               for (int64_t i = 0; i < n_embd; ++i) {
                 uint16_t h;
                 std::memcpy(&h, row + 2 * i, 2);
                 out[i] = cke::fp16_to_fp32(h);
               }
             });
}

void embed_bf16__ref(const int32_t* tokens, const void* table, float* y, int64_t n_embd,
                     int64_t T) {
  embed_rows(tokens, table, y, n_embd, T, sizeof(uint16_t) * n_embd,
             [&](const uint8_t* row, float* out) {
               for (int64_t i = 0; i < n_embd; ++i) {
                 uint16_t h;
                 std::memcpy(&h, row + 2 * i, 2);
                 out[i] = cke::bf16_to_fp32(h);
               }
             });
}

#define CKE_EMBED_BLOCK(name, type)                                                          \
  void name(const int32_t* tokens, const void* table, float* y, int64_t n_embd, int64_t T) { \
    embed_block(type, tokens, table, y, n_embd, T);                                          \
  }
CKE_EMBED_BLOCK(embed_q8_0__ref, DType::Q8_0)
CKE_EMBED_BLOCK(embed_q4_0__ref, DType::Q4_0)
CKE_EMBED_BLOCK(embed_q4_1__ref, DType::Q4_1)
CKE_EMBED_BLOCK(embed_q5_0__ref, DType::Q5_0)
CKE_EMBED_BLOCK(embed_q5_1__ref, DType::Q5_1)
CKE_EMBED_BLOCK(embed_q2_K__ref, DType::Q2_K)
CKE_EMBED_BLOCK(embed_q3_K__ref, DType::Q3_K)
CKE_EMBED_BLOCK(embed_q4_K__ref, DType::Q4_K)
CKE_EMBED_BLOCK(embed_q5_K__ref, DType::Q5_K)
CKE_EMBED_BLOCK(embed_q6_K__ref, DType::Q6_K)
#undef CKE_EMBED_BLOCK

}  // extern "C"
