// The repacked weight layouts (kernels/formats/layouts.h) against their documented byte
// positions: every byte of the file's tensor is found where the layout's comment says, the
// padding is zero, and repacking by parts equals repacking at once.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/layouts.h"

namespace cke {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (uint8_t& x : b) x = uint8_t(rng());
  return b;
}

TEST(WeightLayouts, EveryLayoutIsFoundByName) {
  for (const WeightLayout& l : weight_layouts()) EXPECT_EQ(find_weight_layout(l.name), &l);
  EXPECT_EQ(find_weight_layout("row_major"), nullptr);  // the file's own: no repack
  EXPECT_EQ(find_weight_layout("q4_0_r8"), nullptr);
}

// q4_0_r16: group g, block b at (g * nb + b) * 288; dword j of row 16g + r at 64 j + 4 r;
// the row's fp16 scale at 256 + 2 r; rows past N zero.
TEST(WeightLayouts, q4_0_r16) {
  const WeightLayout& l = *find_weight_layout("q4_0_r16");
  EXPECT_EQ(l.dtype, DType::Q4_0);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{32, 16}, {96, 37}, {256, 8}, {64, 48}}) {
    const int64_t nb = K / 32, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q4_0), 7);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 288) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 288;
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q4_0);
          for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 4; ++i) {
              const uint8_t want = n < N ? row[2 + 4 * j + i] : 0;  // qs after the fp16 d
              ASSERT_EQ(blk[64 * j + 4 * r + i], want)
                  << "K=" << K << " N=" << N << " row " << n << " block " << b << " dword " << j;
            }
          for (int i = 0; i < 2; ++i)
            ASSERT_EQ(blk[256 + 2 * r + i], n < N ? row[i] : 0)
                << "scale of row " << n << " block " << b;
        }
      }
    // By parts (as the engine's parallel step runs it): the same bytes.
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q5_0_r16: group g, block b at (g * nb + b) * 352; element e = 4j + k (j = 0..7) of row
// 16g + r: its nibble in byte 64 (j % 4) + 4 r + k (low for j < 4, high for j >= 4), its high
// bit at bit 8k + j of the dword at 256 + 4 r; the fp16 scale at 320 + 2 r; rows past N zero.
// Each element's 5-bit value rebuilt from the copy equals ggml's (dequantize_row_q5_0's
// indexing: element i < 16 is qs[i] & 15 with qh bit i, element i + 16 qs[i] >> 4 with qh bit
// i + 16), and every byte of the file is used.
TEST(WeightLayouts, q5_0_r16) {
  const WeightLayout& l = *find_weight_layout("q5_0_r16");
  EXPECT_EQ(l.dtype, DType::Q5_0);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{32, 16}, {96, 37}, {256, 8}, {64, 48}}) {
    const int64_t nb = K / 32, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q5_0), 9);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 352) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 352;
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          uint32_t qh_copy;
          std::memcpy(&qh_copy, blk + 256 + 4 * r, 4);
          if (n >= N) {
            for (int j = 0; j < 4; ++j)
              for (int k = 0; k < 4; ++k) ASSERT_EQ(blk[64 * j + 4 * r + k], 0);
            ASSERT_EQ(qh_copy, 0u) << "padding row " << n;
            ASSERT_EQ(blk[320 + 2 * r] | blk[321 + 2 * r], 0) << "padding row " << n;
            continue;
          }
          block_q5_0 row;
          std::memcpy(&row, src.data() + (n * nb + b) * sizeof(block_q5_0), sizeof(row));
          uint32_t qh;
          std::memcpy(&qh, row.qh, 4);
          for (int e = 0; e < 32; ++e) {
            const int want = (e < 16 ? row.qs[e] & 15 : row.qs[e - 16] >> 4) | int((qh >> e) & 1)
                                                                                   << 4;
            const int j = e / 4, k = e % 4;
            const uint8_t byte = blk[64 * (j % 4) + 4 * r + k];
            const int got = (j < 4 ? byte & 15 : byte >> 4) | int((qh_copy >> (8 * k + j)) & 1)
                                                                  << 4;
            ASSERT_EQ(got, want) << "K=" << K << " N=" << N << " row " << n << " block " << b
                                 << " element " << e;
          }
          uint16_t d;
          std::memcpy(&d, blk + 320 + 2 * r, 2);
          ASSERT_EQ(d, row.d) << "scale of row " << n << " block " << b;
        }
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q4_1_r16 (320-byte blocks) and q5_1_r16 (384): element e = 4j + k (j = 0..7) of row 16g + r
// has its nibble in byte 64 (j % 4) + 4 r + k (low for j < 4, high for j >= 4); q5_1 its high
// bit at bit 8k + j of the dword at 256 + 4 r; fp16 d and m at `scale` + 2 r and `min` + 2 r;
// rows past N zero. Each element's value rebuilt from the copy equals dequantize_row_q{4,5}_1's
// indexing (element i < 16: qs[i] & 15, i + 16: qs[i] >> 4, | qh bit i << 4 for q5_1).
template <class Block>
void check_min_layout(const char* name, DType dtype, int block, int scale, int min, bool q5) {
  const WeightLayout& l = *find_weight_layout(name);
  EXPECT_EQ(l.dtype, dtype);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{32, 16}, {96, 37}, {256, 8}, {64, 48}}) {
    const int64_t nb = K / 32, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(Block), 13);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb * block)) << name << " K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * block;
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          uint32_t qh_copy = 0;
          if (q5) std::memcpy(&qh_copy, blk + 256 + 4 * r, 4);
          uint16_t d, m;
          std::memcpy(&d, blk + scale + 2 * r, 2);
          std::memcpy(&m, blk + min + 2 * r, 2);
          if (n >= N) {
            for (int j = 0; j < 4; ++j)
              for (int k = 0; k < 4; ++k) ASSERT_EQ(blk[64 * j + 4 * r + k], 0);
            ASSERT_EQ(qh_copy, 0u) << name << " padding row " << n;
            ASSERT_EQ(d | m, 0) << name << " padding row " << n;
            continue;
          }
          Block row;
          std::memcpy(&row, src.data() + (n * nb + b) * sizeof(Block), sizeof(row));
          uint32_t qh = 0;
          if constexpr (requires { row.qh; }) std::memcpy(&qh, row.qh, 4);
          for (int e = 0; e < 32; ++e) {
            const int want = (e < 16 ? row.qs[e] & 15 : row.qs[e - 16] >> 4) |
                             (q5 ? int((qh >> e) & 1) << 4 : 0);
            const int j = e / 4, k = e % 4;
            const uint8_t byte = blk[64 * (j % 4) + 4 * r + k];
            const int got = (j < 4 ? byte & 15 : byte >> 4) | int((qh_copy >> (8 * k + j)) & 1)
                                                                  << 4;
            ASSERT_EQ(got, want) << name << " K=" << K << " N=" << N << " row " << n << " block "
                                 << b << " element " << e;
          }
          ASSERT_EQ(d, row.d) << name << " scale of row " << n << " block " << b;
          ASSERT_EQ(m, row.m) << name << " min of row " << n << " block " << b;
        }
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst) << name;
  }
}

