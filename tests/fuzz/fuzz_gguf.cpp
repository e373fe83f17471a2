// libFuzzer target for the GGUF reader: any byte string either fails to open with a named
// error, or opens into a File whose every accessor and every tensor byte can be used
// without reading outside the input (ASan/UBSan watch), and which the writer re-encodes
// into an image that opens with the same content.
//
//   fuzz_gguf CORPUS_DIR SEED_DIR... -max_total_time=300   (see docs/gguf.md)
#include <cstdint>
#include <cstring>

#include "runtime/gguf/gguf.h"

using namespace cke;
using namespace cke::gguf;

namespace {

volatile uint64_t g_sink;

#define CHECK(c) \
  if (!(c)) __builtin_trap()

void touch_value(const File& f, std::string_view key, const Value& v) {
  GgufError e;
  uint64_t acc = 0;
  // Every typed accessor either succeeds or leaves a message.
  if (auto x = f.u32(key, &e))
    acc += *x;
  else
    CHECK(!e.message.empty());
  if (auto x = f.u64(key, &e)) acc += *x;
  if (auto x = f.i64(key, &e)) acc += static_cast<uint64_t>(*x);
  if (auto x = f.real(key, &e)) acc += static_cast<uint64_t>(*x != 0);
  if (auto x = f.boolean(key, &e)) acc += *x;
  if (auto x = f.str(key, &e)) {
    for (char c : *x) acc += static_cast<unsigned char>(c);
  }
  if (auto* a = f.str_array(key, &e)) {
    for (auto s : *a)
      for (char c : s) acc += static_cast<unsigned char>(c);
  }
  if (const Value* a = f.array(key, &e)) {
    CHECK(a == &v);
    CHECK(a->array_size() == a->nums.size() + a->ints.size() + a->reals.size() + a->strings.size());
    for (uint64_t x : a->nums) acc += x;
    for (int64_t x : a->ints) acc += static_cast<uint64_t>(x);
    for (double x : a->reals) acc += static_cast<uint64_t>(x == x);
  }
  CHECK(f.find(key) == &v);
  g_sink = g_sink + acc;
}

void touch(const File& f, std::span<const uint8_t> bytes) {
  for (const auto& [k, v] : f.metadata()) touch_value(f, k, v);
  for (const TensorInfo& t : f.tensors()) {
    CHECK(f.tensor(t.name) == &t);
    CHECK(t.n_dims >= 1 && t.n_dims <= 4);
    const int64_t rows = t.n_elements() / t.ne[0];
    CHECK(row_bytes(t.type, t.ne[0]) * static_cast<uint64_t>(rows) == t.n_bytes);
    CHECK(t.data >= bytes.data() &&
          t.n_bytes <= static_cast<uint64_t>(bytes.data() + bytes.size() - t.data));
    uint64_t acc = 0;
    for (uint64_t i = 0; i < t.n_bytes; ++i) acc += t.data[i];
    g_sink = g_sink + acc;
  }
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Equal type and contents; reals compared bit for bit (NaN payloads included).
bool same_value(const Value& a, const Value& b) {
  if (a.type != b.type || (a.type == ValueType::ARRAY && a.elem_type != b.elem_type)) return false;
  if (a.nums != b.nums || a.ints != b.ints || a.strings != b.strings) return false;
  if (a.reals.size() != b.reals.size()) return false;
  for (size_t i = 0; i < a.reals.size(); ++i)
    if (!same_bits(a.reals[i], b.reals[i])) return false;
  if (a.type == ValueType::ARRAY) return true;
  if (a.scalar.index() != b.scalar.index()) return false;
  if (auto* x = std::get_if<double>(&a.scalar)) return same_bits(*x, std::get<double>(b.scalar));
  return a.scalar == b.scalar;
}

// Reader∘writer: the copy opens and has the same keys and tensor bytes.
void round_trip(const File& f) {
  if (f.alignment() > 4096) return;  // would only pad with zeros; keeps memory small
  Writer w;
  w.set_alignment(static_cast<uint32_t>(f.alignment()));
  for (const auto& [k, v] : f.metadata()) w.add_value(std::string(k), v);
  for (const TensorInfo& t : f.tensors())
    w.add_tensor(std::string(t.name), t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                 {t.data, t.n_bytes});
  GgufError err;
  const std::vector<uint8_t> out = w.to_bytes(&err);
  CHECK(!out.empty());
  auto g = File::from_memory(out, "copy", &err);
  CHECK(g != nullptr);
  CHECK(g->metadata().size() == f.metadata().size());
  CHECK(g->tensors().size() == f.tensors().size());
  CHECK(g->alignment() == f.alignment());
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    CHECK(f.metadata()[i].first == g->metadata()[i].first);
    // The writer always stores general.alignment as u32 (what ggml requires), whatever
    // integer type the input used; its value is checked through alignment() above.
    if (f.metadata()[i].first == "general.alignment") continue;
    CHECK(same_value(f.metadata()[i].second, g->metadata()[i].second));
  }
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const TensorInfo& a = f.tensors()[i];
    const TensorInfo& b = g->tensors()[i];
    CHECK(a.name == b.name && a.type == b.type && a.n_bytes == b.n_bytes);
    CHECK(std::memcmp(a.data, b.data, a.n_bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GgufError err;
  const std::span<const uint8_t> bytes(data, size);
  auto f = File::from_memory(bytes, "fuzz", &err);
  if (!f) {
    CHECK(err.message.rfind("fuzz: ", 0) == 0);  // every failure names the file
    return 0;
  }
  touch(*f, bytes);
  round_trip(*f);
  return 0;
}
