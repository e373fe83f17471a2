// Re-quantizing a GGUF file (what `cke-gguf quantize` does), and the type rules it shares
// with `cke-gguf synth`.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "runtime/gguf/gguf.h"

namespace cke::gguf {

// Types a file can be quantized to: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K..q6_K.
bool is_quantize_target(DType t);

// llama.cpp's `general.file_type` (enum llama_ftype) for a file whose matrices are `t`:
// f32 0, f16 1, q4_0 2, q4_1 3, q8_0 7, q5_0 8, q5_1 9, q2_K 10, q3_K 12 (Q3_K_M),
// q4_K 15 (Q4_K_M), q5_K 17 (Q5_K_M), q6_K 18, bf16 32. nullopt for other types.
std::optional<uint32_t> llama_ftype(DType t);

// The type a matrix with rows of ne0 elements gets when `want` is asked for: `want` when
// ne0 fits its block, else llama-quantize's fallback (q2_K/q3_K -> q4_0 where llama.cpp
// uses iq4_nl, q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0, legacy types -> f16), and f16 if
// even the fallback does not fit.
DType fitting_type(DType want, int64_t ne0);

// Whether a tensor is a weight matrix that takes the requested type (llama.cpp's rule:
// name ends in "weight" and it has at least 2 dimensions). Others are copied unchanged.
bool is_quantizable_tensor(const TensorInfo& t);

// Writes `in` re-encoded with matrices of type `type` to `out_path`. Every metadata key is
// copied; general.file_type is set. `note` receives one line per fallback. Rows are
// converted in parallel (TBB) and streamed to disk one tensor at a time.
bool quantize_file(const File& in, const std::string& out_path, DType type, GgufError* err,
                   const std::function<void(const std::string&)>& note = {});

// Converts n_rows rows of `src` (type `from`) into `dst` (type `to`) through F32, in parallel.
// Both types need reference conversions (dtype_info(t).has_reference).
void convert_rows(DType from, const uint8_t* src, DType to, uint8_t* dst, int64_t ne0,
                  int64_t n_rows);

}  // namespace cke::gguf