TEST(WeightLayouts, q4_1_r16) {
  check_min_layout<block_q4_1>("q4_1_r16", DType::Q4_1, 320, 256, 288, false);
}

TEST(WeightLayouts, q5_1_r16) {
  check_min_layout<block_q5_1>("q5_1_r16", DType::Q5_1, 384, 320, 352, true);
}

// q8_0_r16: group g, block b at (g * nb + b) * 544; quant e of row 16g + r at
// 64 (e / 4) + 4 r + e % 4, biased (q + 128 as a byte); the row's fp16 scale at 512 + 2 r;
// rows past N zero. The bias is undone here, so every byte of the file is checked.
TEST(WeightLayouts, q8_0_r16) {
  const WeightLayout& l = *find_weight_layout("q8_0_r16");
  EXPECT_EQ(l.dtype, DType::Q8_0);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{32, 16}, {96, 37}, {256, 8}, {64, 48}}) {
    const int64_t nb = K / 32, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q8_0), 5);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 544) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 544;
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q8_0);
          for (int e = 0; e < 32; ++e) {
            const uint8_t got = blk[64 * (e / 4) + 4 * r + e % 4];
            if (n < N) {
              // got - 128 (mod 256) is the quant: int8 q + 128 as an unsigned byte.
              ASSERT_EQ(int8_t(uint8_t(got - 128)), int8_t(row[2 + e]))
                  << "K=" << K << " N=" << N << " row " << n << " block " << b << " quant " << e;
            } else {
              ASSERT_EQ(got, 0) << "padding row " << n;
            }
          }
          for (int i = 0; i < 2; ++i)
            ASSERT_EQ(blk[512 + 2 * r + i], n < N ? row[i] : 0)
                << "scale of row " << n << " block " << b;
        }
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q4_K_r16: group g, super-block b at (g * nb + b) * 2304; dword k of row 16g + r's 16-byte
// head (d, dmin, scales) at 64 k + 4 r; dword d of its chunk c (quant bytes 16 + 32 c + 4 d)
// at 256 + 512 c + 64 d + 4 r; rows past N zero.
TEST(WeightLayouts, q4_K_r16) {
  const WeightLayout& l = *find_weight_layout("q4_K_r16");
  EXPECT_EQ(l.dtype, DType::Q4_K);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 16}, {768, 37}, {512, 8}}) {
    const int64_t nb = K / 256, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q4_K), 9);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 2304) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 2304;
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q4_K);
          for (int k = 0; k < 4; ++k)
            for (int i = 0; i < 4; ++i)
              ASSERT_EQ(blk[64 * k + 4 * r + i], n < N ? row[4 * k + i] : 0)
                  << "K=" << K << " N=" << N << " row " << n << " block " << b << " head " << k;
          for (int c = 0; c < 4; ++c)
            for (int d = 0; d < 8; ++d)
              for (int i = 0; i < 4; ++i)
                ASSERT_EQ(blk[256 + 512 * c + 64 * d + 4 * r + i],
                          n < N ? row[16 + 32 * c + 4 * d + i] : 0)
                    << "K=" << K << " N=" << N << " row " << n << " chunk " << c << " dword " << d;
        }
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q6_K_r16: group g, super-block b at (g * nb + b) * 3360; per row 16g + r: scales 2p, 2p+1
// at 32 p + 2 r; for lane l = 0..7 and half h = 0..1 the ql dwords 64h + 4l and 64h + 32 + 4l
// and the qh dword 32h + 4l at 256 + 384 l + 192 h + 64 k + 4 r (k = 0, 1, 2); d at
// 3328 + 2 r; rows past N zero. Checked byte by byte from the file's offsets (every byte of
// the block written exactly once), then element by element: each 6-bit quant rebuilt from
// the copy as a lane-per-row kernel reads it equals ggml's (dequantize_row_q6_K's indexing).
TEST(WeightLayouts, q6_K_r16) {
  const WeightLayout& l = *find_weight_layout("q6_K_r16");
  EXPECT_EQ(l.dtype, DType::Q6_K);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 16}, {768, 37}, {512, 8}}) {
    const int64_t nb = K / 256, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q6_K), 11);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 3360) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 3360;
        std::vector<int> hits(3360, 0);
        auto at = [&](int pos) {
          ++hits[size_t(pos)];
          return blk[pos];
        };
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q6_K);
          auto want = [&](int i) { return n < N ? row[i] : uint8_t(0); };
          for (int i = 0; i < 128; ++i) {  // ql[i]: half i / 64, dword k = i % 64 / 32
            const int h = i / 64, k = i % 64 / 32, m = i % 32;
            ASSERT_EQ(at(256 + 384 * (m / 4) + 192 * h + 64 * k + 4 * r + m % 4), want(i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " ql " << i;
          }
          for (int i = 0; i < 64; ++i) {  // qh[i]: half i / 32
            const int h = i / 32, m = i % 32;
            ASSERT_EQ(at(256 + 384 * (m / 4) + 192 * h + 128 + 4 * r + m % 4), want(128 + i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " qh " << i;
          }
          for (int j = 0; j < 16; ++j)
            ASSERT_EQ(at(32 * (j / 2) + 2 * r + j % 2), want(192 + j))
                << "scale " << j << " of row " << n << " block " << b;
          for (int i = 0; i < 2; ++i)
            ASSERT_EQ(at(3328 + 2 * r + i), want(208 + i)) << "d of row " << n << " block " << b;
          if (n >= N) continue;
          // Element e = 128 h + 32 s + m (ggml): ql[64h + 32(s & 1) + m], low nibble for
          // s < 2; bits 2s of qh[32h + m]. The copy: chunk c = 4h + s, ggml lane l = m / 4.
          for (int e = 0; e < 256; ++e) {
            const int h = e / 128, s = e % 128 / 32, m = e % 32;
            const uint8_t fl = row[64 * h + 32 * (s & 1) + m], fh = row[128 + 32 * h + m];
            const int file_q = (s < 2 ? fl & 0xF : fl >> 4) | ((fh >> (2 * s)) & 3) << 4;
            const uint8_t* lane = blk + 256 + 384 * (m / 4) + 192 * h + 4 * r + m % 4;
            const uint8_t cl = lane[64 * (s & 1)], ch = lane[128];
            const int copy_q = (s < 2 ? cl & 0xF : cl >> 4) | ((ch >> (2 * s)) & 3) << 4;
            ASSERT_EQ(copy_q, file_q) << "row " << n << " block " << b << " element " << e;
          }
        }
        for (int i = 0; i < 3360; ++i) ASSERT_EQ(hits[size_t(i)], 1) << "byte " << i;
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q5_K_r16: group g, super-block b at (g * nb + b) * 2816; dword k of row 16g + r's 16-byte
// head (d, dmin, scales) at 64 k + 4 r; for lane l = 0..7 the qs dwords 32j + 4l (j = 0..3)
// and the qh dword 4l at 256 + 320 l + 64 j + 4 r (j = 4: qh); rows past N zero. Checked
// byte by byte from the file's offsets (every byte written once), then element by element:
// each 5-bit quant rebuilt from the copy as a lane-per-row kernel reads it equals ggml's
// (dequantize_row_q5_K's indexing).
TEST(WeightLayouts, q5_K_r16) {
  const WeightLayout& l = *find_weight_layout("q5_K_r16");
  EXPECT_EQ(l.dtype, DType::Q5_K);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 16}, {768, 37}, {512, 8}}) {
    const int64_t nb = K / 256, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q5_K), 13);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 2816) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 2816;
        std::vector<int> hits(2816, 0);
        auto at = [&](int pos) {
          ++hits[size_t(pos)];
          return blk[pos];
        };
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q5_K);
          auto want = [&](int i) { return n < N ? row[i] : uint8_t(0); };
          for (int i = 0; i < 16; ++i)
            ASSERT_EQ(at(64 * (i / 4) + 4 * r + i % 4), want(i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " head " << i;
          for (int i = 0; i < 32; ++i)  // qh[i]: lane i / 4
            ASSERT_EQ(at(256 + 320 * (i / 4) + 256 + 4 * r + i % 4), want(16 + i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " qh " << i;
          for (int i = 0; i < 128; ++i) {  // qs[i]: j = i / 32, lane i % 32 / 4
            const int j = i / 32, m = i % 32;
            ASSERT_EQ(at(256 + 320 * (m / 4) + 64 * j + 4 * r + m % 4), want(48 + i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " qs " << i;
          }
          if (n >= N) continue;
          // Element e = 64 j + 32 u + m (ggml): nibble u of qs[32j + m], bit 2j + u of qh[m]
          // as bit 4. The copy: chunk c = 2j + u, ggml lane l = m / 4.
          for (int e = 0; e < 256; ++e) {
            const int j = e / 64, u = e % 64 / 32, m = e % 32, c = 2 * j + u;
            const uint8_t fs = row[48 + 32 * j + m], fh = row[16 + m];
            const int file_q = (u ? fs >> 4 : fs & 0xF) | ((fh >> c) & 1) << 4;
            const uint8_t* lane = blk + 256 + 320 * (m / 4) + 4 * r + m % 4;
            const uint8_t cs = lane[64 * j], ch = lane[256];
            const int copy_q = (u ? cs >> 4 : cs & 0xF) | ((ch >> c) & 1) << 4;
            ASSERT_EQ(copy_q, file_q) << "row " << n << " block " << b << " element " << e;
          }
        }
        for (int i = 0; i < 2816; ++i) ASSERT_EQ(hits[size_t(i)], 1) << "byte " << i;
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q3_K_r16: group g, super-block b at (g * nb + b) * 1760; scale dword k of row 16g + r at
// 64 k + 4 r; for lane l = 0..7 the qs dwords 4l and 32 + 4l and the hmask dword 4l at
// 192 + 192 l + 64 j + 4 r (j = 0, 1, 2); d at 1728 + 2 r; rows past N zero. Checked byte
// by byte from the file's offsets (every byte written once), then element by element: each
// quant (low 2 bits, hmask bit) rebuilt from the copy as a lane-per-row kernel reads it
// equals ggml's (dequantize_row_q3_K's indexing).
TEST(WeightLayouts, q3_K_r16) {
  const WeightLayout& l = *find_weight_layout("q3_K_r16");
  EXPECT_EQ(l.dtype, DType::Q3_K);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 16}, {768, 37}, {512, 8}}) {
    const int64_t nb = K / 256, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q3_K), 17);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 1760) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 1760;
        std::vector<int> hits(1760, 0);
        auto at = [&](int pos) {
          ++hits[size_t(pos)];
          return blk[pos];
        };
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q3_K);
          auto want = [&](int i) { return n < N ? row[i] : uint8_t(0); };
          for (int i = 0; i < 32; ++i)  // hmask[i]: lane i / 4
            ASSERT_EQ(at(192 + 192 * (i / 4) + 128 + 4 * r + i % 4), want(i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " hmask " << i;
          for (int i = 0; i < 64; ++i) {  // qs[i]: j = i / 32, lane i % 32 / 4
            const int j = i / 32, m = i % 32;
            ASSERT_EQ(at(192 + 192 * (m / 4) + 64 * j + 4 * r + m % 4), want(32 + i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " qs " << i;
          }
          for (int i = 0; i < 12; ++i)
            ASSERT_EQ(at(64 * (i / 4) + 4 * r + i % 4), want(96 + i))
                << "scale byte " << i << " of row " << n << " block " << b;
          for (int i = 0; i < 2; ++i)
            ASSERT_EQ(at(1728 + 2 * r + i), want(108 + i)) << "d of row " << n << " block " << b;
          if (n >= N) continue;
          // Element e = 128 j + 32 s + m (ggml): bits 2s of qs[32j + m], bit 4j + s of
          // hmask[m]. The copy: chunk c = 4j + s, ggml lane l = m / 4.
          for (int e = 0; e < 256; ++e) {
            const int j = e / 128, s = e % 128 / 32, m = e % 32, c = 4 * j + s;
            const int file_q = ((row[32 + 32 * j + m] >> (2 * s)) & 3) | ((row[m] >> c) & 1) << 2;
            const uint8_t* lane = blk + 192 + 192 * (m / 4) + 4 * r + m % 4;
            const int copy_q = ((lane[64 * j] >> (2 * s)) & 3) | ((lane[128] >> c) & 1) << 2;
            ASSERT_EQ(copy_q, file_q) << "row " << n << " block " << b << " element " << e;
          }
        }
        for (int i = 0; i < 1760; ++i) ASSERT_EQ(hits[size_t(i)], 1) << "byte " << i;
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

// q2_K_r16: group g, super-block b at (g * nb + b) * 1344; dword k of row 16g + r's head
// (k = 0..3: scale bytes 4k.., k = 4: d, dmin) at 64 k + 4 r; dword d of its half h (quant
// bytes 16 + 32 h + 4 d) at 320 + 512 h + 64 d + 4 r; rows past N zero; every byte written
// once.
TEST(WeightLayouts, q2_K_r16) {
  const WeightLayout& l = *find_weight_layout("q2_K_r16");
  EXPECT_EQ(l.dtype, DType::Q2_K);
  for (auto [K, N] : {std::pair<int64_t, int64_t>{256, 16}, {768, 37}, {512, 8}}) {
    const int64_t nb = K / 256, groups = (N + 15) / 16;
    const std::vector<uint8_t> src = random_bytes(size_t(N * nb) * sizeof(block_q2_K), 19);
    ASSERT_EQ(l.bytes(K, N), size_t(groups * nb) * 1344) << "K=" << K << " N=" << N;
    std::vector<uint8_t> dst(l.bytes(K, N), 0xAB);
    l.repack(src.data(), dst.data(), K, N, 0, groups);
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = dst.data() + (g * nb + b) * 1344;
        std::vector<int> hits(1344, 0);
        auto at = [&](int pos) {
          ++hits[size_t(pos)];
          return blk[pos];
        };
        for (int r = 0; r < 16; ++r) {
          const int64_t n = 16 * g + r;
          const uint8_t* row = src.data() + (n * nb + b) * sizeof(block_q2_K);
          auto want = [&](int i) { return n < N ? row[i] : uint8_t(0); };
          for (int i = 0; i < 16; ++i)
            ASSERT_EQ(at(64 * (i / 4) + 4 * r + i % 4), want(i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " scale " << i;
          for (int i = 0; i < 4; ++i)
            ASSERT_EQ(at(256 + 4 * r + i), want(80 + i)) << "d/dmin of row " << n << " block " << b;
          for (int i = 0; i < 64; ++i)  // qs[i]: half i / 32, dword i % 32 / 4
            ASSERT_EQ(at(320 + 512 * (i / 32) + 64 * (i % 32 / 4) + 4 * r + i % 4), want(16 + i))
                << "K=" << K << " N=" << N << " row " << n << " block " << b << " qs " << i;
        }
        for (int i = 0; i < 1344; ++i) ASSERT_EQ(hits[size_t(i)], 1) << "byte " << i;
      }
    std::vector<uint8_t> parts(l.bytes(K, N), 0x11);
    for (int64_t g = 0; g < groups; ++g) l.repack(src.data(), parts.data(), K, N, g, g + 1);
    EXPECT_EQ(parts, dst);
  }
}

}  // namespace
}  // namespace cke
