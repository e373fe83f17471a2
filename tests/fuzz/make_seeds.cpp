// Writes a seed corpus for fuzz_gguf with the Writer: small valid images covering every
// value type, arrays, alignments, tensor types and shapes.   gguf_fuzz_seeds OUT_DIR
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/gguf/gguf.h"

using namespace cke;
using namespace cke::gguf;

namespace {

std::vector<uint8_t> bytes_for(DType t, std::vector<int64_t> ne) {
  const DTypeInfo& i = dtype_info(t);
  size_t n = static_cast<size_t>(ne[0] / i.block_size) * i.type_size;
  for (size_t d = 1; d < ne.size(); ++d) n *= static_cast<size_t>(ne[d]);
  std::vector<uint8_t> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = static_cast<uint8_t>(k * 31 + 7);
  return v;
}

void add_tensor(Writer& w, const std::string& name, DType t, std::vector<int64_t> ne) {
  const auto data = bytes_for(t, ne);
  w.add_tensor(name, t, ne, data);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int n = 0;
  auto save = [&](const Writer& w, const char* name) {
    GgufError err;
    if (!w.write(dir + "/" + name + ".gguf", &err)) {
      std::fprintf(stderr, "%s\n", err.message.c_str());
      return false;
    }
    ++n;
    return true;
  };
  bool ok = true;
  {
    Writer w;  // header only
    ok &= save(w, "empty");
  }
  {
    Writer w;
    w.add_u8("u8", 1), w.add_i8("i8", -1), w.add_u16("u16", 2), w.add_i16("i16", -2);
    w.add_u32("u32", 3), w.add_i32("i32", -3), w.add_u64("u64", 4), w.add_i64("i64", -4);
    w.add_f32("f32", 0.5f), w.add_f64("f64", 0.25), w.add_bool("bool", true);
    w.add_str("str", "text"), w.add_str("empty", "");
    ok &= save(w, "scalars");
  }
  {
    Writer w;
    w.add_str_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "b"});
    w.add_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
    w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
    Value v;
    v.type = ValueType::ARRAY;
    v.elem_type = ValueType::BOOL;
    v.nums = {1, 0, 1};
    w.add_value("bools", v);
    v.elem_type = ValueType::U8;
    v.nums = {0, 255};
    w.add_value("bytes", v);
    v.elem_type = ValueType::F64;
    v.nums.clear();
    v.reals = {1.5, -2};
    w.add_value("f64s", v);
    ok &= save(w, "arrays");
  }
  for (uint32_t a : {1u, 8u, 64u}) {
    Writer w;
    w.set_alignment(a);
    w.add_str("general.architecture", "llama");
    add_tensor(w, "a", DType::F32, {3});
    add_tensor(w, "b", DType::F16, {5, 2});
    ok &= save(w, ("align" + std::to_string(a)).c_str());
  }
  {
    Writer w;
    w.add_str("general.architecture", "llama");
    w.add_u32("llama.embedding_length", 64);
    const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::I32};
    int i = 0;
    for (DType t : types) {
      const int64_t bs = dtype_info(t).block_size;
      add_tensor(w, "t" + std::to_string(i++) + "." + std::string(dtype_name(t)), t, {bs, 2});
    }
    ok &= save(w, "types");
  }
  {
    Writer w;
    w.add_str("general.architecture", "llama");
    add_tensor(w, "d1", DType::F32, {4});
    add_tensor(w, "d2", DType::F32, {4, 3});
    add_tensor(w, "d3", DType::F32, {4, 3, 2});
    add_tensor(w, "d4", DType::Q8_0, {32, 1, 2, 2});
    ok &= save(w, "dims");
  }
  std::printf("wrote %d seeds to %s\n", n, dir.c_str());
  return ok ? 0 : 1;
}
