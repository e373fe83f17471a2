// Generated linear kernels for Q8_0 and Q4_0 weights (contracts linear.q8_0.ggml and
// linear.q4_0.ggml): a C++ driver around generated inner loops.
//
// The driver does what is not arithmetic: validates the call, quantizes each token's
// activation row with cke::act_quantize_q8_0 (ggml's x86 quantizer, the contract's) into
// a per-thread buffer laid out for the inner loops, and walks the (row tile x token group)
// grid. Every dot product and every float accumulation is generated code.
//
// Which arithmetic a call gets is the reference's (kernels/ref/linear.cpp):
//   q8_0, and q4_0 with N % 8 != 0: ggml_vec_dot (8 float lanes of 4-element int32 dots,
//     one FMA per block, hsum8)                                           -> Arith::Plain
//   q4_0 with N % 8 == 0 (ggml's repacked q4_0_8x8): one float accumulator per output,
//     one FMA per block of the full 32-element int32 dot; tokens 0 .. 4*floor(T/4)-1 in
//     groups of 4 as the gemm (exact products)                            -> Arith::Gemm
//     the last T % 4 tokens as the gemv (vpsignb products)                -> Arith::Gemv
#pragma once

#include <asmjit/x86.h>

#include <cstdint>
#include <memory>
#include <string>

#include "jit/generators.h"

namespace cke::jit::gen {

enum class QFormat : uint8_t { Q8_0, Q4_0 };
enum class QArith : uint8_t { Plain, Gemv, Gemm };

// Inner loop ABI. One call computes a tile: `nrows` (1..tile rows) consecutive weight rows
// starting at `w` (row stride `row_bytes`) times the `tokens` tokens of one group (the
// token count is baked into the function), over `nblocks` 32-element blocks of K.
// Tile rows past nrows - 1 read row nrows - 1 again and are not stored. Activations are in
// the group layout: aq[block][token][32] int8 quants, ad[block][token] float scales
// (fp16 -> f32, exact). y points at (row 0, token 0); tokens are y_stride bytes apart.
using QMicroFn = void (*)(const uint8_t* w, int64_t row_bytes, int64_t nrows, const int8_t* aq,
                          const float* ad, float* y, int64_t y_stride, int64_t nblocks);

constexpr int kMaxGroupTokens = 4;

struct QKernelSet {
  int rows = 0;                           // tile rows of every function of the set
  int max_tokens = 0;                     // tokens of the largest function
  QMicroFn fn[kMaxGroupTokens + 1] = {};  // fn[t]: t tokens, t in 1..max_tokens
};

struct QLinearState {
  QFormat format = QFormat::Q8_0;
  QKernelSet plain;
  QKernelSet gemv, gemm;         // q4_0 only; gemm groups are always 4 tokens
  LinearFn reference = nullptr;  // for shapes the inner loops cannot address
};

// The linear ABI with the module's state first (the entry stub supplies it).
void q_linear_drive(const QLinearState* s, const float* x, const void* w, float* y, int64_t K,
                    int64_t N, int64_t T, int64_t n0, int64_t n1) noexcept;

// Emitters: one inner loop function with the QMicroFn ABI, for `tokens` tokens.
// AVX-512 (F, BW, VL, VNNI): Plain tiles are 4 rows, Gemv/Gemm tiles 8 rows.
asmjit::Label emit_q_avx512(asmjit::x86::Compiler& cc, QFormat f, QArith a, int tokens);
// AVX2 (+ FMA, F16C): Plain and Gemv/Gemm tiles are 4 rows.
asmjit::Label emit_q_avx2(asmjit::x86::Compiler& cc, QFormat f, QArith a, int tokens);

// The generators of jit/generators.cpp.
std::unique_ptr<KernelModule> generate_linear_q8_0_avx512vnni(const GeneratorParams& p,
                                                              std::string* err);
std::unique_ptr<KernelModule> generate_linear_q4_0_avx512vnni(const GeneratorParams& p,
                                                              std::string* err);
std::unique_ptr<KernelModule> generate_linear_q8_0_avx2(const GeneratorParams& p, std::string* err);
std::unique_ptr<KernelModule> generate_linear_q4_0_avx2(const GeneratorParams& p, std::string* err);

}  // namespace cke::jit::gen
