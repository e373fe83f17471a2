// Generated linear kernels for Q6_K weights (contract linear.q6_K.ggml), AVX-512 VNNI and AVX2.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows (1), tokens (1..4; AVX2: 1).
bool build_linear_q6_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q6_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
