// Writer: its images match an independently built RawImage byte for byte, and reader∘writer
// round-trips every value type, arrays, alignments and many tensors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "runtime/gguf/gguf.h"
#include "tests/common/shared.h"
#include "tests/gguf/raw_image.h"

namespace cke::gguf {
namespace {

using namespace cke::test;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 13 + seed);
  return v;
}

std::unique_ptr<File> reopen(const std::vector<uint8_t>& bytes) {
  GgufError err;
  auto f = File::from_memory(bytes, "w.gguf", &err);
  EXPECT_TRUE(f) << err.message;
  return f;
}

TEST(GgufWriter, SameBytesAsRawImage) {
  Writer w;
  w.add_str("general.architecture", "llama");
  w.add_u32("test.u32", 7);
  w.add_f32_array("test.scores", {1.5f, -2.0f});
  w.add_str_array("test.tokens", {"a", "bc"});
  const auto a = pattern(32, 1), b = pattern(36, 2), c = pattern(16, 3);
  w.add_tensor("a.weight", DType::F32, {4, 2}, a);
  w.add_tensor("b.weight", DType::Q4_0, {32, 2}, b);
  w.add_tensor("c.norm", DType::F16, {8}, c);
  const auto got = w.to_bytes();

  RawImage r;
  r.kv.push_back(raw_kv_str("general.architecture", "llama"));
  r.kv.push_back(raw_kv<uint32_t>("test.u32", kU32, 7));
  r.kv.push_back(raw_kv_array<float>("test.scores", kF32, {1.5f, -2.0f}));
  r.kv.push_back(raw_kv_str_array("test.tokens", {"a", "bc"}));
  r.tensors.push_back({"a.weight", {4, 2}, 0, 0, {}});
  r.tensors.push_back({"b.weight", {32, 2}, 2, 32, {}});
  r.tensors.push_back({"c.norm", {8}, 1, 96, {}});
  auto want = r.build();
  const size_t data = want.size();
  // Data section: tensors at 0, 32, 96; zero padding between 68 and 96 and after the last
  // tensor up to the alignment (112 -> 128), as ggml and gguf-py write it.
  want.resize(data + 128, 0);
  std::copy(a.begin(), a.end(), want.begin() + data);
  std::copy(b.begin(), b.end(), want.begin() + data + 32);
  std::copy(c.begin(), c.end(), want.begin() + data + 96);
  EXPECT_EQ(got, want);
}

TEST(GgufWriter, EveryScalarType) {
  Writer w;
  w.add_u8("u8", 250);
  w.add_i8("i8", -100);
  w.add_u16("u16", 65000);
  w.add_i16("i16", -32000);
  w.add_u32("u32", 4000000000u);
  w.add_i32("i32", -2000000000);
  w.add_u64("u64", ~0ull);
  w.add_i64("i64", std::numeric_limits<int64_t>::min());
  w.add_f32("f32", 0.1f);
  w.add_f64("f64", 0.1);
  w.add_bool("t", true);
  w.add_bool("f", false);
  w.add_str("s", "h\xc3\xa9llo");
  w.add_str("empty", "");
  const auto bytes = w.to_bytes();
  auto f = reopen(bytes);
  ASSERT_TRUE(f);
  const std::pair<const char*, ValueType> types[] = {
      {"u8", ValueType::U8},   {"i8", ValueType::I8},   {"u16", ValueType::U16},
      {"i16", ValueType::I16}, {"u32", ValueType::U32}, {"i32", ValueType::I32},
      {"u64", ValueType::U64}, {"i64", ValueType::I64}, {"f32", ValueType::F32},
      {"f64", ValueType::F64}, {"t", ValueType::BOOL},  {"s", ValueType::STRING},
  };
  for (auto [k, t] : types) {
    ASSERT_TRUE(f->find(k)) << k;
    EXPECT_EQ(f->find(k)->type, t) << k;
  }
  GgufError e;
  EXPECT_EQ(f->u32("u8", &e), 250u);
  EXPECT_EQ(f->i64("i8", &e), -100);
  EXPECT_EQ(f->u32("u16", &e), 65000u);
  EXPECT_EQ(f->i64("i16", &e), -32000);
  EXPECT_EQ(f->u32("u32", &e), 4000000000u);
  EXPECT_EQ(f->i64("i32", &e), -2000000000);
  EXPECT_EQ(f->u64("u64", &e), ~0ull);
  EXPECT_EQ(f->i64("i64", &e), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->real("f32", &e), static_cast<double>(0.1f));
  EXPECT_EQ(f->real("f64", &e), 0.1);
  EXPECT_EQ(f->boolean("t", &e), true);
  EXPECT_EQ(f->boolean("f", &e), false);
  EXPECT_EQ(f->str("s", &e), "h\xc3\xa9llo");
  EXPECT_EQ(f->str("empty", &e), "");
  // File order is insertion order.
  EXPECT_EQ(f->metadata().front().first, "u8");
  EXPECT_EQ(f->metadata().back().first, "empty");
}

