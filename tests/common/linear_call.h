// Tests and benchmarks call linear kernels on f32 activations: the activations are first
// converted as the kernel's contract says (`convert: {x: {from: f32, via: act_quant.*}}`),
// by that conversion's reference kernel (kernels/ref/act_steps.h), then the kernel runs on
// the converted rows. LinearCallTable.ContractsAgree (tests/jit_kernels) checks this
// table against the contracts of kernel_maps/.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/formats/dtype.h"
#include "kernels/ref/act_steps.h"
#include "kernels/ref/linear.h"

namespace cke::test {

using RawLinearFn = void (*)(const void*, const void*, float*, int64_t, int64_t, int64_t, int64_t,
                             int64_t);
using ActStepFn = void (*)(const float*, void*, int64_t, int64_t, int64_t, int64_t);

// The conversion of a weight type's contract (`repacked`: the x8 contracts); null for f32.
inline ActStepFn act_step_for(DType w, bool repacked) {
  switch (w) {
    case DType::F32:
      return nullptr;
    case DType::F16:
      return act_quant_f16__ref;
    case DType::BF16:
      return act_quant_bf16__ref;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
      return act_quant_q8_0__ref;
    case DType::Q4_1:
    case DType::Q5_1:
      return act_quant_q8_1__ref;
    case DType::Q4_K:
    case DType::Q2_K:
      return repacked ? act_quant_q8_K_4x8__ref : act_quant_q8_K__ref;
    default:
      return act_quant_q8_K__ref;
  }
}

inline DType act_type_for(DType w) {
  switch (w) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      return w;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q5_0:
      return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1:
      return DType::Q8_1;
    default:
      return DType::Q8_K;
  }
}

// x [K, T] f32 converted by `step` to rows of `type` (a copy of x when step is null).
inline std::vector<uint8_t> convert_activations(ActStepFn step, DType type, const float* x,
                                                int64_t K, int64_t T) {
  std::vector<uint8_t> out(row_bytes(type, K) * size_t(T));
  if (!step) {
    std::copy(reinterpret_cast<const uint8_t*>(x), reinterpret_cast<const uint8_t*>(x + K * T),
              out.begin());
    return out;
  }
  step(x, out.data(), K, T, 0, T);
  return out;
}

// fn(converted x, ...) for f32 x.
inline void call_linear(RawLinearFn fn, DType w, bool repacked, const float* x, const void* wt,
                        float* y, int64_t K, int64_t N, int64_t T, int64_t n0, int64_t n1) {
  if (K <= 0 || T < 0 || K % dtype_info(act_type_for(w)).block_size != 0) {
    fn(x, wt, y, K, N, T, n0, n1);  // invalid shapes: the kernel must refuse them itself
    return;
  }
  const std::vector<uint8_t> a =
      convert_activations(act_step_for(w, repacked), act_type_for(w), x, K, T);
  fn(x ? a.data() : nullptr, wt, y, K, N, T, n0, n1);
}

}  // namespace cke::test
