// What a generator needs to know about a quantized weight format, in one table: block
// geometry, where the scale, min, high bits and quants sit, how quants unpack to integers,
// the activation rows its contract converts to (and where their fields sit), and its
// contracts (plain and, where ggml has one, the repacked 8x8 arithmetic). A new format is a
// row here plus its unpacking in the tiles.
#pragma once

#include <cstdint>

#include "kernels/formats/dtype.h"

namespace cke::jit::gen {

enum class QFormat : uint8_t { Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 };

enum class QUnpack : uint8_t {
  Bytes,    // 32 int8 quants as stored
  Nibbles,  // 16 bytes: low nibbles = elements 0-15, high = 16-31
};

struct QFormatTraits {
  QFormat format;
  const char* name;  // as in ids and contracts: "q8_0"
  DType weight;
  DType act;          // the activation rows the kernels read (contract `convert`)
  int block_elems;    // 32
  int block_bytes;    // 34 (q8_0), 18 (q4_0), 20 (q4_1), 22 (q5_0), 24 (q5_1)
  int scale_offset;   // fp16 block scale d
  int min_offset;     // fp16 block min m (q4_1, q5_1: x = d * q + m), or -1
  int qh_offset;      // 32 high bits, bit e = bit 4 of element e (q5_0, q5_1), or -1
  int quants_offset;  // the quant bytes (or nibbles)
  QUnpack unpack;
  // Subtracted from the unpacked integers (nibble | high bit << 4): q4_0 8, q5_0 16. 0 for
  // q8_0 (signed bytes) and for the unsigned formats q4_1, q5_1, whose integers (0..15,
  // 0..31) take vpdpbusd's unsigned operand as they are (ggml's mul_sum_us8_pairs_float).
  int bias;
  // The activation block (block_q8_0: fp16 d, 32 int8; block_q8_1: fp16 d, fp16 s, 32 int8).
  int act_block_bytes;
  int act_quants_offset;
  int act_sum_offset;       // fp16 s = d * sum(q) of block_q8_1, or -1
  const char* contract;     // vec_dot arithmetic
  const char* contract_x8;  // ggml's repacked 8x8 arithmetic, or null
  // Signed weight integers (q8_0, q4_0 - 8, q5_0 - 16): ggml's sign move (vpsignb).
  bool is_signed() const { return unpack == QUnpack::Bytes || bias != 0; }
};

inline const QFormatTraits& q_traits(QFormat f) {
  static const QFormatTraits kTable[] = {
      {QFormat::Q8_0, "q8_0", DType::Q8_0, DType::Q8_0, 32, 34, 0, -1, -1, 2, QUnpack::Bytes, 0, 34,
       2, -1, "linear.q8_0.ggml", nullptr},
      {QFormat::Q4_0, "q4_0", DType::Q4_0, DType::Q8_0, 32, 18, 0, -1, -1, 2, QUnpack::Nibbles, 8,
       34, 2, -1, "linear.q4_0.ggml", "linear.q4_0x8.ggml"},
      {QFormat::Q4_1, "q4_1", DType::Q4_1, DType::Q8_1, 32, 20, 0, 2, -1, 4, QUnpack::Nibbles, 0,
       36, 4, 2, "linear.q4_1.ggml", nullptr},
      {QFormat::Q5_0, "q5_0", DType::Q5_0, DType::Q8_0, 32, 22, 0, -1, 2, 6, QUnpack::Nibbles, 16,
       34, 2, -1, "linear.q5_0.ggml", nullptr},
      {QFormat::Q5_1, "q5_1", DType::Q5_1, DType::Q8_1, 32, 24, 0, 2, 4, 8, QUnpack::Nibbles, 0, 36,
       4, 2, "linear.q5_1.ggml", nullptr},
  };
  return kTable[static_cast<int>(f)];
}

}  // namespace cke::jit::gen