// Arrays of every element type, built as Values and written with add_value.
TEST(GgufWriter, ArraysOfEveryType) {
  Writer w;
  auto arr = [](ValueType et) {
    Value v;
    v.type = ValueType::ARRAY;
    v.elem_type = et;
    return v;
  };
  std::vector<std::pair<std::string, Value>> in;
  {
    Value v = arr(ValueType::U8);
    v.nums = {0, 1, 255};
    in.emplace_back("a.u8", v);
    v = arr(ValueType::U16), v.nums = {65535, 2};
    in.emplace_back("a.u16", v);
    v = arr(ValueType::U32), v.nums = {4294967295u};
    in.emplace_back("a.u32", v);
    v = arr(ValueType::U64), v.nums = {~0ull, 0};
    in.emplace_back("a.u64", v);
    v = arr(ValueType::BOOL), v.nums = {1, 0, 1};
    in.emplace_back("a.bool", v);
    v = arr(ValueType::I8), v.ints = {-128, 127};
    in.emplace_back("a.i8", v);
    v = arr(ValueType::I16), v.ints = {-32768, 5};
    in.emplace_back("a.i16", v);
    v = arr(ValueType::I32), v.ints = {-1};
    in.emplace_back("a.i32", v);
    v = arr(ValueType::I64), v.ints = {std::numeric_limits<int64_t>::min(), 3};
    in.emplace_back("a.i64", v);
    v = arr(ValueType::F32), v.reals = {0.5, -INFINITY};
    in.emplace_back("a.f32", v);
    v = arr(ValueType::F64), v.reals = {1e-300, 3.25};
    in.emplace_back("a.f64", v);
    v = arr(ValueType::STRING), v.strings = {"one", "", "three"};
    in.emplace_back("a.str", v);
    v = arr(ValueType::F32);  // empty array
    in.emplace_back("a.empty", v);
  }
  for (auto& [k, v] : in) w.add_value(k, v);
  w.add_i32_array("a.i32b", {7, -7});
  const auto bytes = w.to_bytes();
  auto f = reopen(bytes);
  ASSERT_TRUE(f);
  for (auto& [k, v] : in) {
    SCOPED_TRACE(k);
    const Value* got = f->find(k);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->type, ValueType::ARRAY);
    EXPECT_EQ(got->elem_type, v.elem_type);
    EXPECT_EQ(got->nums, v.nums);
    EXPECT_EQ(got->ints, v.ints);
    EXPECT_EQ(got->reals, v.reals);
    EXPECT_EQ(got->strings, v.strings);
  }
  EXPECT_EQ(f->array("a.i32b", nullptr, ValueType::I32)->ints, (std::vector<int64_t>{7, -7}));
  // Scalars through add_value too.
  Writer w2;
  for (const auto& [k, v] : f->metadata()) w2.add_value(std::string(k), v);
  EXPECT_EQ(w2.to_bytes(), bytes);
}

TEST(GgufWriter, Alignments) {
  for (uint32_t a : {1u, 8u, 32u, 64u, 4096u}) {
    SCOPED_TRACE(a);
    Writer w;
    w.set_alignment(a);
    w.add_str("general.architecture", "x");
    std::vector<std::vector<uint8_t>> data;
    for (int i = 0; i < 5; ++i) {
      data.push_back(pattern(4 * (i + 1) * 3, static_cast<uint8_t>(i)));
      w.add_tensor(std::string("t").append(std::to_string(i)), DType::F32, {(i + 1) * 3},
                   data.back());
    }
    const auto bytes = w.to_bytes();
    auto f = reopen(bytes);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->alignment(), a);
    EXPECT_EQ(f->has("general.alignment"), a != 32);
    EXPECT_EQ(f->data_offset() % a, 0u);
    uint64_t end = 0;
    for (int i = 0; i < 5; ++i) {
      const TensorInfo& t = f->tensors()[i];
      EXPECT_EQ(t.offset % a, 0u);
      // Tightly packed: each tensor starts at the first aligned offset after the previous.
      EXPECT_EQ(t.offset, (end + a - 1) / a * a);
      // Padding bytes are zeros.
      for (uint64_t p = end; p < t.offset; ++p) EXPECT_EQ(bytes[f->data_offset() + p], 0);
      end = t.offset + t.n_bytes;
      EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), t.data));
    }
    // The data section ends padded to the alignment.
    EXPECT_EQ(f->file_size(), f->data_offset() + (end + a - 1) / a * a);
    for (uint64_t p = f->data_offset() + end; p < f->file_size(); ++p) EXPECT_EQ(bytes[p], 0);
  }
}

