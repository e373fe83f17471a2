// GGUF reader: maps the file and validates every byte of the header before anything is
// exposed. Layout (v2/v3, little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv × { string key | u32 type | value }          string = u64 len + bytes
//   n_tensors × { string name | u32 n_dims | n_dims × i64 ne | u32 type | u64 offset }
//   padding to general.alignment (default 32) | data section (tensor offsets are relative)
// Every read goes through Cursor, which checks the remaining length first, so a hostile
// image can never make us read outside `bytes`.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/gguf/gguf.h"

namespace cke::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF reader assumes a little-endian host");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> b) : b_(b) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return b_.size() - pos_; }
  template <class T>
  bool read(T* out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // A view of the next n bytes (caller checked n <= remaining()).
  std::string_view take(size_t n) {
    std::string_view s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

bool is_known_type(uint32_t t) {
  return t <= static_cast<uint32_t>(ValueType::F64);
}

// Bytes of one fixed-size scalar on disk; 0 for STRING/ARRAY.
size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    default:
      return 0;
  }
}

std::string quoted(std::string_view s) {
  // Names in messages come from the file: keep them printable and short.
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 80; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

}  // namespace

// Parses and validates one image into a File. Every failure goes through fail(), which
// formats "<file>: <field>: <reason>".
class Parser {
 public:
  Parser(File& f, const Limits& lim, GgufError* err) : f_(f), lim_(lim), err_(err), c_(f.bytes_) {}

  bool run() { return header() && metadata() && alignment() && tensor_infos() && data_section(); }

 private:
  File& f_;
  const Limits& lim_;
  GgufError* err_;
  Cursor c_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;

  bool fail(const std::string& field, const std::string& reason) {
    if (err_) err_->message = f_.path_ + ": " + field + ": " + reason;
    return false;
  }
  bool truncated(const std::string& field, size_t need) {
    return fail(field, "truncated: needs " + std::to_string(need) + " bytes at offset " +
                           std::to_string(c_.pos()) + ", file has " +
                           std::to_string(f_.bytes_.size()));
  }
  template <class T>
  bool read(const std::string& field, T* out) {
    return c_.read(out) || truncated(field, sizeof(T));
  }

  // `name()` builds the field name only when there is an error to report (arrays of
  // strings have hundreds of thousands of elements).
  template <class Name>
  bool string_at(const Name& name, std::string_view* out) {
    uint64_t len = 0;
    if (!c_.read(&len)) return truncated(name() + " length", sizeof len);
    if (len > lim_.max_string)
      return fail(name(), "string length " + std::to_string(len) + " exceeds the limit of " +
                              std::to_string(lim_.max_string));
    if (len > c_.remaining())
      return fail(name(), "string length " + std::to_string(len) +
                              " runs past the end of the file (" + std::to_string(c_.remaining()) +
                              " bytes left)");
    *out = c_.take(static_cast<size_t>(len));
    return true;
  }
  bool string(const std::string& field, std::string_view* out) {
    return string_at([&] { return field; }, out);
  }

