// Generated linear kernels for Q6_K weights (contract linear.q6_K.ggml), AVX-512 VNNI and AVX2.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows (1), tokens (1..4; AVX2: 1).
bool build_linear_q6_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q6_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// The same contract on the weights' q6_K_r16 copy (kernels/formats/layouts.h), AVX-512 VNNI:
// lane j of 16 rows per zmm (gen_linear_q6_K_r16.cpp). impl.params rows (16), tokens (1..8;
// 1: the decode tile, a batch of decode tokens in groups of up to 8).
bool build_linear_q6_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// Its decode gemv at AVX2 and AVX-VNNI (gen_linear_q6_K_r16_avx2.cpp; params rows 16, tokens 1).
bool build_linear_q6_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q6_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
