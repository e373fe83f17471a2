// Generated activation quantization (op act_quant), written once in KIR for AVX-512 and
// AVX2. Contract act_quant.q8_0.ggml: act_quant_q8_0__ref bit for bit, i.e. ggml's x86
// quantize_row_q8_0 (AVX path) per 32-float block:
//   amax = |x| of four 8-lane vectors max-folded lane-wise in vector order (maxps, whose
//          NaN rule makes the order matter), then hi-onto-lo 128, movehl, movehdup;
//   d = amax / 127, id = amax != 0 ? 127 / amax : 0 (branchless: 127 / (amax + z) masked
//       to 0, z = 1.0 exactly when amax's bits are 0);
//   q = int8 saturate(cvtps2dq(x * id)) in element order, y.d = fp16(d) as the reference's
//       FP16-library conversion (vcvtps2ph RNE; a NaN d is first made 0x7fc00000, so it
//       becomes 0x7e00 as there, not F16C's payload-keeping NaN).
// Tokens [t0, t1) of the act_quant.rows.v1 ABI; rows outside the contract's shapes (K not a
// multiple of 32, a bad range) write nothing, as the reference.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The act_quant.rows.v1 ABI of act_quant_q8_0__ref.
using ActQuantFn = void (*)(const float* x, void* y, int64_t K, int64_t T, int64_t t0, int64_t t1);

// The block layouts: block_q8_0 (fp16 d, 32 int8), block_q8_1 (fp16 d, fp16 s, 32 int8).
struct Q8Layout {
  const char* contract;
  int64_t block_bytes;
  int32_t quants_offset;
  int32_t sum_offset;  // -1: no s field
};
constexpr Q8Layout kQ8_0{"act_quant.q8_0.ggml", 34, 2, -1};
constexpr Q8Layout kQ8_1{"act_quant.q8_1.ggml", 36, 4, 2};

// The constants of the fp16 conversion of d (and s).
struct Fp16Consts {
  kir::V abs128, sign128, one_i, zero_i, nan_bias, qnan;
};

// The quantizer above as a piece of another generator (rmsnorm_act_quant): built once per
// function (its constants), then row() quantizes one row of K floats (K a multiple of 32)
// at xrow into K / 32 blocks at yrow.
class Q8Rows {
 public:
  Q8Rows(kir::Builder& b, const Q8Layout& lay, kir::V K);
  void row(kir::V xrow, kir::V yrow);
  kir::V xrow_bytes() const { return xrow_bytes_; }
  kir::V yrow_bytes() const { return yrow_bytes_; }

 private:
  kir::Builder& b_;
  Q8Layout lay_;
  bool has_sum() const { return lay_.sum_offset >= 0; }  // q8_1's s field
  kir::V abs_mask_, c127_, one_f_, one_i_, zero_i_, nan_bias_, qnan_, order_;
  Fp16Consts fk_;
  kir::V nb_, xrow_bytes_, yrow_bytes_, blk_, xp_, yp_;
};

// impl.params: none.
bool build_act_quant_q8_0_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// Contract act_quant.q8_1.ggml (act_quant_q8_1__ref): ggml's x86 quantize_row_q8_1, the
// q8_0 body plus s = fp16(d * sum q) (the wrapping int32 sum of the unsaturated quants, the
// unrounded float d; fp16 as above, a NaN keeps its sign).
bool build_act_quant_q8_1_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_act_quant_q8_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
