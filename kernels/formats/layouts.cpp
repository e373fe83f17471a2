// The repacked weight layouts (layouts.h).
#include "kernels/formats/layouts.h"

#include <emmintrin.h>  // SSE2 (x86-64 baseline): non-temporal stores

#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/formats/blocks.h"

namespace cke {
namespace {

int64_t groups(int64_t N, int64_t rows) {
  return (N + rows - 1) / rows;
}

// A row group's repacked bytes are made in a buffer that stays in cache, then copied to the
// copy with non-temporal stores: the copy is written once and read much later, and a plain
// store would first read each line from memory (measured: the q8_0 copy of a 1.1 GiB file
// spent 60 % of its repack time on those reads). n is a multiple of 16 (every layout's
// block is).
void stream_out(uint8_t* dst, const uint8_t* src, size_t n) {
  if (reinterpret_cast<uintptr_t>(dst) % 16 != 0) {
    std::memcpy(dst, src, n);
    return;
  }
  for (size_t i = 0; i < n; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  _mm_sfence();
}

// The group's buffer, zeroed only where a group has rows past N (padding rows are zero).
uint8_t* group_buffer(size_t bytes, bool partial) {
  thread_local std::vector<uint8_t> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  if (partial) std::memset(buf.data(), 0, bytes);
  return buf.data();
}

// The loop every layout here shares: row group g (16 rows) is made block by block in a
// buffer that stays in cache, by put(out, r, row_block) for each row r of the group below N
// (out: the group's block, row_block: row 16g + r's block in the file), then streamed out.
template <class Put>
void repack_rows16(const uint8_t* src, uint8_t* dst, int64_t nb, int64_t N, int64_t g0, int64_t g1,
                   size_t file_block, int block, Put put) {
  constexpr int kRows = 16;
  static_assert(kQ4_0R16Rows == kRows && kQ8_0R16Rows == kRows && kQ5_0R16Rows == kRows &&
                kQ4_1R16Rows == kRows && kQ5_1R16Rows == kRows && kQ4KR16Rows == kRows &&
                kQ6KR16Rows == kRows && kQ5KR16Rows == kRows && kQ3KR16Rows == kRows &&
                kQ2KR16Rows == kRows);
  const size_t gbytes = size_t(nb) * size_t(block);
  for (int64_t g = g0; g < g1; ++g) {
    uint8_t* buf = group_buffer(gbytes, (g + 1) * kRows > N);
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = buf + size_t(b) * size_t(block);
      for (int r = 0; r < kRows; ++r) {
        const int64_t n = g * kRows + r;
        if (n >= N) break;
        put(out, r, src + size_t(n * nb + b) * file_block);
      }
    }
    stream_out(dst + size_t(g) * gbytes, buf, gbytes);
  }
}

// The 16 qs bytes of a 32-element nibble block (q4_0, q5_0, q4_1, q5_1) as dwords j = 0..3
// of lane r: at 64 j + 4 r.
void put_qs_dwords(uint8_t* out, int r, const uint8_t* qs) {
  for (int j = 0; j < 4; ++j) std::memcpy(out + 64 * j + 4 * r, qs + 4 * j, 4);
}

size_t q4_0_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ4_0R16Rows)) * size_t(K / kQK4_0) * kQ4_0R16Block;
}

void q4_0_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  repack_rows16(src, dst, K / kQK4_0, N, g0, g1, sizeof(block_q4_0), kQ4_0R16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const auto& blk = *reinterpret_cast<const block_q4_0*>(row_block);
                  put_qs_dwords(out, r, blk.qs);
                  std::memcpy(out + 256 + 2 * r, &blk.d, 2);
                });
}

size_t q8_0_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ8_0R16Rows)) * size_t(K / kQK8_0) * kQ8_0R16Block;
}

void q8_0_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  repack_rows16(src, dst, K / kQK8_0, N, g0, g1, sizeof(block_q8_0), kQ8_0R16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const auto& blk = *reinterpret_cast<const block_q8_0*>(row_block);
                  for (int j = 0; j < 8; ++j) {
                    uint32_t v;
                    std::memcpy(&v, blk.qs + 4 * j, 4);
                    v ^= 0x80808080u;  // each byte q + 128
                    std::memcpy(out + 64 * j + 4 * r, &v, 4);
                  }
                  std::memcpy(out + 512 + 2 * r, &blk.d, 2);
                });
}

size_t q5_0_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ5_0R16Rows)) * size_t(K / kQK5_0) * kQ5_0R16Block;
}

