// Metadata lookups and typed accessors of a validated File.
#include <limits>

#include "runtime/gguf/gguf.h"

namespace cke::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8:
      return "u8";
    case ValueType::I8:
      return "i8";
    case ValueType::U16:
      return "u16";
    case ValueType::I16:
      return "i16";
    case ValueType::U32:
      return "u32";
    case ValueType::I32:
      return "i32";
    case ValueType::F32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::U64:
      return "u64";
    case ValueType::I64:
      return "i64";
    case ValueType::F64:
      return "f64";
  }
  return "unknown";
}

uint64_t Value::array_size() const {
  if (type != ValueType::ARRAY) return 0;
  return nums.size() + ints.size() + reals.size() + strings.size();
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

std::string type_desc(const Value& v) {
  if (v.type != ValueType::ARRAY) return std::string(value_type_name(v.type));
  return "array of " + std::string(value_type_name(v.elem_type));
}

// The value as a signed 128-bit integer when it is an integer scalar.
std::optional<__int128> integer(const Value& v) {
  if (v.type == ValueType::ARRAY) return std::nullopt;
  if (auto* u = std::get_if<uint64_t>(&v.scalar)) return static_cast<__int128>(*u);
  if (auto* s = std::get_if<int64_t>(&v.scalar)) return static_cast<__int128>(*s);
  return std::nullopt;
}

std::string to_string(__int128 x) {
  // (Appending rather than `"-" + s` avoids a GCC 12 -Wrestrict false positive.)
  std::string s = x < 0 ? "-" : "";
  return s.append(std::to_string(static_cast<uint64_t>(x < 0 ? -x : x)));
}

}  // namespace

// Shared body of the integer getters: any integer type whose value fits in T.
template <class T>
static std::optional<T> get_int(const File& f, std::string_view key, GgufError* err,
                                const char* want) {
  auto fail = [&](const std::string& why) -> std::optional<T> {
    if (err) err->message = f.path() + ": " + std::string(key) + ": " + why;
    return std::nullopt;
  };
  const Value* v = f.find(key);
  if (!v) return fail("missing metadata key");
  auto x = integer(*v);
  if (!x) return fail(std::string("expected ") + want + ", found " + type_desc(*v));
  if (*x < static_cast<__int128>(std::numeric_limits<T>::min()) ||
      *x > static_cast<__int128>(std::numeric_limits<T>::max()))
    return fail("value " + to_string(*x) + " does not fit in " + want);
  return static_cast<T>(*x);
}

std::optional<uint32_t> File::u32(std::string_view key, GgufError* err) const {
  return get_int<uint32_t>(*this, key, err, "u32");
}
std::optional<uint64_t> File::u64(std::string_view key, GgufError* err) const {
  return get_int<uint64_t>(*this, key, err, "u64");
}
std::optional<int64_t> File::i64(std::string_view key, GgufError* err) const {
  return get_int<int64_t>(*this, key, err, "i64");
}

namespace {
// Looks up `key` and checks the predicate; fills *err on failure.
const Value* lookup(const File& f, std::string_view key, GgufError* err, const std::string& want,
                    bool (*ok)(const Value&)) {
  const Value* v = f.find(key);
  std::string why;
  if (!v)
    why = "missing metadata key";
  else if (!ok(*v))
    why = "expected " + want + ", found " + type_desc(*v);
  else
    return v;
  if (err) err->message = f.path() + ": " + std::string(key) + ": " + why;
  return nullptr;
}
}  // namespace

std::optional<double> File::real(std::string_view key, GgufError* err) const {
  const Value* v = lookup(*this, key, err, "f32 or f64", [](const Value& x) {
    return x.type == ValueType::F32 || x.type == ValueType::F64;
  });
  if (!v) return std::nullopt;
  return std::get<double>(v->scalar);
}

std::optional<bool> File::boolean(std::string_view key, GgufError* err) const {
  const Value* v =
      lookup(*this, key, err, "bool", [](const Value& x) { return x.type == ValueType::BOOL; });
  if (!v) return std::nullopt;
  return std::get<bool>(v->scalar);
}

std::optional<std::string_view> File::str(std::string_view key, GgufError* err) const {
  const Value* v =
      lookup(*this, key, err, "string", [](const Value& x) { return x.type == ValueType::STRING; });
  if (!v) return std::nullopt;
  return std::get<std::string_view>(v->scalar);
}

const std::vector<std::string_view>* File::str_array(std::string_view key, GgufError* err) const {
  const Value* v = lookup(*this, key, err, "array of string", [](const Value& x) {
    return x.type == ValueType::ARRAY && x.elem_type == ValueType::STRING;
  });
  return v ? &v->strings : nullptr;
}

const Value* File::array(std::string_view key, GgufError* err,
                         std::optional<ValueType> elem) const {
  const Value* v =
      lookup(*this, key, err, "array", [](const Value& x) { return x.type == ValueType::ARRAY; });
  if (!v || !elem || v->elem_type == *elem) return v;
  if (err)
    err->message = path_ + ": " + std::string(key) + ": expected array of " +
                   std::string(value_type_name(*elem)) + ", found " + type_desc(*v);
  return nullptr;
}

}  // namespace cke::gguf
