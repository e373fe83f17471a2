#include "runtime/gguf/quantize.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstring>
#include <vector>

#include "kernels/formats/quant.h"

namespace cke::gguf {

bool is_quantize_target(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

std::optional<uint32_t> llama_ftype(DType t) {
  switch (t) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::Q4_0:
      return 2;
    case DType::Q4_1:
      return 3;
    case DType::Q8_0:
      return 7;
    case DType::Q5_0:
      return 8;
    case DType::Q5_1:
      return 9;
    case DType::Q2_K:
      return 10;
    case DType::Q3_K:
      return 12;
    case DType::Q4_K:
      return 15;
    case DType::Q5_K:
      return 17;
    case DType::Q6_K:
      return 18;
    case DType::BF16:
      return 32;
    default:
      return std::nullopt;
  }
}

DType fitting_type(DType want, int64_t ne0) {
  auto fits = [&](DType t) { return ne0 % dtype_info(t).block_size == 0; };
  if (fits(want)) return want;
  DType fb = DType::F16;
  switch (want) {
    case DType::Q2_K:
    case DType::Q3_K:
      fb = DType::Q4_0;
      break;  // llama.cpp: IQ4_NL
    case DType::Q4_K:
      fb = DType::Q5_0;
      break;
    case DType::Q5_K:
      fb = DType::Q5_1;
      break;
    case DType::Q6_K:
      fb = DType::Q8_0;
      break;
    default:
      break;  // legacy 32-blocks: llama.cpp has no fallback and aborts; we use F16
  }
  return fits(fb) ? fb : DType::F16;
}

bool is_quantizable_tensor(const TensorInfo& t) {
  const std::string_view suffix = "weight";
  return t.n_dims >= 2 && t.name.size() >= suffix.size() &&
         t.name.substr(t.name.size() - suffix.size()) == suffix;
}

void convert_rows(DType from, const uint8_t* src, DType to, uint8_t* dst, int64_t ne0,
                  int64_t n_rows) {
  const size_t in_row = row_bytes(from, ne0), out_row = row_bytes(to, ne0);
  // Rows are independent, so the result does not depend on how TBB splits them.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n_rows, 16),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      std::vector<float> tmp(static_cast<size_t>(ne0));
                      for (int64_t i = r.begin(); i < r.end(); ++i) {
                        dequantize_row(from, src + i * in_row, tmp.data(), ne0);
                        quantize_row(to, tmp.data(), dst + i * out_row, ne0);
                      }
                    });
}

bool quantize_file(const File& in, const std::string& out_path, DType type, GgufError* err,
                   const std::function<void(const std::string&)>& note) {
  auto fail = [&](const std::string& field, const std::string& why) {
    if (err) err->message = in.path() + ": " + field + ": " + why;
    return false;
  };
  if (!is_quantize_target(type))
    return fail("type", "cannot quantize to " + std::string(dtype_name(type)));
  Writer w;
  w.set_alignment(static_cast<uint32_t>(in.alignment()));
  for (const auto& [k, v] : in.metadata()) w.add_value(std::string(k), v);
  // As llama-quantize: the block-format version (GGML_QNT_VERSION) and the file type.
  w.add_u32("general.quantization_version", 2);
  w.add_u32("general.file_type", *llama_ftype(type));
  for (const TensorInfo& t : in.tensors()) {
    const std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    DType to = t.type;
    if (is_quantizable_tensor(t)) {
      to = fitting_type(type, t.ne[0]);
      if (to != type && note)
        note(std::string(t.name) + ": row length " + std::to_string(t.ne[0]) +
             " is not a multiple of the " + std::string(dtype_name(type)) + " block size " +
             std::to_string(dtype_info(type).block_size) + "; using " +
             std::string(dtype_name(to)));
    }
    if (to == t.type) {
      w.add_tensor(std::string(t.name), t.type, ne, {t.data, t.n_bytes});
      continue;
    }
    if (!dtype_info(t.type).has_reference)
      return fail(std::string(t.name), "cannot convert from " + std::string(dtype_name(t.type)) +
                                           " (no reference dequantizer)");
    const int64_t rows = t.n_elements() / t.ne[0];
    const TensorInfo src = t;
    w.add_tensor_fill(std::string(t.name), to, ne,
                      [src, to, rows](std::span<uint8_t> dst, GgufError*) {
                        convert_rows(src.type, src.data, to, dst.data(), src.ne[0], rows);
                        return true;
                      });
  }
  return w.write(out_path, err);
}

}  // namespace cke::gguf
