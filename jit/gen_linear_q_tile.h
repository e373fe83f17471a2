// The inner function both quantized linear emitters (AVX2, AVX-512) generate has one
// signature: a tile of weight rows against the quantized activations of a token group,
//   void inner(const uint8_t* w, int64 row_bytes, int64 nrows, const int8_t* aq,
//              const float* ad, float* y, int64 y_stride, int64 nblocks)
// Its frame and the row pointers of the tile are shared here; the dot-product bodies are
// ISA-specific (gen_linear_q_avx2.cpp, gen_linear_q_avx512.cpp).
#pragma once

#include <asmjit/x86.h>

#include <vector>

namespace cke::jit::gen {

struct QTileArgs {
  asmjit::x86::Gp w, rb, nrows, aq, ad, y, ys, nb;
};

// Opens the inner function (AVX frame; `avx512` also enables zmm16-31 and k registers).
asmjit::FuncNode* begin_q_tile(asmjit::x86::Compiler& cc, QTileArgs& a, bool avx512);

// r[i] = w + min(i, nrows - 1) * row_bytes: rows past the tile's end repeat its last row.
std::vector<asmjit::x86::Gp> tile_rows(asmjit::x86::Compiler& cc, const QTileArgs& a, int rows);

}  // namespace cke::jit::gen
