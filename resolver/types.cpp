#include "resolver/types.h"

namespace cke {

std::string_view phase_name(Phase p) {
  return p == Phase::Prefill ? "prefill" : "decode";
}

std::optional<Phase> phase_from_name(std::string_view s) {
  if (s == "prefill") return Phase::Prefill;
  if (s == "decode") return Phase::Decode;
  return std::nullopt;
}

std::string_view param_type_name(ParamType t) {
  return t == ParamType::I64 ? "i64" : "f32";
}

std::optional<ParamType> param_type_from_name(std::string_view s) {
  if (s == "i64") return ParamType::I64;
  if (s == "f32") return ParamType::F32;
  return std::nullopt;
}

}  // namespace cke