// qh bit 4j + k (element 4j + k's high bit) -> bit 8k + j: nibble j of qh, its bit k moved
// to bit 8k (kSpread), shifted left by j. A table of 16 instead of a loop over the 32 bits,
// which made the q5 copies 4x slower than the others (2.7 against 10-12 GB/s from cache).
uint32_t q5_0_qh_reordered(uint32_t qh) {
  static constexpr auto kSpread = [] {
    std::array<uint32_t, 16> t{};
    for (uint32_t n = 0; n < 16; ++n)
      for (int k = 0; k < 4; ++k) t[n] |= ((n >> k) & 1u) << (8 * k);
    return t;
  }();
  uint32_t out = 0;
  for (int j = 0; j < 8; ++j) out |= kSpread[(qh >> (4 * j)) & 15u] << j;
  return out;
}

// A q5 block's high bits (q5_0, q5_1), reordered for the lane vectors, at 256 + 4 r.
void put_qh_reordered(uint8_t* out, int r, const uint8_t* qh_bytes) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  qh = q5_0_qh_reordered(qh);
  std::memcpy(out + 256 + 4 * r, &qh, 4);
}

void q5_0_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  repack_rows16(src, dst, K / kQK5_0, N, g0, g1, sizeof(block_q5_0), kQ5_0R16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const auto& blk = *reinterpret_cast<const block_q5_0*>(row_block);
                  put_qs_dwords(out, r, blk.qs);
                  put_qh_reordered(out, r, blk.qh);
                  std::memcpy(out + 320 + 2 * r, &blk.d, 2);
                });
}

size_t q4_1_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ4_1R16Rows)) * size_t(K / kQK4_1) * kQ4_1R16Block;
}

void q4_1_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  repack_rows16(src, dst, K / kQK4_1, N, g0, g1, sizeof(block_q4_1), kQ4_1R16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const auto& blk = *reinterpret_cast<const block_q4_1*>(row_block);
                  put_qs_dwords(out, r, blk.qs);
                  std::memcpy(out + 256 + 2 * r, &blk.d, 2);
                  std::memcpy(out + 288 + 2 * r, &blk.m, 2);
                });
}

size_t q5_1_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ5_1R16Rows)) * size_t(K / kQK5_1) * kQ5_1R16Block;
}

void q5_1_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  repack_rows16(src, dst, K / kQK5_1, N, g0, g1, sizeof(block_q5_1), kQ5_1R16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const auto& blk = *reinterpret_cast<const block_q5_1*>(row_block);
                  put_qs_dwords(out, r, blk.qs);
                  put_qh_reordered(out, r, blk.qh);
                  std::memcpy(out + 320 + 2 * r, &blk.d, 2);
                  std::memcpy(out + 352 + 2 * r, &blk.m, 2);
                });
}

size_t q4_K_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ4KR16Rows)) * size_t(K / kQK_K) * kQ4KR16Block;
}

void q4_K_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  static_assert(sizeof(block_q4_K) == 144 && offsetof(block_q4_K, qs) == 16);
  repack_rows16(src, dst, K / kQK_K, N, g0, g1, sizeof(block_q4_K), kQ4KR16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const uint8_t* blk = row_block;
                  for (int k = 0; k < 4; ++k) std::memcpy(out + 64 * k + 4 * r, blk + 4 * k, 4);
                  for (int c = 0; c < 4; ++c)
                    for (int d = 0; d < 8; ++d)
                      std::memcpy(out + 256 + 512 * c + 64 * d + 4 * r, blk + 16 + 32 * c + 4 * d,
                                  4);
                });
}

size_t q6_K_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ6KR16Rows)) * size_t(K / kQK_K) * kQ6KR16Block;
}

void q6_K_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  static_assert(sizeof(block_q6_K) == 210 && offsetof(block_q6_K, qh) == 128 &&
                offsetof(block_q6_K, scales) == 192 && offsetof(block_q6_K, d) == 208);
  repack_rows16(src, dst, K / kQK_K, N, g0, g1, sizeof(block_q6_K), kQ6KR16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const uint8_t* blk = row_block;
                  for (int p = 0; p < 8; ++p)
                    std::memcpy(out + 32 * p + 2 * r, blk + 192 + 2 * p, 2);
                  for (int l = 0; l < 8; ++l)
                    for (int h = 0; h < 2; ++h) {
                      uint8_t* q = out + 256 + 384 * l + 192 * h + 4 * r;
                      std::memcpy(q, blk + 64 * h + 4 * l, 4);              // ql, chunks 4h, 4h+2
                      std::memcpy(q + 64, blk + 64 * h + 32 + 4 * l, 4);    // ql, chunks 4h+1, 4h+3
                      std::memcpy(q + 128, blk + 128 + 32 * h + 4 * l, 4);  // qh, chunks 4h .. 4h+3
                    }
                  std::memcpy(out + 3328 + 2 * r, blk + 208, 2);
                });
}

size_t q5_K_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ5KR16Rows)) * size_t(K / kQK_K) * kQ5KR16Block;
}

