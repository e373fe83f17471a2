// The repacked weight layouts (layouts.h).
#include "kernels/formats/layouts.h"

#include <cstddef>
#include <cstring>

#include "kernels/formats/blocks.h"

namespace cke {
namespace {

int64_t groups(int64_t N, int64_t rows) {
  return (N + rows - 1) / rows;
}

size_t q4_0_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ4_0R16Rows)) * size_t(K / kQK4_0) * kQ4_0R16Block;
}

void q4_0_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  const int64_t nb = K / kQK4_0;
  const auto* rows = reinterpret_cast<const block_q4_0*>(src);
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = dst + size_t(g * nb + b) * kQ4_0R16Block;
      std::memset(out, 0, kQ4_0R16Block);
      for (int r = 0; r < kQ4_0R16Rows; ++r) {
        const int64_t n = g * kQ4_0R16Rows + r;
        if (n >= N) break;
        const block_q4_0& blk = rows[n * nb + b];
        for (int j = 0; j < 4; ++j) std::memcpy(out + 64 * j + 4 * r, blk.qs + 4 * j, 4);
        std::memcpy(out + 256 + 2 * r, &blk.d, 2);
      }
    }
}

size_t q4_K_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ4KR16Rows)) * size_t(K / kQK_K) * kQ4KR16Block;
}

void q4_K_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  static_assert(sizeof(block_q4_K) == 144 && offsetof(block_q4_K, qs) == 16);
  const int64_t nb = K / kQK_K;
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = dst + size_t(g * nb + b) * kQ4KR16Block;
      std::memset(out, 0, kQ4KR16Block);
      for (int r = 0; r < kQ4KR16Rows; ++r) {
        const int64_t n = g * kQ4KR16Rows + r;
        if (n >= N) break;
        const uint8_t* blk = src + size_t(n * nb + b) * sizeof(block_q4_K);
        for (int k = 0; k < 4; ++k) std::memcpy(out + 64 * k + 4 * r, blk + 4 * k, 4);
        for (int c = 0; c < 4; ++c)
          for (int d = 0; d < 8; ++d)
            std::memcpy(out + 256 + 512 * c + 64 * d + 4 * r, blk + 16 + 32 * c + 4 * d, 4);
      }
    }
}

}  // namespace

const std::vector<WeightLayout>& weight_layouts() {
  static const std::vector<WeightLayout> k = {
      {"q4_0_r16", DType::Q4_0, kQ4_0R16Rows, &q4_0_r16_bytes, &q4_0_r16_repack},
      {"q4_K_r16", DType::Q4_K, kQ4KR16Rows, &q4_K_r16_bytes, &q4_K_r16_repack},
  };
  return k;
}

const WeightLayout* find_weight_layout(std::string_view name) {
  for (const WeightLayout& l : weight_layouts())
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace cke
