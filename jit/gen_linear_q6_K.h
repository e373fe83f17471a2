// Generated linear kernel for Q6_K weights (contract linear.q6_K.ggml), AVX-512 VNNI.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// impl.params rows (1), tokens (1..4).
bool build_linear_q6_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
