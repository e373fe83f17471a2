// GGUF files: a validated, read-only view over an mmap'ed file, and a writer.
//
// Everything is checked once, at open, before any tensor is used: header, every metadata
// value, every tensor info, the data section, bounds, alignment and overlaps. After a
// successful open, every accessor only reads inside the mapping. Errors are values
// (`GgufError`) naming the file, the field or tensor, and the reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernels/formats/dtype.h"

namespace cke::gguf {

// GGUF metadata value types, as stored on disk. Arrays hold scalars or strings; nested
// arrays (ARRAY of ARRAY) are rejected at open (no model uses them, see docs/gguf.md).
enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
std::string_view value_type_name(ValueType t);

// A metadata value. Arrays hold one element type; strings are views into the mapping
// (valid as long as the File lives).
struct Value {
  ValueType type = ValueType::U8;
  ValueType elem_type = ValueType::U8;  // for ARRAY
  std::variant<uint64_t, int64_t, double, bool, std::string_view> scalar;
  // Scalars: unsigned types (and nothing else) hold uint64_t, signed types int64_t, F32/F64
  // double, BOOL bool, STRING string_view.
  // Arrays: numbers/bools are decoded into `nums`/`ints`/`reals`, strings into `strings`
  // (exactly one of them is filled, matching elem_type: unsigned and BOOL -> nums,
  // signed -> ints, F32/F64 -> reals).
  std::vector<uint64_t> nums;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  std::vector<std::string_view> strings;
  uint64_t array_size() const;
};

struct TensorInfo {
  std::string_view name;
  DType type;
  uint32_t n_dims;
  int64_t ne[4];        // ne[0] contiguous; unused dims are 1
  uint64_t offset;      // relative to the data section
  uint64_t n_bytes;     // exact byte size of the data
  const uint8_t* data;  // inside the mapping
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

struct GgufError {
  std::string message;  // "<file>: <field or tensor>: <reason>"
};

// Limits on counts read from the header (anything larger is "absurd" and rejected before
// allocating): see docs/gguf.md.
struct Limits {
  uint64_t max_tensors = 1u << 20;
  uint64_t max_kv = 1u << 20;
  uint64_t max_string = 1u << 30;     // bytes in one string
  uint64_t max_array = 1ull << 32;    // elements in one array
  uint64_t max_alignment = 1u << 30;  // general.alignment upper bound
};

class File {
 public:
  // Opens and validates. On failure returns nullptr and fills *err.
  static std::unique_ptr<File> open(const std::string& path, GgufError* err,
                                    const Limits& limits = {});
  // Validates an in-memory image (used by the fuzzer and tests); `name` appears in errors.
  // The bytes must outlive the File.
  static std::unique_ptr<File> from_memory(std::span<const uint8_t> bytes, std::string name,
                                           GgufError* err, const Limits& limits = {});
  ~File();
  File(const File&) = delete;  // owns the mapping
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string_view, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed accessors: the value must exist and be of a compatible type (any integer type
  // whose value fits for the integer getters; f32/f64 for real). On failure they return
  // an error naming the key, what was expected and what was found.
  std::optional<uint32_t> u32(std::string_view key, GgufError* err) const;
  std::optional<uint64_t> u64(std::string_view key, GgufError* err) const;
  std::optional<int64_t> i64(std::string_view key, GgufError* err) const;
  std::optional<double> real(std::string_view key, GgufError* err) const;
  std::optional<bool> boolean(std::string_view key, GgufError* err) const;
  std::optional<std::string_view> str(std::string_view key, GgufError* err) const;
  // Array accessors (element type must match).
  const std::vector<std::string_view>* str_array(std::string_view key, GgufError* err) const;
  // Any array (check elem_type yourself, or pass it to have it checked).
  const Value* array(std::string_view key, GgufError* err,
                     std::optional<ValueType> elem = std::nullopt) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(std::string_view name) const;

 private:
  File() = default;
  std::string path_;
  std::span<const uint8_t> bytes_;
  void* map_ = nullptr;
  size_t map_len_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, Value>> kv_;
  std::map<std::string_view, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string_view, size_t> tensor_index_;
  friend class Parser;
};

// Writer: collects metadata and tensors, writes GGUF v3 with the given alignment.
// Adding a key that already exists replaces its value in place (so a copied header can be
// edited). Invalid input (bad alignment, empty/duplicate names, bad shapes, wrong data
// size) is recorded and reported by write()/to_bytes(), which then produce nothing.
class Writer {
 public:
  // Produces the tensor's bytes at write time, into `dst` (exactly the tensor's size).
  // Lets tools stream large models without holding all tensors in memory.
  using TensorFill = std::function<bool(std::span<uint8_t> dst, GgufError* err)>;

  void set_alignment(uint32_t a);  // also written as general.alignment when != 32
  void add_u8(std::string key, uint8_t v);
  void add_i8(std::string key, int8_t v);
  void add_u16(std::string key, uint16_t v);
  void add_i16(std::string key, int16_t v);
  void add_u32(std::string key, uint32_t v);
  void add_i32(std::string key, int32_t v);
  void add_u64(std::string key, uint64_t v);
  void add_i64(std::string key, int64_t v);
  void add_f32(std::string key, float v);
  void add_f64(std::string key, double v);
  void add_bool(std::string key, bool v);
  void add_str(std::string key, std::string v);
  void add_str_array(std::string key, std::vector<std::string> v);
  void add_f32_array(std::string key, std::vector<float> v);
  void add_i32_array(std::string key, std::vector<int32_t> v);
  // Copies an existing metadata value (any type, arrays included) from another file.
  void add_value(std::string key, const Value& v);
  // ne: up to 4 dims, ne[0] contiguous. data: row_bytes(type, ne0) * rows bytes (copied).
  void add_tensor(std::string name, DType type, std::vector<int64_t> ne,
                  std::span<const uint8_t> data);
  // Same, but the data comes from `fill`, called once during write().
  void add_tensor_fill(std::string name, DType type, std::vector<int64_t> ne, TensorFill fill);
  // Writes the file; false and *err on invalid input or I/O failure.
  bool write(const std::string& path, GgufError* err) const;
  // The whole image in memory; empty (and *err if given) on invalid input.
  std::vector<uint8_t> to_bytes(GgufError* err = nullptr) const;
  size_t n_tensors() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  Impl& impl();
};

}  // namespace cke::gguf
