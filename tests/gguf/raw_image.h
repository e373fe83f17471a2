// A byte-level GGUF builder for tests, written independently of cke::gguf::Writer: every
// field is explicit (and may be wrong on purpose), so a test can corrupt one field at a
// time. It also serves as an oracle for the writer (same content -> same bytes).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace cke::test {

struct RawBytes {
  std::vector<uint8_t> b;
  template <class T>
  RawBytes& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  RawBytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
};

struct RawKv {
  std::string key;
  uint32_t type;
  std::vector<uint8_t> payload;  // the value's bytes after the type
};

struct RawTensor {
  std::string name;
  std::vector<int64_t> ne;
  uint32_t type;
  uint64_t offset;
  std::optional<uint32_t> n_dims;  // override of ne.size()
};

// GGUF type ids (spelled out here rather than taken from the code under test).
enum : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

template <class T>
RawKv raw_kv(const std::string& key, uint32_t type, T v) {
  RawBytes p;
  p.put<T>(v);
  return {key, type, p.b};
}
inline RawKv raw_kv_str(const std::string& key, const std::string& s) {
  RawBytes p;
  p.str(s);
  return {key, kString, p.b};
}
template <class T>
RawKv raw_kv_array(const std::string& key, uint32_t elem, const std::vector<T>& v) {
  RawBytes p;
  p.put<uint32_t>(elem).put<uint64_t>(v.size());
  for (const T& x : v) p.put<T>(x);
  return {key, kArray, p.b};
}
inline RawKv raw_kv_str_array(const std::string& key, const std::vector<std::string>& v) {
  RawBytes p;
  p.put<uint32_t>(kString).put<uint64_t>(v.size());
  for (const auto& s : v) p.str(s);
  return {key, kArray, p.b};
}

struct RawImage {
  uint32_t magic = 0x46554747;
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors, n_kv;  // overrides of the real counts
  std::vector<RawKv> kv;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;  // for the padding before the data section
  uint64_t data_size = 0;   // bytes after the padding (filled with a byte pattern)

  std::vector<uint8_t> build() const {
    RawBytes o;
    o.put<uint32_t>(magic).put<uint32_t>(version);
    o.put<uint64_t>(n_tensors.value_or(tensors.size()));
    o.put<uint64_t>(n_kv.value_or(kv.size()));
    for (const auto& k : kv) {
      o.str(k.key).put<uint32_t>(k.type);
      o.b.insert(o.b.end(), k.payload.begin(), k.payload.end());
    }
    for (const auto& t : tensors) {
      o.str(t.name).put<uint32_t>(t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
      for (int64_t d : t.ne) o.put<int64_t>(d);
      o.put<uint32_t>(t.type).put<uint64_t>(t.offset);
    }
    while (o.b.size() % alignment) o.b.push_back(0);
    for (uint64_t i = 0; i < data_size; ++i) o.b.push_back(static_cast<uint8_t>(i * 7 + 1));
    return o.b;
  }
};

}  // namespace cke::test
