// Weight layouts other than GGUF's row-major blocks: what a kernel map may declare on a
// weight port (`layout:`), and the load-time repack that makes it from the file's tensor.
//
// A repacked copy is made once at load, only for the tensors whose chosen provider asks for
// it (the engine's repack step; docs/kernel-maps.md). It holds the same bytes in another
// order: the repack is a permutation (plus zero padding), so no rounding happens here.
//
//   q4_0_r16   q4_0 rows in groups of 16, block-interleaved and transposed for kernels that
//              keep one int32 lane per row. Group g (rows 16g .. 16g+15; rows past N are
//              zero), block b (elements 32b .. 32b+31) is kQ4_0R16Block bytes at
//              (g * nb + b) * kQ4_0R16Block:
//                bytes [64 j + 4 r, 64 j + 4 r + 4)  dword j (quant bytes 4j .. 4j+3) of
//                                                    row 16g + r's block, j = 0..3
//                bytes [256 + 2 r, 256 + 2 r + 2)    that block's fp16 scale d
//              So a 512-bit load at 64 j holds dword j of all 16 rows, lane r = row r,
//              and the scales of the 16 rows are one 256-bit load: 18 bytes per row and
//              block, as in the file.
//   q4_K_r16   q4_K rows in groups of 16, super-block-interleaved and transposed for kernels
//              that keep one int32 lane per row. Group g (rows 16g .. 16g+15; rows past N
//              are zero), super-block b (elements 256b .. 256b+255) is kQ4KR16Block bytes at
//              (g * nb + b) * kQ4KR16Block:
//                bytes [64 k + 4 r, +4)              dword k of the block head (k = 0: d |
//                                                    dmin << 16; 1..3: the 12 scale bytes)
//                                                    of row 16g + r, k = 0..3
//                bytes [256 + 512 c + 64 d + 4 r, +4)  dword d (quant bytes 4d .. 4d+3) of
//                                                    64-element chunk c of that row, d = 0..7
//              So one 512-bit load holds one dword of all 16 rows, lane r = row r: 144
//              bytes per row and super-block, as in the file.
//   q8_0_r16   q8_0 rows in groups of 16, block-interleaved and transposed for kernels that
//              keep each row's 8 ggml lanes in 8 vectors of one lane per row. Group g (rows
//              16g .. 16g+15; rows past N are zero bytes), block b (elements 32b .. 32b+31)
//              is kQ8_0R16Block bytes at (g * nb + b) * kQ8_0R16Block:
//                bytes [64 j + 4 r, 64 j + 4 r + 4)  dword j (quants 4j .. 4j+3) of row
//                                                    16g + r's block, j = 0..7, each quant
//                                                    BIASED: q + 128 as an unsigned byte
//                                                    (q xor 0x80), vpdpbusd's unsigned side
//                bytes [512 + 2 r, 512 + 2 r + 2)    that block's fp16 scale d
//              The bias is a bijection of bytes: no information is lost or rounded. 34
//              bytes per row and block, as in the file.
//   q5_0_r16   q5_0 rows in groups of 16, block-interleaved and transposed for kernels that
//              keep each row's 8 ggml lanes in 8 vectors of one lane per row (the q8_0_r16
//              tiles, each lane vector made in registers). Group g (rows 16g .. 16g+15; rows
//              past N are zero), block b (elements 32b .. 32b+31) is kQ5_0R16Block bytes at
//              (g * nb + b) * kQ5_0R16Block:
//                bytes [64 j + 4 r, 64 j + 4 r + 4)  dword j (qs bytes 4j .. 4j+3: elements
//                                                    4j.. as low nibbles, 16+4j.. as high
//                                                    ones) of row 16g + r's block, j = 0..3
//                bytes [256 + 4 r, 256 + 4 r + 4)    the block's qh REORDERED: bit 8k + j
//                                                    holds element 4j + k's high bit (qh bit
//                                                    4j + k), j = 0..7, k = 0..3, so lane
//                                                    vector j's byte k takes it by one shift
//                bytes [320 + 2 r, 320 + 2 r + 2)    that block's fp16 scale d
//              22 bytes per row and block, as in the file.
//   q4_1_r16   q4_1 rows in groups of 16, as q5_0_r16 without the high bits and with the
//              block minima. Group g (rows 16g .. 16g+15; rows past N are zero), block b is
//              kQ4_1R16Block bytes at (g * nb + b) * kQ4_1R16Block:
//                bytes [64 j + 4 r, 64 j + 4 r + 4)  dword j (qs bytes 4j .. 4j+3: elements
//                                                    4j.. as low nibbles, 16+4j.. as high
//                                                    ones) of row 16g + r's block, j = 0..3
//                bytes [256 + 2 r, 256 + 2 r + 2)    that block's fp16 scale d
//                bytes [288 + 2 r, 288 + 2 r + 2)    that block's fp16 min m
//              20 bytes per row and block, as in the file (a block is 5 cache lines).
//   q5_1_r16   q5_1 rows in groups of 16: q5_0_r16's quants and reordered high bits, then
//              the scales and minima. Block b of group g is kQ5_1R16Block bytes at
//              (g * nb + b) * kQ5_1R16Block:
//                bytes [64 j + 4 r, +4)              qs dword j of row 16g + r, j = 0..3
//                bytes [256 + 4 r, +4)               its qh reordered as q5_0_r16's
//                bytes [320 + 2 r, +2)               fp16 d
//                bytes [352 + 2 r, +2)               fp16 m
//              24 bytes per row and block, as in the file (a block is 6 cache lines).
//   q6_K_r16   q6_K rows in groups of 16, super-block-interleaved and transposed for kernels
//              that keep each row's 8 ggml lanes in 8 vectors of one lane per row. Group g
//              (rows 16g .. 16g+15; rows past N are zero), super-block b (elements 256b ..
//              256b+255) is kQ6KR16Block bytes at (g * nb + b) * kQ6KR16Block:
//                bytes [32 p + 2 r, +2)              scales 2p, 2p+1 (int8) of row 16g + r,
//                                                    p = 0..7
//                bytes [256 + 384 l + 192 h + 64 k + 4 r, +4)
//                                                    for ggml lane l = 0..7 and half h = 0..1
//                                                    of that row: k = 0: ql bytes 64h + 4l ..
//                                                    +3 (elements 4l.. of chunks 4h, 4h+2 as
//                                                    low, high nibbles); k = 1: ql bytes
//                                                    64h + 32 + 4l .. +3 (chunks 4h+1, 4h+3);
//                                                    k = 2: qh bytes 32h + 4l .. +3 (2 bits
//                                                    of chunk 4h+s at bit 2s)
//                bytes [3328 + 2 r, +2)              the row's fp16 d
//              So a 256-bit load at 32 p, sign-extended to words, holds in dword lane r the
//              scale pair 2p, 2p+1 of row r; each 512-bit load of the quants holds one dword
//              of all 16 rows (lane r = row r), lane l's 6 of them in 384 bytes; the 16 d's
//              are one 256-bit load. 210 bytes per row and super-block, as in the file.
//   q5_K_r16   q5_K rows in groups of 16, super-block-interleaved and transposed for kernels
//              that keep each row's 8 ggml lanes in 8 vectors of one lane per row. Group g
//              (rows 16g .. 16g+15; rows past N are zero), super-block b (elements 256b ..
//              256b+255) is kQ5KR16Block bytes at (g * nb + b) * kQ5KR16Block:
//                bytes [64 k + 4 r, +4)              dword k of the block head (k = 0: d |
//                                                    dmin << 16; 1..3: the 12 scale bytes)
//                                                    of row 16g + r, k = 0..3 (as q4_K_r16)
//                bytes [256 + 320 l + 64 j + 4 r, +4)
//                                                    for ggml lane l = 0..7 of that row: j =
//                                                    0..3: qs bytes 32j + 4l .. +3 (elements
//                                                    4l.. of chunks 2j, 2j+1 as low, high
//                                                    nibbles); j = 4: qh bytes 4l .. +3 (bit c
//                                                    of chunk c)
//              So each 512-bit load of the quants holds one dword of all 16 rows (lane r =
//              row r), lane l's 5 of them in 320 bytes. 176 bytes per row and super-block,
//              as in the file.
//   q3_K_r16   q3_K rows in groups of 16, super-block-interleaved and transposed for kernels
//              that keep each row's 8 ggml lanes in 8 vectors of one lane per row. Group g
//              (rows 16g .. 16g+15; rows past N are zero), super-block b (elements 256b ..
//              256b+255) is kQ3KR16Block bytes at (g * nb + b) * kQ3KR16Block:
//                bytes [64 k + 4 r, +4)              scale bytes 4k .. 4k+3 of row 16g + r,
//                                                    k = 0..2
//                bytes [192 + 192 l + 64 j + 4 r, +4)
//                                                    for ggml lane l = 0..7 of that row: j =
//                                                    0, 1: qs bytes 32j + 4l .. +3 (2 bits of
//                                                    chunk 4j + s at bit 2s); j = 2: hmask
//                                                    bytes 4l .. +3 (bit c of chunk c)
//                bytes [1728 + 2 r, +2)              the row's fp16 d
//              So each 512-bit load holds one dword of all 16 rows (lane r = row r), lane
//              l's 3 of them in 192 bytes; the 16 d's are one 256-bit load. 110 bytes per
//              row and super-block, as in the file.
//   q2_K_r16   q2_K rows in groups of 16, super-block-interleaved and transposed for kernels
//              that keep one int32 lane per row (as q4_K_r16). Group g (rows 16g .. 16g+15;
//              rows past N are zero), super-block b (elements 256b .. 256b+255) is
//              kQ2KR16Block bytes at (g * nb + b) * kQ2KR16Block:
//                bytes [64 k + 4 r, +4)              dword k of row 16g + r's block head: k =
//                                                    0..3 the 16 scale bytes, k = 4: d | dmin
//                                                    << 16
//                bytes [320 + 512 h + 64 d + 4 r, +4)  dword d (quant bytes 32h + 4d .. +3) of
//                                                    128-element half h of that row, d = 0..7
//              So one 512-bit load holds one dword of all 16 rows, lane r = row r: 84 bytes
//              per row and super-block, as in the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/formats/dtype.h"