void q5_K_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  static_assert(sizeof(block_q5_K) == 176 && offsetof(block_q5_K, qh) == 16 &&
                offsetof(block_q5_K, qs) == 48);
  repack_rows16(src, dst, K / kQK_K, N, g0, g1, sizeof(block_q5_K), kQ5KR16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const uint8_t* blk = row_block;
                  for (int k = 0; k < 4; ++k) std::memcpy(out + 64 * k + 4 * r, blk + 4 * k, 4);
                  for (int l = 0; l < 8; ++l) {
                    uint8_t* q = out + 256 + 320 * l + 4 * r;
                    for (int j = 0; j < 4; ++j)
                      std::memcpy(q + 64 * j, blk + 48 + 32 * j + 4 * l, 4);
                    std::memcpy(q + 256, blk + 16 + 4 * l, 4);  // qh
                  }
                });
}

size_t q3_K_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ3KR16Rows)) * size_t(K / kQK_K) * kQ3KR16Block;
}

void q3_K_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  static_assert(sizeof(block_q3_K) == 110 && offsetof(block_q3_K, qs) == 32 &&
                offsetof(block_q3_K, scales) == 96 && offsetof(block_q3_K, d) == 108);
  repack_rows16(src, dst, K / kQK_K, N, g0, g1, sizeof(block_q3_K), kQ3KR16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const uint8_t* blk = row_block;
                  for (int k = 0; k < 3; ++k)
                    std::memcpy(out + 64 * k + 4 * r, blk + 96 + 4 * k, 4);
                  for (int l = 0; l < 8; ++l) {
                    uint8_t* q = out + 192 + 192 * l + 4 * r;
                    std::memcpy(q, blk + 32 + 4 * l, 4);       // qs, chunks 0..3
                    std::memcpy(q + 64, blk + 64 + 4 * l, 4);  // qs, chunks 4..7
                    std::memcpy(q + 128, blk + 4 * l, 4);      // hmask
                  }
                  std::memcpy(out + 1728 + 2 * r, blk + 108, 2);
                });
}

size_t q2_K_r16_bytes(int64_t K, int64_t N) {
  return size_t(groups(N, kQ2KR16Rows)) * size_t(K / kQK_K) * kQ2KR16Block;
}

void q2_K_r16_repack(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0,
                     int64_t g1) {
  static_assert(sizeof(block_q2_K) == 84 && offsetof(block_q2_K, qs) == 16 &&
                offsetof(block_q2_K, d) == 80);
  repack_rows16(src, dst, K / kQK_K, N, g0, g1, sizeof(block_q2_K), kQ2KR16Block,
                [](uint8_t* out, int r, const uint8_t* row_block) {
                  const uint8_t* blk = row_block;
                  for (int k = 0; k < 4; ++k) std::memcpy(out + 64 * k + 4 * r, blk + 4 * k, 4);
                  std::memcpy(out + 256 + 4 * r, blk + 80, 4);  // d, dmin
                  for (int h = 0; h < 2; ++h)
                    for (int d = 0; d < 8; ++d)
                      std::memcpy(out + 320 + 512 * h + 64 * d + 4 * r, blk + 16 + 32 * h + 4 * d,
                                  4);
                });
}

}  // namespace

const std::vector<WeightLayout>& weight_layouts() {
  static const std::vector<WeightLayout> k = {
      {"q4_0_r16", DType::Q4_0, kQ4_0R16Rows, &q4_0_r16_bytes, &q4_0_r16_repack},
      {"q8_0_r16", DType::Q8_0, kQ8_0R16Rows, &q8_0_r16_bytes, &q8_0_r16_repack},
      {"q5_0_r16", DType::Q5_0, kQ5_0R16Rows, &q5_0_r16_bytes, &q5_0_r16_repack},
      {"q4_1_r16", DType::Q4_1, kQ4_1R16Rows, &q4_1_r16_bytes, &q4_1_r16_repack},
      {"q5_1_r16", DType::Q5_1, kQ5_1R16Rows, &q5_1_r16_bytes, &q5_1_r16_repack},
      {"q4_K_r16", DType::Q4_K, kQ4KR16Rows, &q4_K_r16_bytes, &q4_K_r16_repack},
      {"q6_K_r16", DType::Q6_K, kQ6KR16Rows, &q6_K_r16_bytes, &q6_K_r16_repack},
      {"q5_K_r16", DType::Q5_K, kQ5KR16Rows, &q5_K_r16_bytes, &q5_K_r16_repack},
      {"q3_K_r16", DType::Q3_K, kQ3KR16Rows, &q3_K_r16_bytes, &q3_K_r16_repack},
      {"q2_K_r16", DType::Q2_K, kQ2KR16Rows, &q2_K_r16_bytes, &q2_K_r16_repack},
  };
  return k;
}

const WeightLayout* find_weight_layout(std::string_view name) {
  for (const WeightLayout& l : weight_layouts())
    if (l.name == name) return &l;
  return nullptr;
}

}  // namespace cke