  bool header() {
    uint32_t magic = 0, version = 0;
    if (!read("header.magic", &magic)) return false;
    if (magic != kMagic) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "0x%08x", magic);
      return fail("header.magic", std::string("bad magic ") + hex + " (expected 'GGUF')");
    }
    if (!read("header.version", &version)) return false;
    // A big-endian file stores the version byte-swapped: 3 reads as 0x03000000.
    const uint32_t swapped = __builtin_bswap32(version);
    if ((version & 0xffffu) == 0 && swapped >= 1 && swapped <= 3)
      return fail("header.version", "big-endian GGUF is not supported");
    if (version == 1)
      return fail("header.version",
                  "unsupported GGUF version 1 (32-bit counts; re-convert the model)");
    if (version != 2 && version != 3)
      return fail("header.version", "unsupported GGUF version " + std::to_string(version));
    f_.version_ = version;
    if (!read("header.n_tensors", &n_tensors_) || !read("header.n_kv", &n_kv_)) return false;
    if (n_tensors_ > lim_.max_tensors)
      return fail("header.n_tensors", "absurd tensor count " + std::to_string(n_tensors_) +
                                          " (limit " + std::to_string(lim_.max_tensors) + ")");
    if (n_kv_ > lim_.max_kv)
      return fail("header.n_kv", "absurd metadata count " + std::to_string(n_kv_) + " (limit " +
                                     std::to_string(lim_.max_kv) + ")");
    return true;
  }

  template <class T, class S>
  bool num(const std::string& field, Value* v) {
    T x{};
    if (!read(field, &x)) return false;
    v->scalar = static_cast<S>(x);
    return true;
  }

  bool scalar(const std::string& field, ValueType t, Value* v) {
    v->type = t;
    switch (t) {
      case ValueType::U8:
        return num<uint8_t, uint64_t>(field, v);
      case ValueType::U16:
        return num<uint16_t, uint64_t>(field, v);
      case ValueType::U32:
        return num<uint32_t, uint64_t>(field, v);
      case ValueType::U64:
        return num<uint64_t, uint64_t>(field, v);
      case ValueType::I8:
        return num<int8_t, int64_t>(field, v);
      case ValueType::I16:
        return num<int16_t, int64_t>(field, v);
      case ValueType::I32:
        return num<int32_t, int64_t>(field, v);
      case ValueType::I64:
        return num<int64_t, int64_t>(field, v);
      case ValueType::F32:
        return num<float, double>(field, v);
      case ValueType::F64:
        return num<double, double>(field, v);
      case ValueType::BOOL: {
        uint8_t x = 0;
        if (!read(field, &x)) return false;
        if (x > 1)
          return fail(field, "invalid bool value " + std::to_string(x) + " (must be 0 or 1)");
        v->scalar = x != 0;
        return true;
      }
      case ValueType::STRING: {
        std::string_view s;
        if (!string(field, &s)) return false;
        v->scalar = s;
        return true;
      }
      case ValueType::ARRAY:
        break;
    }
    return fail(field, "internal: not a scalar type");
  }

  // n elements of T (the caller checked they fit in the remaining bytes).
  template <class T, class S>
  void nums(std::vector<S>* out, uint64_t n) {
    out->reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      T x{};
      c_.read(&x);
      out->push_back(static_cast<S>(x));
    }
  }

  bool array(const std::string& field, Value* v) {
    v->type = ValueType::ARRAY;
    uint32_t et = 0;
    uint64_t n = 0;
    if (!read(field + " element type", &et)) return false;
    if (!is_known_type(et)) return fail(field, "unknown array element type " + std::to_string(et));
    if (et == static_cast<uint32_t>(ValueType::ARRAY))
      return fail(field, "nested arrays are not supported");
    v->elem_type = static_cast<ValueType>(et);
    if (!read(field + " array length", &n)) return false;
    if (n > lim_.max_array)
      return fail(field, "absurd array length " + std::to_string(n) + " (limit " +
                             std::to_string(lim_.max_array) + ")");
    // Each element takes at least `min` bytes, so the file size bounds what we reserve.
    const size_t min = v->elem_type == ValueType::STRING ? 8 : scalar_size(v->elem_type);
    if (n > c_.remaining() / min)
      return fail(field, "array of " + std::to_string(n) + " " +
                             std::string(value_type_name(v->elem_type)) +
                             " runs past the end of the file (" + std::to_string(c_.remaining()) +
                             " bytes left)");
    switch (v->elem_type) {
      case ValueType::U8:
        nums<uint8_t>(&v->nums, n);
        break;
      case ValueType::U16:
        nums<uint16_t>(&v->nums, n);
        break;
      case ValueType::U32:
        nums<uint32_t>(&v->nums, n);
        break;
      case ValueType::U64:
        nums<uint64_t>(&v->nums, n);
        break;
      case ValueType::I8:
        nums<int8_t>(&v->ints, n);
        break;
      case ValueType::I16:
        nums<int16_t>(&v->ints, n);
        break;
      case ValueType::I32:
        nums<int32_t>(&v->ints, n);
        break;
      case ValueType::I64:
        nums<int64_t>(&v->ints, n);
        break;
      case ValueType::F32:
        nums<float>(&v->reals, n);
        break;
      case ValueType::F64:
        nums<double>(&v->reals, n);
        break;
      case ValueType::BOOL:
        nums<uint8_t>(&v->nums, n);
        for (uint64_t i = 0; i < n; ++i)
          if (v->nums[i] > 1)
            return fail(field + "[" + std::to_string(i) + "]",
                        "invalid bool value " + std::to_string(v->nums[i]) + " (must be 0 or 1)");
        break;
      case ValueType::STRING:
        v->strings.resize(n);
        for (uint64_t i = 0; i < n; ++i)
          if (!string_at([&] { return field + "[" + std::to_string(i) + "]"; }, &v->strings[i]))
            return false;
        break;
      case ValueType::ARRAY:
        break;
    }
    return true;
  }

  bool metadata() {
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const std::string idx = "metadata[" + std::to_string(i) + "]";
      std::string_view key;
      if (!string(idx + ".key", &key)) return false;
      if (key.empty()) return fail(idx + ".key", "empty key");
      const std::string field(key);
      if (f_.kv_index_.count(key)) return fail(quoted(key), "duplicate metadata key");
      uint32_t t = 0;
      if (!read(field + " type", &t)) return false;
      if (!is_known_type(t)) return fail(field, "unknown metadata value type " + std::to_string(t));
      Value v;
      const auto vt = static_cast<ValueType>(t);
      if (!(vt == ValueType::ARRAY ? array(field, &v) : scalar(field, vt, &v))) return false;
      f_.kv_index_.emplace(key, f_.kv_.size());
      f_.kv_.emplace_back(key, std::move(v));
    }
    return true;
  }

  bool alignment() {
    const Value* v = f_.find("general.alignment");
    if (!v) return true;
    uint64_t a = 0;
    if (v->type == ValueType::ARRAY || std::holds_alternative<double>(v->scalar) ||
        std::holds_alternative<bool>(v->scalar) ||
        std::holds_alternative<std::string_view>(v->scalar))
      return fail("general.alignment",
                  "must be an integer, found " + std::string(value_type_name(v->type)));
    if (auto* u = std::get_if<uint64_t>(&v->scalar))
      a = *u;
    else if (int64_t s = std::get<int64_t>(v->scalar); s > 0)
      a = static_cast<uint64_t>(s);
    if (a == 0 || (a & (a - 1)) != 0)
      return fail("general.alignment",
                  "alignment " + std::to_string(a) + " is not a non-zero power of two");
    if (a > lim_.max_alignment)
      return fail("general.alignment", "alignment " + std::to_string(a) + " exceeds the limit of " +
                                           std::to_string(lim_.max_alignment));
    f_.alignment_ = a;
    return true;
  }

  bool tensor_infos() {
    // Every tensor info takes at least 8 (name len) + 4 + 8 (one dim) + 4 + 8 bytes.
    if (n_tensors_ > c_.remaining() / 32)
      return fail("header.n_tensors", std::to_string(n_tensors_) +
                                          " tensor infos cannot fit in the remaining " +
                                          std::to_string(c_.remaining()) + " bytes");
    f_.tensors_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      const std::string idx = "tensor[" + std::to_string(i) + "]";
      TensorInfo t{};
      if (!string(idx + ".name", &t.name)) return false;
      if (t.name.empty()) return fail(idx + ".name", "empty tensor name");
      const std::string field = quoted(t.name);
      if (f_.tensor_index_.count(t.name)) return fail(field, "duplicate tensor name");
      if (!read(field + " n_dims", &t.n_dims)) return false;
      if (t.n_dims == 0 || t.n_dims > 4)
        return fail(field, "n_dims " + std::to_string(t.n_dims) + " (must be 1..4)");
      for (int d = 0; d < 4; ++d) t.ne[d] = 1;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        if (!read(field + " ne[" + std::to_string(d) + "]", &t.ne[d])) return false;
        if (t.ne[d] <= 0)
          return fail(field, "dimension ne[" + std::to_string(d) +
                                 "] = " + std::to_string(t.ne[d]) + " (must be positive)");
      }
      uint32_t type = 0;
      if (!read(field + " type", &type)) return false;
      auto info = dtype_info(type);
      if (!info) return fail(field, "unknown tensor type " + std::to_string(type));
      t.type = info->type;
      if (!read(field + " offset", &t.offset)) return false;
      if (!sizes(field, *info, &t)) return false;
      f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(t);
    }
    return true;
  }

  bool sizes(const std::string& field, const DTypeInfo& info, TensorInfo* t) {
    int64_t n = 1;
    for (int d = 0; d < 4; ++d)
      if (__builtin_mul_overflow(n, t->ne[d], &n))
        return fail(field, "element count overflows (shape " + shape(*t) + ")");
    if (t->ne[0] % info.block_size != 0)
      return fail(field, "row length ne[0] = " + std::to_string(t->ne[0]) +
                             " is not a multiple of the " + std::string(info.name) +
                             " block size " + std::to_string(info.block_size));
    uint64_t bytes = static_cast<uint64_t>(t->ne[0] / info.block_size);
    if (__builtin_mul_overflow(bytes, uint64_t{info.type_size}, &bytes))
      return fail(field, "byte size overflows (shape " + shape(*t) + ")");
    for (int d = 1; d < 4; ++d)
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(t->ne[d]), &bytes))
        return fail(field, "byte size overflows (shape " + shape(*t) + ")");
    t->n_bytes = bytes;
    return true;
  }

  static std::string shape(const TensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
  }

  bool data_section() {
    const uint64_t end = c_.pos(), a = f_.alignment_;
    // a <= 2^30 and end <= file size, so this cannot overflow.
    f_.data_offset_ = (end + a - 1) / a * a;
    const uint64_t size = f_.bytes_.size();
    const uint64_t avail = f_.data_offset_ <= size ? size - f_.data_offset_ : 0;
    std::vector<size_t> order(f_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) {
      const TensorInfo& t = f_.tensors_[i];
      const std::string field = quoted(t.name);
      if (t.offset % a != 0)
        return fail(field, "data offset " + std::to_string(t.offset) +
                               " is not a multiple of the alignment " + std::to_string(a));
      if (t.offset > avail || t.n_bytes > avail - t.offset)
        return fail(field, "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                               ") is out of bounds: the data section has " + std::to_string(avail) +
                               " bytes (file truncated?)");
      order[i] = i;
    }
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return f_.tensors_[x].offset < f_.tensors_[y].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const TensorInfo& p = f_.tensors_[order[k - 1]];
      const TensorInfo& t = f_.tensors_[order[k]];
      if (p.offset + p.n_bytes > t.offset)
        return fail(quoted(t.name), "data overlaps tensor " + quoted(p.name) + " (offsets " +
                                        std::to_string(p.offset) + "+" + std::to_string(p.n_bytes) +
                                        " and " + std::to_string(t.offset) + ")");
    }
    for (TensorInfo& t : f_.tensors_) t.data = f_.bytes_.data() + f_.data_offset_ + t.offset;
    return true;
  }
};

std::unique_ptr<File> File::from_memory(std::span<const uint8_t> bytes, std::string name,
                                        GgufError* err, const Limits& limits) {
  std::unique_ptr<File> f(new File());
  f->path_ = std::move(name);
  f->bytes_ = bytes;
  if (!Parser(*f, limits, err).run()) return nullptr;
  return f;
}

std::unique_ptr<File> File::open(const std::string& path, GgufError* err, const Limits& limits) {
  auto fail = [&](const std::string& reason) -> std::unique_ptr<File> {
    if (err) err->message = path + ": file: " + reason;
    return nullptr;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return fail(std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  std::unique_ptr<File> f(new File());
  f->path_ = path;
  if (st.st_size > 0) {
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return fail(std::string("mmap failed: ") + std::strerror(e));
    }
    f->map_ = m;
    f->map_len_ = static_cast<size_t>(st.st_size);
    f->bytes_ = {static_cast<const uint8_t*>(m), f->map_len_};
  }
  ::close(fd);  // the mapping stays valid
  if (!Parser(*f, limits, err).run()) return nullptr;
  return f;
}

File::~File() {
  if (map_) munmap(map_, map_len_);
}

}  // namespace cke::gguf