TEST(GgufWriter, ManyTensorsOfManyTypes) {
  std::mt19937 rng(5);
  const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                         DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::I32};
  Writer w;
  struct Want {
    DType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  std::vector<Want> want;
  for (int i = 0; i < 300; ++i) {
    DType t = types[rng() % std::size(types)];
    const DTypeInfo& info = dtype_info(t);
    const int nd = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> ne;
    size_t bytes = info.type_size * (1 + rng() % 3);
    ne.push_back(info.block_size * static_cast<int64_t>(bytes / info.type_size));
    for (int d = 1; d < nd; ++d) {
      ne.push_back(1 + rng() % 3);
      bytes *= ne.back();
    }
    want.push_back({t, ne, pattern(bytes, static_cast<uint8_t>(i))});
    w.add_tensor("blk." + std::to_string(i) + ".w", t, ne, want.back().data);
  }
  EXPECT_EQ(w.n_tensors(), 300u);
  const auto bytes = w.to_bytes();
  auto f = reopen(bytes);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->tensors().size(), 300u);
  for (int i = 0; i < 300; ++i) {
    const TensorInfo* t = f->tensor("blk." + std::to_string(i) + ".w");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->type, want[i].type);
    EXPECT_EQ(t->n_dims, want[i].ne.size());
    for (size_t d = 0; d < 4; ++d) EXPECT_EQ(t->ne[d], d < want[i].ne.size() ? want[i].ne[d] : 1);
    ASSERT_EQ(t->n_bytes, want[i].data.size());
    EXPECT_EQ(std::memcmp(t->data, want[i].data.data(), t->n_bytes), 0);
  }
}

TEST(GgufWriter, ReplacingAKeyKeepsItsPlace) {
  Writer w;
  w.add_u32("a", 1);
  w.add_str("b", "x");
  w.add_u32("a", 2);
  w.add_str("a", "now a string");
  auto bytes = w.to_bytes();
  auto f = reopen(bytes);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_EQ(f->str("a", nullptr), "now a string");
}

TEST(GgufWriter, AlignmentKeyFollowsSetAlignment) {
  // A copied general.alignment is rewritten to the alignment actually used.
  Writer w;
  w.add_u32("general.alignment", 64);
  w.set_alignment(16);
  w.add_tensor("t", DType::F32, {3}, pattern(12, 0));
  auto bytes = w.to_bytes();
  auto f = reopen(bytes);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->alignment(), 16u);
  EXPECT_EQ(f->u32("general.alignment", nullptr), 16u);
}

TEST(GgufWriter, CopiedAlignmentOfAnotherIntegerTypeBecomesU32) {
  // Found by the fuzzer: general.alignment may be any integer type on input; the writer
  // stores it as u32 (ggml's type) with the same value.
  RawImage r;
  r.alignment = 8;
  r.kv.push_back(raw_kv<uint8_t>("general.alignment", kU8, 8));
  r.tensors.push_back({"t", {3}, 0, 0, {}});
  r.data_size = 16;
  const auto img = r.build();
  auto f = reopen(img);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->alignment(), 8u);
  Writer w;
  w.set_alignment(static_cast<uint32_t>(f->alignment()));
  for (const auto& [k, v] : f->metadata()) w.add_value(std::string(k), v);
  const TensorInfo& t = f->tensors()[0];
  w.add_tensor("t", t.type, {3}, {t.data, t.n_bytes});
  const auto out = w.to_bytes();
  auto g = reopen(out);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->alignment(), 8u);
  EXPECT_EQ(g->find("general.alignment")->type, ValueType::U32);
  EXPECT_EQ(std::memcmp(g->tensors()[0].data, t.data, 12), 0);
}

