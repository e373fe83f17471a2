// Generated providers of the ops the glm4 and nemotron circuits added, written once in KIR on
// 16-lane vectors (gen_lanes16.h) for AVX-512 and AVX2, each its reference kernel bit for bit:
//
// layernorm (contract layernorm.f32.ggml, gen_layernorm.cpp), per row of n (a multiple of 16):
//   sum   = Σ (double) x_i in index order (a scalar chain), to float; mean = fl(sum / (float) n)
//   d_i   = fl(x_i − mean), written to y; each 16-group of fl(d_i · d_i) reduced by the
//           _mm512_reduce_add_ps tree (Lanes16::reduce_add) and added to a double sum
//   var   = (float)(sum / (double) n); scale = fl(1 / fl(sqrt(fl(var + eps))))
//   y_i   = fl(fl(fl(d_i · scale) · w_i) + b_i)
// y may alias x: a row's x is read (for the sum and for d) before y is written.
//
// relu_sqr (contract unary.relu_sqr.f32.ggml, gen_relu_sqr.cpp): y = fl(r · r), r = maxps(x, 0)
// (x86 max returns its second operand for a NaN and for ±0 pairs: ggml's (x > 0) ? x : 0).
// 16-lane groups, then the same scalar operation on the tail; y may alias x.
//
// swiglu_fused (contract glu.swiglu_fused.f32.ggml, gen_glu_fused.cpp): row t of x = gate
// (n) then up (n), y = fl(fl(g / fl(1 + ggml_v_expf(fl(0 − g)))) · up) as the split SwiGLU
// generator; rows of a multiple of 16 (the map admits only those). y must not alias x.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The ABIs of layernorm_f32__ref, relu_sqr_f32__ref and swiglu_fused_f32__ref (the range
// ABI of kernels/ref/ops.h: rows, elements, tokens [begin, end)).
using LayerNormFn = void (*)(const float* x, const float* w, const float* b, float* y, int64_t n,
                             int64_t rows, float eps, int64_t begin, int64_t end);
using ReluSqrFn = void (*)(const float* x, float* y, int64_t n, int64_t begin, int64_t end);
using GluFusedFn = void (*)(const float* x, float* y, int64_t n, int64_t T, int64_t begin,
                            int64_t end);

// impl.params: none.
bool build_layernorm_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_layernorm_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_relu_sqr_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_relu_sqr_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_swiglu_fused_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_swiglu_fused_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
