// Tensor element types: the GGUF/ggml type ids and their block layouts.
//
// One table, one spelling per type. The canonical name (`q4_K`, `bf16`, ...) is the one
// used in kernel maps, contracts, traces and tool output; it is ggml's own spelling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace cke {

// Values are ggml's `enum ggml_type` ids, which GGUF stores on disk. Ids that ggml retired
// (4, 5, 31-33, 36-38) are not listed: a file that uses them is rejected as "unknown".
enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct DTypeInfo {
  DType type;
  std::string_view name;  // canonical spelling (ggml's), e.g. "q4_K"
  uint32_t block_size;    // elements per block (1 for plain types)
  uint32_t type_size;     // bytes per block
  bool has_reference;     // CKE has reference dequantize/quantize for it
};

// Info for a type id read from a file; nullopt for an unknown id.
std::optional<DTypeInfo> dtype_info(uint32_t id);
// Info for a known type (never fails).
const DTypeInfo& dtype_info(DType t);
std::string_view dtype_name(DType t);
// Parses the canonical name; also accepts upper case ("Q4_K", "F16"). nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size (callers validate).
inline size_t row_bytes(DType t, int64_t n) {
  const DTypeInfo& i = dtype_info(t);
  return static_cast<size_t>(n / i.block_size) * i.type_size;
}

}  // namespace cke
