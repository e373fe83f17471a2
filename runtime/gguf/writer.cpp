// GGUF v3 writer. Metadata values are encoded as soon as they are added (type + payload),
// tensors are laid out in the order added, each at the next multiple of the alignment,
// padding bytes are zeros; the same layout gguf-py and ggml write.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>

#include "runtime/gguf/gguf.h"

namespace cke::gguf {

namespace {

constexpr uint64_t kDefaultAlignment = 32;

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
void put_str(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
void put_type(std::vector<uint8_t>& out, ValueType t) {
  put<uint32_t>(out, static_cast<uint32_t>(t));
}

// Encodes one scalar element of type t from the decoded forms a Value holds.
void put_scalar(std::vector<uint8_t>& out, ValueType t, uint64_t u, int64_t i, double d) {
  switch (t) {
    case ValueType::U8:
      put<uint8_t>(out, static_cast<uint8_t>(u));
      break;
    case ValueType::U16:
      put<uint16_t>(out, static_cast<uint16_t>(u));
      break;
    case ValueType::U32:
      put<uint32_t>(out, static_cast<uint32_t>(u));
      break;
    case ValueType::U64:
      put<uint64_t>(out, u);
      break;
    case ValueType::BOOL:
      put<uint8_t>(out, u ? 1 : 0);
      break;
    case ValueType::I8:
      put<int8_t>(out, static_cast<int8_t>(i));
      break;
    case ValueType::I16:
      put<int16_t>(out, static_cast<int16_t>(i));
      break;
    case ValueType::I32:
      put<int32_t>(out, static_cast<int32_t>(i));
      break;
    case ValueType::I64:
      put<int64_t>(out, i);
      break;
    case ValueType::F32:
      put<float>(out, static_cast<float>(d));
      break;
    case ValueType::F64:
      put<double>(out, d);
      break;
    default:
      break;
  }
}

}  // namespace

struct Writer::Impl {
  uint64_t alignment = kDefaultAlignment;
  // key -> encoded "u32 type + value"; file order is insertion order.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kv;
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    uint64_t n_bytes = 0;
    std::vector<uint8_t> data;  // when not filled lazily
    TensorFill fill;
  };
  std::vector<Tensor> tensors;
  std::set<std::string> tensor_names;
  std::string error;  // first invalid input

