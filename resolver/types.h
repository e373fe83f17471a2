// Small enums shared by kernel maps, contracts, circuits and the resolver.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace cke {

// Prefill: a chunk of T tokens (T known only at run time, at most the chunk size).
// Decode: one token (T = 1, a constant of the plan).
enum class Phase : uint8_t { Prefill, Decode };
constexpr Phase kPhases[] = {Phase::Prefill, Phase::Decode};
std::string_view phase_name(Phase p);
std::optional<Phase> phase_from_name(std::string_view s);

// Scalar parameter types an op takes from its circuit (kernel argument kinds F32 / I64).
enum class ParamType : uint8_t { I64, F32 };
std::string_view param_type_name(ParamType t);
std::optional<ParamType> param_type_from_name(std::string_view s);

}  // namespace cke
