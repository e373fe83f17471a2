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

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The rmsnorm.rows.v2 ABI of rmsnorm_f32__ref (rows [begin, end) of rows).
using RmsNormFn = void (*)(const float* x, const float* w, float* y, int64_t n, int64_t rows,
                           float eps, int64_t begin, int64_t end);

// impl.params: none.
bool build_rmsnorm_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_rmsnorm_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