  void set(std::string key, std::vector<uint8_t> enc) {
    if (key.empty() && error.empty()) error = "metadata key: empty key";
    for (auto& [k, v] : kv)
      if (k == key) {
        v = std::move(enc);
        return;
      }
    kv.emplace_back(std::move(key), std::move(enc));
  }
  bool add_tensor(std::string name, DType type, std::vector<int64_t> ne, Tensor* out);
  bool emit(const std::function<bool(const uint8_t*, size_t)>& sink, const std::string& name,
            GgufError* err) const;
};

Writer::Impl& Writer::impl() {
  if (!impl_) impl_ = std::make_shared<Impl>();
  return *impl_;
}

void Writer::set_alignment(uint32_t a) {
  impl().alignment = a;
  if (a == 0 || (a & (a - 1)) != 0)
    if (impl().error.empty())
      impl().error = "general.alignment: " + std::to_string(a) + " is not a non-zero power of two";
}

#define CKE_GGUF_SCALAR(fn, T, VT, U, I, D)   \
  void Writer::fn(std::string key, T v) {     \
    std::vector<uint8_t> e;                   \
    put_type(e, ValueType::VT);               \
    put_scalar(e, ValueType::VT, U, I, D);    \
    impl().set(std::move(key), std::move(e)); \
  }
CKE_GGUF_SCALAR(add_u8, uint8_t, U8, v, 0, 0)
CKE_GGUF_SCALAR(add_u16, uint16_t, U16, v, 0, 0)
CKE_GGUF_SCALAR(add_u32, uint32_t, U32, v, 0, 0)
CKE_GGUF_SCALAR(add_u64, uint64_t, U64, v, 0, 0)
CKE_GGUF_SCALAR(add_i8, int8_t, I8, 0, v, 0)
CKE_GGUF_SCALAR(add_i16, int16_t, I16, 0, v, 0)
CKE_GGUF_SCALAR(add_i32, int32_t, I32, 0, v, 0)
CKE_GGUF_SCALAR(add_i64, int64_t, I64, 0, v, 0)
CKE_GGUF_SCALAR(add_f32, float, F32, 0, 0, v)
CKE_GGUF_SCALAR(add_f64, double, F64, 0, 0, v)
CKE_GGUF_SCALAR(add_bool, bool, BOOL, v ? 1 : 0, 0, 0)
#undef CKE_GGUF_SCALAR

void Writer::add_str(std::string key, std::string v) {
  std::vector<uint8_t> e;
  put_type(e, ValueType::STRING);
  put_str(e, v);
  impl().set(std::move(key), std::move(e));
}

void Writer::add_str_array(std::string key, std::vector<std::string> v) {
  std::vector<uint8_t> e;
  put_type(e, ValueType::ARRAY);
  put_type(e, ValueType::STRING);
  put<uint64_t>(e, v.size());
  for (const auto& s : v) put_str(e, s);
  impl().set(std::move(key), std::move(e));
}

void Writer::add_f32_array(std::string key, std::vector<float> v) {
  std::vector<uint8_t> e;
  put_type(e, ValueType::ARRAY);
  put_type(e, ValueType::F32);
  put<uint64_t>(e, v.size());
  for (float x : v) put<float>(e, x);
  impl().set(std::move(key), std::move(e));
}

void Writer::add_i32_array(std::string key, std::vector<int32_t> v) {
  std::vector<uint8_t> e;
  put_type(e, ValueType::ARRAY);
  put_type(e, ValueType::I32);
  put<uint64_t>(e, v.size());
  for (int32_t x : v) put<int32_t>(e, x);
  impl().set(std::move(key), std::move(e));
}

void Writer::add_value(std::string key, const Value& v) {
  std::vector<uint8_t> e;
  put_type(e, v.type);
  if (v.type == ValueType::ARRAY) {
    put_type(e, v.elem_type);
    put<uint64_t>(e, v.array_size());
    if (v.elem_type == ValueType::STRING)
      for (auto s : v.strings) put_str(e, s);
    for (uint64_t u : v.nums) put_scalar(e, v.elem_type, u, 0, 0);
    for (int64_t i : v.ints) put_scalar(e, v.elem_type, 0, i, 0);
    for (double d : v.reals) put_scalar(e, v.elem_type, 0, 0, d);
  } else if (auto* s = std::get_if<std::string_view>(&v.scalar)) {
    put_str(e, *s);
  } else {
    uint64_t u = 0;
    int64_t i = 0;
    double d = 0;
    if (auto* p = std::get_if<uint64_t>(&v.scalar)) u = *p;
    if (auto* p = std::get_if<int64_t>(&v.scalar)) i = *p;
    if (auto* p = std::get_if<double>(&v.scalar)) d = *p;
    if (auto* p = std::get_if<bool>(&v.scalar)) u = *p ? 1 : 0;
    put_scalar(e, v.type, u, i, d);
  }
  impl().set(std::move(key), std::move(e));
}

bool Writer::Impl::add_tensor(std::string name, DType type, std::vector<int64_t> ne, Tensor* t) {
  auto bad = [&](const std::string& why) {
    if (error.empty()) error = "'" + name + "': " + why;
    return false;
  };
  if (name.empty()) return bad("empty tensor name");
  if (!tensor_names.insert(name).second) return bad("duplicate tensor name");
  if (ne.empty() || ne.size() > 4) return bad("n_dims must be 1..4");
  const DTypeInfo& info = dtype_info(type);
  uint64_t bytes = 1;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] <= 0) return bad("dimensions must be positive");
    uint64_t x = d == 0 ? static_cast<uint64_t>(ne[0] / info.block_size) * info.type_size
                        : static_cast<uint64_t>(ne[d]);
    if (__builtin_mul_overflow(bytes, x, &bytes)) return bad("byte size overflows");
  }
  if (ne[0] % info.block_size != 0)
    return bad("ne[0] not a multiple of the " + std::string(info.name) + " block size");
  t->name = std::move(name);
  t->type = type;
  t->ne = std::move(ne);
  t->n_bytes = bytes;
  return true;
}

void Writer::add_tensor(std::string name, DType type, std::vector<int64_t> ne,
                        std::span<const uint8_t> data) {
  Impl::Tensor t;
  Impl& m = impl();
  if (!m.add_tensor(name, type, std::move(ne), &t)) return;
  if (data.size() != t.n_bytes) {
    if (m.error.empty())
      m.error = "'" + name + "': data has " + std::to_string(data.size()) + " bytes, expected " +
                std::to_string(t.n_bytes);
    return;
  }
  t.data.assign(data.begin(), data.end());
  m.tensors.push_back(std::move(t));
}

