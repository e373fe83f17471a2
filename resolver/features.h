// Typed CPU features a kernel map may require, and the ISA levels `--isa` caps to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cke {

enum class Feature : uint8_t {
  avx2,
  fma,
  f16c,
  avx512f,
  avx512dq,
  avx512bw,
  avx512vl,
  avx512vbmi,
  avx512vnni,
  avx512bf16,
  avx512fp16,
  avxvnni,
  amx_tile,
  amx_int8,
  amx_bf16,
};
constexpr int kFeatureCount = 15;

std::string_view feature_name(Feature f);
std::optional<Feature> feature_from_name(std::string_view name);

// A set of features (a bit per Feature). A plain value.
class FeatureSet {
 public:
  FeatureSet() = default;
  FeatureSet(std::initializer_list<Feature> fs) {
    for (Feature f : fs) add(f);
  }
  static FeatureSet all() {
    FeatureSet s;
    s.bits_ = (1u << kFeatureCount) - 1;
    return s;
  }
  bool has(Feature f) const { return bits_ >> static_cast<int>(f) & 1u; }
  void add(Feature f) { bits_ |= 1u << static_cast<int>(f); }
  void remove(Feature f) { bits_ &= ~(1u << static_cast<int>(f)); }
  FeatureSet operator&(FeatureSet o) const { return from_bits(bits_ & o.bits_); }
  FeatureSet operator|(FeatureSet o) const { return from_bits(bits_ | o.bits_); }
  bool operator==(const FeatureSet& o) const { return bits_ == o.bits_; }
  bool contains(FeatureSet o) const { return (bits_ & o.bits_) == o.bits_; }
  uint32_t bits() const { return bits_; }
  // Names in Feature order.
  std::vector<std::string> names() const;

 private:
  static FeatureSet from_bits(uint32_t b) {
    FeatureSet s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

// The features of an ISA level, for `--isa` caps and the ratchet's per-level counts:
//   scalar       nothing
//   avx2         avx2 fma f16c                                   (x86-64-v3)
//   avx_vnni     avx2 + avxvnni (ymm vpdpbusd, VEX)               (Alder Lake and later clients)
//   avx512       + avx512f dq bw vl                              (x86-64-v4)
//   avx512_vnni  + avx512vbmi avx512vnni avx512bf16 avxvnni      (Cascade/Cooper Lake, Zen 4)
//   amx          everything (Sapphire Rapids and later)
std::optional<FeatureSet> isa_level_features(std::string_view level);
// The level names, from the least to the most (avx_vnni and avx512 are not nested).
const std::vector<std::string_view>& isa_level_names();

}  // namespace cke
