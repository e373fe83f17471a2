// Generated linear kernel for F32 weights (contract linear.f32.ggml): ggml_vec_dot_f32 of
// an AVX-512 build, for a tile of rows x tokens at once.
//
// Per output, exactly the reference's arithmetic (kernels/ref/linear_dot_float.cpp):
// four 16-lane FMA accumulators over the 64-element chunks of K (acc_j takes elements
// 64c + 16j + lane), folded (acc0+acc2) + (acc1+acc3), reduced by GCC's
// _mm512_reduce_add_ps tree (lanes i+8, i+4, then (u0+u2) + (u1+u3)); then the K % 64
// tail in index order: rounded products added one by one for the first (K % 64) & ~7
// elements, scalar FMAs for the last K % 8. The tile only shares loads between outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "jit/generators.h"

namespace cke::jit::gen {

// Inner loop ABI: rows [0, nrows) of a tile starting at weight row w (row stride
// row_bytes = 4K) times `tokens` consecutive tokens starting at x (token stride 4K);
// y at (row 0, token 0), tokens y_stride bytes apart. Tile rows past nrows - 1 repeat the
// last row and are not stored.
using F32MicroFn = void (*)(const float* w, int64_t row_bytes, int64_t nrows, const float* x,
                            float* y, int64_t y_stride, int64_t K);

std::unique_ptr<KernelModule> generate_linear_f32_avx512(const GeneratorParams& p,
                                                         std::string* err);

}  // namespace cke::jit::gen
