// Generated linear kernels for the K-quants Q2_K, Q3_K, Q4_K and Q5_K in ggml's plain
// vec_dot arithmetic (contracts linear.q{2,3,4,5}_K.ggml; kernels/ref/linear_dot_k.cpp),
// AVX-512 VNNI and AVX2, and for Q2_K in ggml's repacked q2_K_8x8 arithmetic (contract
// linear.q2_Kx8.ggml).
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows (1), tokens (1..4; AVX2: 1).
bool build_linear_q5_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// The same contract on the weights' q5_K_r16 copy (kernels/formats/layouts.h), AVX-512 VNNI:
// lane j of 16 rows per zmm (gen_linear_q5_K_r16.cpp). impl.params rows (16), tokens (1..8;
// 1: decode, with decode_group as q6_K_r16's).
bool build_linear_q5_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// Its AVX2 tiles (gen_linear_q5_K_r16_avx2.cpp; params rows 16, tokens 1 or 4).
bool build_linear_q5_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q3_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q3_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// The same contract on the weights' q3_K_r16 copy, AVX-512 VNNI (gen_linear_q3_K_r16.cpp;
// params as q5_K_r16's).
bool build_linear_q3_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// Its AVX2 / AVX-VNNI tiles (gen_linear_q3_K_r16_avx2.cpp; params rows 16, tokens 1 or 4).
bool build_linear_q3_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q3_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q2_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q2_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