namespace cke {

inline constexpr int kQ4_0R16Rows = 16;
inline constexpr int kQ4_0R16Block = 16 * 18;  // bytes of one block of a 16-row group
inline constexpr int kQ8_0R16Rows = 16;
inline constexpr int kQ8_0R16Block = 16 * 34;  // bytes of one block of a 16-row group
inline constexpr int kQ5_0R16Rows = 16;
inline constexpr int kQ5_0R16Block = 16 * 22;  // bytes of one block of a 16-row group
inline constexpr int kQ4_1R16Rows = 16;
inline constexpr int kQ4_1R16Block = 16 * 20;  // bytes of one block of a 16-row group
inline constexpr int kQ5_1R16Rows = 16;
inline constexpr int kQ5_1R16Block = 16 * 24;  // bytes of one block of a 16-row group
inline constexpr int kQ4KR16Rows = 16;
inline constexpr int kQ4KR16Block = 16 * 144;  // bytes of one super-block of a 16-row group
inline constexpr int kQ6KR16Rows = 16;
inline constexpr int kQ6KR16Block = 16 * 210;  // bytes of one super-block of a 16-row group
inline constexpr int kQ5KR16Rows = 16;
inline constexpr int kQ5KR16Block = 16 * 176;  // bytes of one super-block of a 16-row group
inline constexpr int kQ3KR16Rows = 16;
inline constexpr int kQ3KR16Block = 16 * 110;  // bytes of one super-block of a 16-row group
inline constexpr int kQ2KR16Rows = 16;
inline constexpr int kQ2KR16Block = 16 * 84;  // bytes of one super-block of a 16-row group

struct WeightLayout {
  std::string_view name;
  DType dtype;        // the tensor type it reorders
  int64_t row_group;  // rows per group (N is padded to a multiple)
  // Bytes of the repacked K x N tensor (K a multiple of the block size).
  size_t (*bytes)(int64_t K, int64_t N);
  // Repacks row groups [g0, g1) of the row-major tensor `src` (N rows of K) into `dst`
  // (bytes(K, N) bytes): independent per group, so groups may run in parallel.
  void (*repack)(const uint8_t* src, uint8_t* dst, int64_t K, int64_t N, int64_t g0, int64_t g1);
};

// The layouts (not row_major: the file's own, which needs no repack).
const std::vector<WeightLayout>& weight_layouts();
// nullptr if `name` is none of them.
const WeightLayout* find_weight_layout(std::string_view name);

}  // namespace cke
