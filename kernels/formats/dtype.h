// Tensor element types: the GGUF/ggml type ids and their block layouts.
//
// One table, one spelling per type. The canonical name (`q4_K`, `bf16`, ...) is the one
// used in kernel maps, contracts, traces and tool output; it is ggml's own spelling.
#pragma once

#include <array>
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
namespace detail {
// Block layouts as ggml defines them (ggml-common.h). Sizes are bytes per block.
inline constexpr std::array<DTypeInfo, 32> kDTypeTable = {{
    {DType::F32, "f32", 1, 4, true},
    {DType::F16, "f16", 1, 2, true},
    {DType::Q4_0, "q4_0", 32, 18, true},
    {DType::Q4_1, "q4_1", 32, 20, true},
    {DType::Q5_0, "q5_0", 32, 22, true},
    {DType::Q5_1, "q5_1", 32, 24, true},
    {DType::Q8_0, "q8_0", 32, 34, true},
    {DType::Q8_1, "q8_1", 32, 36, false},
    {DType::Q2_K, "q2_K", 256, 84, true},
    {DType::Q3_K, "q3_K", 256, 110, true},
    {DType::Q4_K, "q4_K", 256, 144, true},
    {DType::Q5_K, "q5_K", 256, 176, true},
    {DType::Q6_K, "q6_K", 256, 210, true},
    {DType::Q8_K, "q8_K", 256, 292, true},
    {DType::IQ2_XXS, "iq2_xxs", 256, 66, false},
    {DType::IQ2_XS, "iq2_xs", 256, 74, false},
    {DType::IQ3_XXS, "iq3_xxs", 256, 98, false},
    {DType::IQ1_S, "iq1_s", 256, 50, false},
    {DType::IQ4_NL, "iq4_nl", 32, 18, false},
    {DType::IQ3_S, "iq3_s", 256, 110, false},
    {DType::IQ2_S, "iq2_s", 256, 82, false},
    {DType::IQ4_XS, "iq4_xs", 256, 136, false},
    {DType::I8, "i8", 1, 1, false},
    {DType::I16, "i16", 1, 2, false},
    {DType::I32, "i32", 1, 4, false},
    {DType::I64, "i64", 1, 8, false},
    {DType::F64, "f64", 1, 8, false},
    {DType::IQ1_M, "iq1_m", 256, 56, false},
    {DType::BF16, "bf16", 1, 2, true},
    {DType::TQ1_0, "tq1_0", 256, 54, false},
    {DType::TQ2_0, "tq2_0", 256, 66, false},
    {DType::MXFP4, "mxfp4", 32, 17, false},
}};
}  // namespace detail

// Info for a known type (never fails). constexpr so block layouts can static_assert on it.
constexpr const DTypeInfo& dtype_info(DType t) {
  for (const DTypeInfo& i : detail::kDTypeTable)
    if (i.type == t) return i;
  return detail::kDTypeTable[0];  // unreachable: every enumerator is in the table (tested)
}
std::string_view dtype_name(DType t);
// Parses the canonical name; also accepts upper case ("Q4_K", "F16"). nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size (callers validate).
inline size_t row_bytes(DType t, int64_t n) {
  const DTypeInfo& i = dtype_info(t);
  return static_cast<size_t>(n / i.block_size) * i.type_size;
}

}  // namespace cke
