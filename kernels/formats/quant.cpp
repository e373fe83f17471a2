// dequantize_row / quantize_row: argument checks, the plain float formats, and dispatch to
// the per-format reference rows (kernels/formats/quant_rows.h).
#include "kernels/formats/quant.h"

#include <cstring>

#include "kernels/formats/quant_rows.h"

namespace cke {
namespace {

using DequantFn = void (*)(const void*, float*, int64_t);
using QuantFn = void (*)(const float*, void*, int64_t);

void dequant_f32(const void* x, float* y, int64_t k) {
  std::memcpy(y, x, static_cast<size_t>(k) * sizeof(float));
}
void quant_f32(const float* x, void* y, int64_t k) {
  std::memcpy(y, x, static_cast<size_t>(k) * sizeof(float));
}

// ggml_fp16_to_fp32_row / ggml_fp32_to_fp16_row (ggml-base: scalar, element by element).
void dequant_f16(const void* x, float* y, int64_t k) {
  const uint8_t* p = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    y[i] = fp16_to_fp32(h);
  }
}
void quant_f16(const float* x, void* y, int64_t k) {
  uint8_t* p = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k; ++i) {
    const uint16_t h = fp32_to_fp16(x[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

// ggml_bf16_to_fp32_row / ggml_fp32_to_bf16_row_ref (what ggml_quantize_chunk uses).
void dequant_bf16(const void* x, float* y, int64_t k) {
  const uint8_t* p = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < k; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    y[i] = bf16_to_fp32(h);
  }
}
void quant_bf16(const float* x, void* y, int64_t k) {
  uint8_t* p = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < k; ++i) {
    const uint16_t h = fp32_to_bf16(x[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

struct Conv {
  DequantFn to_float;
  QuantFn from_float;
};

// nullopt-like {nullptr, nullptr} for types without a reference conversion.
Conv conversions(DType t) {
  switch (t) {
    case DType::F32:
      return {dequant_f32, quant_f32};
    case DType::F16:
      return {dequant_f16, quant_f16};
    case DType::BF16:
      return {dequant_bf16, quant_bf16};
    case DType::Q4_0:
      return {dequantize_row_q4_0, quantize_row_q4_0_ref};
    case DType::Q4_1:
      return {dequantize_row_q4_1, quantize_row_q4_1_ref};
    case DType::Q5_0:
      return {dequantize_row_q5_0, quantize_row_q5_0_ref};
    case DType::Q5_1:
      return {dequantize_row_q5_1, quantize_row_q5_1_ref};
    case DType::Q8_0:
      return {dequantize_row_q8_0, quantize_row_q8_0_ref};
    case DType::Q2_K:
      return {dequantize_row_q2_K, quantize_row_q2_K_ref};
    case DType::Q3_K:
      return {dequantize_row_q3_K, quantize_row_q3_K_ref};
    case DType::Q4_K:
      return {dequantize_row_q4_K, quantize_row_q4_K_ref};
    case DType::Q5_K:
      return {dequantize_row_q5_K, quantize_row_q5_K_ref};
    case DType::Q6_K:
      return {dequantize_row_q6_K, quantize_row_q6_K_ref};
    case DType::Q8_K:
      return {dequantize_row_q8_K, quantize_row_q8_K_ref};
    default:
      return {nullptr, nullptr};
  }
}

bool valid_count(DType t, int64_t n) {
  const DTypeInfo& info = dtype_info(t);
  return info.has_reference && n >= 0 && n % info.block_size == 0;
}

}  // namespace

bool dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const Conv c = conversions(t);
  if (!c.to_float || !valid_count(t, n)) return false;
  if (n > 0) c.to_float(src, dst, n);
  return true;
}

bool quantize_row(DType t, const float* src, void* dst, int64_t n) {
  const Conv c = conversions(t);
  if (!c.from_float || !valid_count(t, n)) return false;
  if (n > 0) c.from_float(src, dst, n);
  return true;
}

}  // namespace cke
