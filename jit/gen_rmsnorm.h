// Generated RMSNorm fused with its weight (contract rmsnorm.f32.ggml), written once in KIR
// for AVX-512 and AVX2: rmsnorm_f32__ref's arithmetic bit for bit, i.e. ggml's RMS_NORM
// followed by the MUL node, per row of n:
//   sum   = sum of (double) fl(x_i * x_i), in index order (a scalar chain, as ggml: a double
//           sum is not reassociated)
//   mean  = (float)(sum / (double) n)
//   scale = fl(1 / fl(sqrt(fl(mean + eps))))
//   y_i   = fl(fl(x_i * scale) * w_i)       (16 lanes at a time)
// Rows of a multiple of 16 elements (every model here; the map admits only those). y may
// alias x: a row is read whole before it is written.
#pragma once

#include <string>

#include "jit/gen_tile.h"
#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The rmsnorm.rows.v2 ABI of rmsnorm_f32__ref (rows [begin, end) of rows).
using RmsNormFn = void (*)(const float* x, const float* w, float* y, int64_t n, int64_t rows,
                           float eps, int64_t begin, int64_t end);

// The arithmetic above as a piece of another generator (rmsnorm_act_quant): built once per
// function (its constants), then emit() writes rows [r, r + R) of y from x and w, R <= 4,
// rows of n floats (n a multiple of 16).
class RmsNormRows {
 public:
  RmsNormRows(kir::Builder& b, Isa isa, kir::V n, kir::V eps);
  void emit(kir::V x, kir::V w, kir::V y, kir::V r, int R);

 private:
  kir::Builder& b_;
  Isa isa_;
  kir::V n_, eps_, nd_, one_, row_bytes_, i_, off_;
};

// impl.params: none.
bool build_rmsnorm_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_rmsnorm_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

// Contract rmsnorm_act_quant.q8_0.ggml (rmsnorm_act_quant_q8_0__ref): the rmsnorm above,
// then act_quant.q8_0.ggml's quantizer (gen_act_quant.h), row by row: xn = rmsnorm(x) * w
// and y = q8_0(xn), both written, bit for bit the two steps. Rows of a multiple of 32.
using RmsNormActQuantFn = void (*)(const float* x, const float* w, float* xn, void* y, int64_t n,
                                   int64_t rows, float eps, int64_t begin, int64_t end);
bool build_rmsnorm_act_quant_q8_0_avx512(const GeneratorParams& p, kir::Module* m,
                                         std::string* err);
bool build_rmsnorm_act_quant_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
