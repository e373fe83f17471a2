#include "kernels/formats/dtype.h"

#include <array>
#include <cctype>
#include <string>

namespace cke {
namespace {

// Block layouts as ggml defines them (ggml-common.h). Sizes are bytes per block.
constexpr std::array<DTypeInfo, 32> kTypes = {{
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

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const DTypeInfo& i : kTypes)
    if (static_cast<uint32_t>(i.type) == id) return i;
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType t) {
  for (const DTypeInfo& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];  // unreachable: every enumerator is in the table (tested)
}

std::string_view dtype_name(DType t) { return dtype_info(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : kTypes) {
    if (i.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t k = 0; k < name.size() && eq; ++k)
      eq = std::tolower(static_cast<unsigned char>(name[k])) ==
           std::tolower(static_cast<unsigned char>(i.name[k]));
    if (eq) return i.type;
  }
  return std::nullopt;
}

}  // namespace cke
