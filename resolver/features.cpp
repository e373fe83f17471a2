#include "resolver/features.h"

#include <array>

namespace cke {

namespace {
constexpr std::array<std::string_view, kFeatureCount> kNames = {
    "avx2",       "fma",      "f16c",       "avx512f",    "avx512dq",
    "avx512bw",   "avx512vl", "avx512vbmi", "avx512vnni", "avx512bf16",
    "avx512fp16", "avxvnni",  "amx_tile",   "amx_int8",   "amx_bf16"};
}  // namespace

std::string_view feature_name(Feature f) {
  return kNames[static_cast<size_t>(f)];
}

std::optional<Feature> feature_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<Feature>(i);
  return std::nullopt;
}

std::vector<std::string> FeatureSet::names() const {
  std::vector<std::string> out;
  for (int i = 0; i < kFeatureCount; ++i)
    if (has(static_cast<Feature>(i))) out.emplace_back(kNames[i]);
  return out;
}

std::optional<FeatureSet> isa_level_features(std::string_view level) {
  using F = Feature;
  const FeatureSet v3{F::avx2, F::fma, F::f16c};
  const FeatureSet v4 = v3 | FeatureSet{F::avx512f, F::avx512dq, F::avx512bw, F::avx512vl};
  const FeatureSet vnni = v4 | FeatureSet{F::avx512vbmi, F::avx512vnni, F::avx512bf16, F::avxvnni};
  if (level == "scalar") return FeatureSet{};
  if (level == "avx2") return v3;
  if (level == "avx_vnni") return v3 | FeatureSet{F::avxvnni};
  if (level == "avx512") return v4;
  if (level == "avx512_vnni") return vnni;
  if (level == "amx") return FeatureSet::all();
  return std::nullopt;
}

const std::vector<std::string_view>& isa_level_names() {
  static const std::vector<std::string_view> k = {"scalar", "avx2",        "avx_vnni",
                                                  "avx512", "avx512_vnni", "amx"};
  return k;
}

}  // namespace cke
