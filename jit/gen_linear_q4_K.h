// Generated linear kernels for Q4_K and Q2_K weights under ggml's repacked q4_K_8x8 / q2_K_8x8
// arithmetic (contracts linear.q4_Kx8.ggml, linear.q2_Kx8.ggml): a tile of 16 (AVX-512 VNNI) or
// 8 (AVX2) rows with one lane per weight row (see the .cpp).
#pragma once

#include <string>
#include <vector>

#include "jit/gen_tile.h"
#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows (16 at AVX-512 VNNI, 8 at AVX2), tokens (1: decode, every token through the
// gemv granule; 4 or 8: prefill, groups of 4 through the gemm granule, the T % 4 rest through
// the gemv).
bool build_linear_q4_Kx8_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_Kx8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// The same tiles and parameters for q2_K (contract linear.q2_Kx8.ggml).
bool build_linear_q2_Kx8_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q2_Kx8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// The AVX2 tiles with AVX-VNNI's vpdpbusd (ymm, VEX), for hosts with AVX-VNNI but no AVX-512.
bool build_linear_q4_Kx8_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q2_Kx8_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// The q4_K tiles on the weights' q4_K_r16 copy (kernels/formats/layouts.h): no transposes;
// params rows 16, tokens 1 (decode) or 8 (prefill).
bool build_linear_q4_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// The q2_K tiles on the weights' q2_K_r16 copy (the same params; decode through the general
// tile's gemv).
bool build_linear_q2_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// At AVX2 and AVX-VNNI (gen_linear_q2_K_r16_avx2.cpp; params rows 16, tokens 1: its decode
// gemv, or 8: the prefill tile, which is build_linear_q2_K_r16_gemm_avx2's).
bool build_linear_q2_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q2_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// The x8 tile of 8 rows at AVX2 on each half of the copy's 16-row groups, 8 tokens (the
// q2_Kx8 gemm granule per whole 4 tokens, as build_linear_q2_Kx8_avx2's), for the generators
// above (named by vnni); build_linear_q4_K_r16_gemm_avx2 the same for q4_K
// (gen_linear_q4_K_r16_avx2.cpp's generators, tokens 8).
bool build_linear_q2_K_r16_gemm_avx2(bool vnni, const GeneratorParams& p, kir::Module* m,
                                     std::string* err);
bool build_linear_q4_K_r16_gemm_avx2(bool vnni, const GeneratorParams& p, kir::Module* m,
                                     std::string* err);
// The block heads of a 16-row copy of q4_K or q5_K (q4_K_r16, q5_K_r16: lane r of h[k] =
// dword k of row r's head; gen_linear_q4_K_r16_gemv.cpp): d_w and dmin_w as f32, and ggml's
// 6-bit scales and mins (get_scale_min_k4) as bytes, byte k of dword lane r = sc[k] of row r
// (sc_lo: k = 0..3, sc_hi: 4..7; mn_lo, mn_hi the mins alike).
struct K4HeadConsts {
  kir::V nib, m63, even_odd;  // 0x0F and 0x3F bytes; the vpermd of d | dmin pairs
};
struct K4Head16 {
  kir::V dw, dminw, sc_lo, sc_hi, mn_lo, mn_hi;
};
K4HeadConsts k4_head_consts(kir::Builder& b);
K4Head16 unpack_k4_head16(kir::Builder& b, const kir::V h[4], const K4HeadConsts& c);
// At AVX2 (8 rows a ymm; gen_linear_q4_K_r16_avx2.cpp): the rows' 6-bit scales and mins
// from dwords 1-3 of their block heads (hd[1..3], lane r = row r): sc_lo / mn_lo bytes 0-3 =
// scales / mins 0-3, sc_hi / mn_hi bytes 0-3 = 4-7 (nib: 0x0F bytes).
struct ScalesMins {
  kir::V sc_lo, sc_hi, mn_lo, mn_hi;
};
ScalesMins unpack_scales_mins(kir::Builder& b, const VecOf& ymm, const kir::V hd[4], kir::V nib);
// vpshufb control: the low (k = 0: d) or high (k = 2: dmin) word of the 4 dwords of each
// 128-bit block into its first 8 bytes (then vpermd {0, 1, 4, 5, ...} and vcvtph2ps).
std::vector<uint32_t> words_of(int k);
// Its one-token tile (gen_linear_q4_K_r16_gemv.cpp; gen_tile.h's tile ABI): a new function of
// m, returning its index.
int emit_q4_K_r16_gemv1(kir::Module& m, const std::string& name);
// The decode gemv on that copy at AVX2 and AVX-VNNI (gen_linear_q4_K_r16_avx2.cpp; params
// rows 16, tokens 1).
bool build_linear_q4_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
