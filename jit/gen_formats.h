// What a generator needs to know about a quantized weight format, in one table: block
// geometry, where the scale and the quants sit, how quants unpack to int8, the activation
// type its contract converts to, and its contracts (plain and, where ggml has one, the
// repacked 8x8 arithmetic). A new format is a row here plus its unpacking in the tiles.
#pragma once

#include <cstdint>

#include "kernels/formats/dtype.h"

namespace cke::jit::gen {

enum class QFormat : uint8_t { Q8_0, Q4_0 };

enum class QUnpack : uint8_t {
  Bytes,    // 32 int8 quants as stored
  Nibbles,  // 16 bytes: low nibbles = elements 0-15, high = 16-31, each minus 8
};

struct QFormatTraits {
  QFormat format;
  const char* name;  // as in ids and contracts: "q8_0"
  DType weight;
  DType act;         // the activation rows the kernels read (contract `convert`)
  int block_elems;   // 32
  int block_bytes;   // 34 (q8_0), 18 (q4_0)
  int scale_offset;  // fp16 block scale
  int quants_offset;
  QUnpack unpack;
  const char* contract;     // vec_dot arithmetic
  const char* contract_x8;  // ggml's repacked 8x8 arithmetic, or null
};

inline const QFormatTraits& q_traits(QFormat f) {
  static const QFormatTraits kTable[] = {
      {QFormat::Q8_0, "q8_0", DType::Q8_0, DType::Q8_0, 32, 34, 0, 2, QUnpack::Bytes,
       "linear.q8_0.ggml", nullptr},
      {QFormat::Q4_0, "q4_0", DType::Q4_0, DType::Q8_0, 32, 18, 0, 2, QUnpack::Nibbles,
       "linear.q4_0.ggml", "linear.q4_0x8.ggml"},
  };
  return kTable[static_cast<int>(f)];
}

}  // namespace cke::jit::gen