void Writer::add_tensor_fill(std::string name, DType type, std::vector<int64_t> ne,
                             TensorFill fill) {
  Impl::Tensor t;
  if (!impl().add_tensor(std::move(name), type, std::move(ne), &t)) return;
  t.fill = std::move(fill);
  impl().tensors.push_back(std::move(t));
}

size_t Writer::n_tensors() const {
  return impl_ ? impl_->tensors.size() : 0;
}

// Emits the whole file through `sink`, one tensor's data at a time.
bool Writer::Impl::emit(const std::function<bool(const uint8_t*, size_t)>& sink,
                        const std::string& name, GgufError* err) const {
  const Impl* m = this;
  auto fail = [&](const std::string& why) {
    if (err) err->message = name + ": " + why;
    return false;
  };
  if (!m->error.empty()) return fail(m->error);
  const uint64_t a = m->alignment;
  // The alignment key, when present or needed, always states the alignment really used.
  std::vector<std::pair<std::string_view, const std::vector<uint8_t>*>> kv;
  std::vector<uint8_t> align_enc;
  put_type(align_enc, ValueType::U32);
  put<uint32_t>(align_enc, static_cast<uint32_t>(a));
  bool have_align = false;
  for (const auto& [k, v] : m->kv) {
    const bool is_align = k == "general.alignment";
    have_align |= is_align;
    kv.emplace_back(k, is_align ? &align_enc : &v);
  }
  if (!have_align && a != kDefaultAlignment) kv.emplace_back("general.alignment", &align_enc);

  std::vector<uint8_t> h;
  put<uint32_t>(h, 0x46554747);
  put<uint32_t>(h, 3);
  put<uint64_t>(h, m->tensors.size());
  put<uint64_t>(h, kv.size());
  for (const auto& [k, v] : kv) {
    put_str(h, k);
    h.insert(h.end(), v->begin(), v->end());
  }
  uint64_t off = 0;
  std::vector<uint64_t> offsets;
  for (const auto& t : m->tensors) {
    put_str(h, t.name);
    put<uint32_t>(h, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<int64_t>(h, d);
    put<uint32_t>(h, static_cast<uint32_t>(t.type));
    off = (off + a - 1) / a * a;
    offsets.push_back(off);
    put<uint64_t>(h, off);
    off += t.n_bytes;
  }
  h.resize((h.size() + a - 1) / a * a, 0);
  if (!sink(h.data(), h.size())) return fail("write failed");

  std::vector<uint8_t> buf;
  const std::vector<uint8_t> zeros(a, 0);
  uint64_t pos = 0;
  for (size_t i = 0; i < m->tensors.size(); ++i) {
    const auto& t = m->tensors[i];
    if (offsets[i] > pos && !sink(zeros.data(), offsets[i] - pos)) return fail("write failed");
    if (t.fill) {
      buf.assign(t.n_bytes, 0);
      GgufError fe;
      if (!t.fill(std::span<uint8_t>(buf), &fe)) return fail("'" + t.name + "': " + fe.message);
      if (!sink(buf.data(), buf.size())) return fail("write failed");
    } else if (!sink(t.data.data(), t.data.size())) {
      return fail("write failed");
    }
    pos = offsets[i] + t.n_bytes;
  }
  // ggml and gguf-py pad the data section to the alignment after the last tensor too.
  const uint64_t end = (pos + a - 1) / a * a;
  if (end > pos && !sink(zeros.data(), end - pos)) return fail("write failed");
  return true;
}

// Writes to "<path>.tmp.<pid>" and renames it over `path`: a failed write leaves no partial
// file, and `path` may be a file that is mapped right now (e.g. quantize IN == OUT: the
// reader keeps the old inode).
bool Writer::write(const std::string& path, GgufError* err) const {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    if (err) err->message = path + ": file: " + std::strerror(errno);
    return false;
  }
  Impl empty;
  const Impl& m = impl_ ? *impl_ : empty;
  bool ok =
      m.emit([&](const uint8_t* p, size_t n) { return std::fwrite(p, 1, n, f) == n; }, path, err);
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    if (err) err->message = path + ": file: close failed: " + std::strerror(errno);
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    if (err) err->message = path + ": file: rename failed: " + std::strerror(errno);
  }
  if (!ok) std::remove(tmp.c_str());
  return ok;
}

std::vector<uint8_t> Writer::to_bytes(GgufError* err) const {
  std::vector<uint8_t> out;
  auto sink = [&](const uint8_t* p, size_t n) {
    out.insert(out.end(), p, p + n);
    return true;
  };
  Impl empty;
  if (!(impl_ ? *impl_ : empty).emit(sink, "<memory>", err)) return {};
  return out;
}

}  // namespace cke::gguf