TEST(GgufWriter, InvalidInputIsReported) {
  auto expect_fail = [](const Writer& w, const std::string& what) {
    GgufError err;
    EXPECT_TRUE(w.to_bytes(&err).empty());
    EXPECT_NE(err.message.find(what), std::string::npos) << err.message;
  };
  {
    Writer w;
    w.set_alignment(24);
    expect_fail(w, "power of two");
  }
  {
    Writer w;
    w.add_tensor("t", DType::F32, {3}, pattern(12, 0));
    w.add_tensor("t", DType::F32, {3}, pattern(12, 0));
    expect_fail(w, "duplicate tensor name");
  }
  {
    Writer w;
    w.add_tensor("t", DType::F32, {3}, pattern(11, 0));
    expect_fail(w, "data has 11 bytes, expected 12");
  }
  {
    Writer w;
    w.add_tensor("t", DType::Q8_0, {48}, pattern(51, 0));
    expect_fail(w, "block size");
  }
  {
    Writer w;
    w.add_tensor("t", DType::F32, {1, 1, 1, 1, 1}, pattern(4, 0));
    expect_fail(w, "n_dims");
  }
  {
    Writer w;
    w.add_tensor("t", DType::F32, {0}, {});
    expect_fail(w, "positive");
  }
  {
    Writer w;
    w.add_u32("", 1);
    expect_fail(w, "empty key");
  }
  {
    Writer w;
    w.add_tensor_fill("t", DType::F32, {2}, [](std::span<uint8_t>, GgufError* e) {
      e->message = "source went away";
      return false;
    });
    expect_fail(w, "source went away");
  }
}

TEST(GgufWriter, FillAndWriteToDisk) {
  Writer w;
  w.add_str("general.architecture", "llama");
  w.add_tensor_fill("t", DType::F32, {5, 3}, [](std::span<uint8_t> dst, GgufError*) {
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<uint8_t>(i);
    return true;
  });
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cke_gguf_writer_" + std::to_string(::getpid()) + ".gguf"))
                               .string();
  GgufError err;
  ASSERT_TRUE(w.write(path, &err)) << err.message;
  {
    auto f = File::open(path, &err);
    ASSERT_TRUE(f) << err.message;
    const TensorInfo* t = f->tensor("t");
    ASSERT_TRUE(t);
    ASSERT_EQ(t->n_bytes, 60u);
    for (size_t i = 0; i < 60; ++i) EXPECT_EQ(t->data[i], i);
    EXPECT_EQ(std::vector<uint8_t>(f->bytes().begin(), f->bytes().end()), w.to_bytes());
  }
  std::filesystem::remove(path);
  EXPECT_FALSE(w.write("/nonexistent-dir/x.gguf", &err));
  EXPECT_NE(err.message.find("/nonexistent-dir/x.gguf"), std::string::npos);
}

// Copying every key and tensor of files gguf-py wrote reproduces them byte for byte: the
// writer's layout is the reference writer's.
TEST(GgufWriter, CopyReproducesRealFiles) {
  for (const char* rel : {"models/stories260K.gguf", "models/synthetic/synth-llama-F32.gguf",
                          "models/synthetic/stories260K-Q4_0.gguf"}) {
    CKE_REQUIRE_SHARED(path, rel);
    SCOPED_TRACE(rel);
    GgufError err;
    auto src = File::open(path, &err);
    ASSERT_TRUE(src) << err.message;
    Writer w;
    w.set_alignment(static_cast<uint32_t>(src->alignment()));
    for (const auto& [k, v] : src->metadata()) w.add_value(std::string(k), v);
    for (const auto& t : src->tensors())
      w.add_tensor(std::string(t.name), t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                   {t.data, t.n_bytes});
    const auto out = w.to_bytes(&err);
    ASSERT_FALSE(out.empty()) << err.message;
    auto f = reopen(out);
    ASSERT_TRUE(f);
    ASSERT_EQ(f->metadata().size(), src->metadata().size());
    ASSERT_EQ(f->tensors().size(), src->tensors().size());
    EXPECT_TRUE(std::equal(out.begin(), out.end(), src->bytes().begin(), src->bytes().end()))
        << "sizes " << out.size() << " vs " << src->file_size();
  }
}

}  // namespace
}  // namespace cke::gguf
