// Malformed GGUF images: each test starts from a valid image built by RawImage and breaks
// one field; the reader must refuse it with "<name>: <field>: <reason>".
#include <gtest/gtest.h>

#include "runtime/gguf/gguf.h"
#include "tests/gguf/raw_image.h"

namespace cke::gguf {
namespace {

using namespace cke::test;

constexpr const char* kName = "img.gguf";

// Three tensors: f32 [4,2] (32 B) at 0, q4_0 [32,2] (36 B) at 32, f16 [8] (16 B) at 96.
RawImage valid() {
  RawImage r;
  r.kv.push_back(raw_kv_str("general.architecture", "llama"));
  r.kv.push_back(raw_kv<uint32_t>("test.u32", kU32, 7));
  r.kv.push_back(raw_kv_array<float>("test.scores", kF32, {1.5f, -2.0f}));
  r.kv.push_back(raw_kv_str_array("test.tokens", {"a", "bc"}));
  r.tensors.push_back({"a.weight", {4, 2}, 0, 0, {}});
  r.tensors.push_back({"b.weight", {32, 2}, 2, 32, {}});
  r.tensors.push_back({"c.norm", {8}, 1, 96, {}});
  r.data_size = 112;
  return r;
}

struct Opened {
  std::vector<uint8_t> bytes;
  std::unique_ptr<File> file;
  std::string error;
};

Opened open_image(const std::vector<uint8_t>& bytes, const Limits& lim = {}) {
  Opened o;
  o.bytes = bytes;
  GgufError err;
  o.file = File::from_memory(o.bytes, kName, &err, lim);
  o.error = err.message;
  return o;
}
Opened open_raw(const RawImage& r, const Limits& lim = {}) {
  return open_image(r.build(), lim);
}

// The open must fail with a message "img.gguf: <field>: ...<reason>...".
void expect_error(const Opened& o, const std::string& field, const std::string& reason) {
  ASSERT_FALSE(o.file) << "accepted an image that should fail with: " << reason;
  const std::string prefix = std::string(kName) + ": " + field + ": ";
  EXPECT_EQ(o.error.rfind(prefix, 0), 0u)
      << "message: " << o.error << "\nwanted prefix: " << prefix;
  EXPECT_NE(o.error.find(reason), std::string::npos)
      << "message: " << o.error << "\nwanted reason: " << reason;
}

TEST(GgufMalformed, BaseImageIsValid) {
  auto o = open_raw(valid());
  ASSERT_TRUE(o.file) << o.error;
  const File& f = *o.file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 4u);
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[1].n_bytes, 36u);
  EXPECT_EQ(f.tensors()[2].n_bytes, 16u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(f.data_offset() + 112, f.file_size());
  // The data pointer is where RawImage put the pattern: byte i of the section = i*7+1.
  EXPECT_EQ(f.tensors()[2].data[0], static_cast<uint8_t>(96 * 7 + 1));
}

TEST(GgufMalformed, BadMagic) {
  auto r = valid();
  r.magic = 0x46554746;
  expect_error(open_raw(r), "header.magic", "bad magic");
}

TEST(GgufMalformed, Version1Unsupported) {
  auto r = valid();
  r.version = 1;
  expect_error(open_raw(r), "header.version", "unsupported GGUF version 1");
}

TEST(GgufMalformed, UnknownVersions) {
  for (uint32_t v : {0u, 4u, 1000u}) {
    auto r = valid();
    r.version = v;
    expect_error(open_raw(r), "header.version", "unsupported GGUF version " + std::to_string(v));
  }
}

TEST(GgufMalformed, Version2Accepted) {
  auto r = valid();
  r.version = 2;
  auto o = open_raw(r);
  ASSERT_TRUE(o.file) << o.error;
  EXPECT_EQ(o.file->version(), 2u);
}

TEST(GgufMalformed, BigEndianRejected) {
  auto r = valid();
  r.version = 0x03000000;  // 3 stored big-endian
  expect_error(open_raw(r), "header.version", "big-endian");
}

TEST(GgufMalformed, TruncatedHeaderField) {
  auto bytes = valid().build();
  bytes.resize(20);  // magic, version, n_tensors, half of n_kv
  expect_error(open_image(bytes), "header.n_kv", "truncated");
  bytes.resize(3);
  expect_error(open_image(bytes), "header.magic", "truncated");
  expect_error(open_image({}), "header.magic", "truncated");
}

TEST(GgufMalformed, TruncatedTensorInfo) {
  RawImage r = valid();
  r.alignment = 1;  // no padding: the image ends with the last tensor's u64 offset
  r.data_size = 0;
  auto bytes = r.build();
  bytes.resize(bytes.size() - 3);
  expect_error(open_image(bytes), "'c.norm' offset", "truncated");
}

TEST(GgufMalformed, TruncatedData) {
  auto bytes = valid().build();
  bytes.pop_back();
  expect_error(open_image(bytes), "'c.norm'", "out of bounds");
}

TEST(GgufMalformed, EveryPrefixFailsCleanly) {
  auto bytes = valid().build();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    auto o = open_image(cut);
    ASSERT_FALSE(o.file) << "prefix " << n << " accepted";
    EXPECT_EQ(o.error.rfind(std::string(kName) + ": ", 0), 0u) << o.error;
  }
}

TEST(GgufMalformed, KeyLengthPastEnd) {
  auto bytes = valid().build();
  // First key's u64 length sits right after the 24-byte header.
  uint64_t huge = 1000000;
  std::memcpy(bytes.data() + 24, &huge, 8);
  expect_error(open_image(bytes), "metadata[0].key", "runs past the end");
}

TEST(GgufMalformed, StringOverLimit) {
  auto r = valid();
  r.kv.push_back(raw_kv_str("test.long", std::string(100, 'x')));
  Limits lim;
  lim.max_string = 64;
  expect_error(open_raw(r, lim), "test.long", "exceeds the limit of 64");
}

TEST(GgufMalformed, StringValuePastEnd) {
  RawImage r;
  RawBytes p;
  p.put<uint64_t>(1u << 20);  // under the limit, far past the end
  r.kv.push_back({"test.s", kString, p.b});
  expect_error(open_raw(r), "test.s", "runs past the end");
}

TEST(GgufMalformed, ArrayLengthPastEnd) {
  auto r = valid();
  RawBytes p;
  p.put<uint32_t>(kU32).put<uint64_t>(1000000);  // 4 MB of u32 that are not there
  r.kv.push_back({"test.arr", kArray, p.b});
  expect_error(open_raw(r), "test.arr", "runs past the end");
}

TEST(GgufMalformed, StringArrayLengthPastEnd) {
  auto r = valid();
  RawBytes p;
  p.put<uint32_t>(kString).put<uint64_t>(1ull << 31);
  r.kv.push_back({"test.strs", kArray, p.b});
  expect_error(open_raw(r), "test.strs", "runs past the end");
}

TEST(GgufMalformed, StringInArrayPastEnd) {
  auto r = valid();
  RawBytes p;
  p.put<uint32_t>(kString).put<uint64_t>(2).str("ok").put<uint64_t>(1u << 20);
  p.put<uint64_t>(0);  // padding so the array count check passes
  r.kv.push_back({"test.strs", kArray, p.b});
  expect_error(open_raw(r), "test.strs[1]", "runs past the end");
}

TEST(GgufMalformed, AbsurdCounts) {
  auto r = valid();
  r.n_tensors = (1ull << 20) + 1;
  expect_error(open_raw(r), "header.n_tensors", "absurd tensor count");
  r = valid();
  r.n_kv = ~0ull;
  expect_error(open_raw(r), "header.n_kv", "absurd metadata count");
  r = valid();
  RawBytes p;
  p.put<uint32_t>(kU8).put<uint64_t>(~0ull);
  r.kv.push_back({"test.arr", kArray, p.b});
  expect_error(open_raw(r), "test.arr", "absurd array length");
}

TEST(GgufMalformed, TensorCountCannotFit) {
  auto r = valid();
  r.n_tensors = 100000;  // under the limit, but 100000 infos need > 3 MB
  expect_error(open_raw(r), "header.n_tensors", "cannot fit");
}

TEST(GgufMalformed, KvCountTooLarge) {
  auto r = valid();
  r.n_kv = 5;  // one more than present: the 5th key is read from the tensor infos
  auto o = open_raw(r);
  ASSERT_FALSE(o.file);
  EXPECT_EQ(o.error.rfind(std::string(kName) + ": ", 0), 0u);
}

TEST(GgufMalformed, UnknownValueType) {
  auto r = valid();
  r.kv.push_back({"test.weird", 13, {0, 0, 0, 0}});
  expect_error(open_raw(r), "test.weird", "unknown metadata value type 13");
}

TEST(GgufMalformed, UnknownArrayElementType) {
  auto r = valid();
  RawBytes p;
  p.put<uint32_t>(77).put<uint64_t>(0);
  r.kv.push_back({"test.arr", kArray, p.b});
  expect_error(open_raw(r), "test.arr", "unknown array element type 77");
}

TEST(GgufMalformed, NestedArrayRejected) {
  auto r = valid();
  RawBytes p;
  p.put<uint32_t>(kArray).put<uint64_t>(1).put<uint32_t>(kU8).put<uint64_t>(0);
  r.kv.push_back({"test.nested", kArray, p.b});
  expect_error(open_raw(r), "test.nested", "nested arrays are not supported");
}

TEST(GgufMalformed, InvalidBool) {
  auto r = valid();
  r.kv.push_back(raw_kv<uint8_t>("test.flag", kBool, 2));
  expect_error(open_raw(r), "test.flag", "invalid bool value 2");
  r = valid();
  r.kv.push_back(raw_kv_array<uint8_t>("test.flags", kBool, {1, 0, 5}));
  expect_error(open_raw(r), "test.flags[2]", "invalid bool value 5");
}

TEST(GgufMalformed, UnknownTensorType) {
  for (uint32_t t : {4u, 31u, 40u, 1000u}) {  // 4 and 31 are ids ggml retired
    auto r = valid();
    r.tensors[1].type = t;
    expect_error(open_raw(r), "'b.weight'", "unknown tensor type " + std::to_string(t));
  }
}

TEST(GgufMalformed, BadNDims) {
  auto r = valid();
  r.tensors[0].ne = {};
  expect_error(open_raw(r), "'a.weight'", "n_dims 0");
  r = valid();
  r.tensors[0].ne = {4, 2, 1, 1, 1};
  expect_error(open_raw(r), "'a.weight'", "n_dims 5");
}

TEST(GgufMalformed, NonPositiveDims) {
  auto r = valid();
  r.tensors[0].ne = {4, 0};
  expect_error(open_raw(r), "'a.weight'", "ne[1] = 0 (must be positive)");
  r = valid();
  r.tensors[0].ne = {-4, 2};
  expect_error(open_raw(r), "'a.weight'", "ne[0] = -4 (must be positive)");
}

TEST(GgufMalformed, ElementCountOverflow) {
  auto r = valid();
  r.tensors[0].ne = {1ll << 32, 1ll << 32};
  expect_error(open_raw(r), "'a.weight'", "element count overflows");
}

TEST(GgufMalformed, ByteSizeOverflow) {
  auto r = valid();
  r.tensors[0].ne = {1ll << 62};  // 2^62 elements fit in i64; 2^64 bytes of f32 do not
  expect_error(open_raw(r), "'a.weight'", "byte size overflows");
}

TEST(GgufMalformed, RowNotMultipleOfBlock) {
  auto r = valid();
  r.tensors[1].ne = {48, 2};
  expect_error(open_raw(r), "'b.weight'", "ne[0] = 48 is not a multiple of the q4_0 block size 32");
}

TEST(GgufMalformed, DataOutOfBounds) {
  auto r = valid();
  r.tensors[2].offset = 128;
  expect_error(open_raw(r), "'c.norm'", "out of bounds");
  r = valid();
  r.tensors[2].offset = ~0ull - 31;  // offset + size would wrap around
  expect_error(open_raw(r), "'c.norm'", "out of bounds");
}

TEST(GgufMalformed, MisalignedOffset) {
  auto r = valid();
  r.tensors[2].offset = 100;
  expect_error(open_raw(r), "'c.norm'", "offset 100 is not a multiple of the alignment 32");
}

TEST(GgufMalformed, OverlappingTensors) {
  auto r = valid();
  r.tensors[2].offset = 32;  // same place as b.weight
  auto o = open_raw(r);
  ASSERT_FALSE(o.file);
  EXPECT_NE(o.error.find("overlaps"), std::string::npos) << o.error;
  EXPECT_TRUE(o.error.find("'c.norm'") != std::string::npos &&
              o.error.find("'b.weight'") != std::string::npos)
      << o.error;
  r = valid();
  r.tensors[0].ne = {16};  // 64 bytes from 0 run into b.weight at 32
  r.tensors[1].offset = 32;
  expect_error(open_raw(r), "'b.weight'", "overlaps tensor 'a.weight'");
}

TEST(GgufMalformed, DuplicateTensorName) {
  auto r = valid();
  r.tensors[2].name = "a.weight";
  expect_error(open_raw(r), "'a.weight'", "duplicate tensor name");
}

TEST(GgufMalformed, EmptyTensorName) {
  auto r = valid();
  r.tensors[1].name = "";
  expect_error(open_raw(r), "tensor[1].name", "empty tensor name");
}

TEST(GgufMalformed, DuplicateKey) {
  auto r = valid();
  r.kv.push_back(raw_kv<uint32_t>("test.u32", kU32, 8));
  expect_error(open_raw(r), "'test.u32'", "duplicate metadata key");
}

TEST(GgufMalformed, EmptyKey) {
  auto r = valid();
  r.kv.insert(r.kv.begin() + 1, raw_kv<uint32_t>("", kU32, 8));
  expect_error(open_raw(r), "metadata[1].key", "empty key");
}

TEST(GgufMalformed, BadAlignment) {
  for (uint32_t a : {0u, 48u, 3u}) {
    auto r = valid();
    r.kv.push_back(raw_kv<uint32_t>("general.alignment", kU32, a));
    expect_error(open_raw(r), "general.alignment", "not a non-zero power of two");
  }
  auto r = valid();
  r.kv.push_back(raw_kv_str("general.alignment", "32"));
  expect_error(open_raw(r), "general.alignment", "must be an integer, found string");
  r = valid();
  r.kv.push_back(raw_kv<uint64_t>("general.alignment", kU64, 1ull << 40));
  expect_error(open_raw(r), "general.alignment", "exceeds the limit");
}

TEST(GgufMalformed, OtherAlignmentHonoured) {
  auto r = valid();
  r.kv.push_back(raw_kv<uint32_t>("general.alignment", kU32, 64));
  r.alignment = 64;
  r.tensors[1].offset = 64;
  r.tensors[2].offset = 128;
  r.data_size = 144;
  auto o = open_raw(r);
  ASSERT_TRUE(o.file) << o.error;
  EXPECT_EQ(o.file->alignment(), 64u);
  EXPECT_EQ(o.file->data_offset() % 64, 0u);
  // Offset 32 is fine at alignment 32 but not at 64.
  r.tensors[1].offset = 32;
  expect_error(open_raw(r), "'b.weight'", "not a multiple of the alignment 64");
}

TEST(GgufMalformed, ZeroTensorsNoDataSection) {
  // Vocab-only files end right after the metadata, with no padding.
  RawImage r;
  r.alignment = 1;
  r.kv.push_back(raw_kv_str("general.architecture", "llama"));
  auto o = open_raw(r);
  ASSERT_TRUE(o.file) << o.error;
  EXPECT_TRUE(o.file->tensors().empty());
}

TEST(GgufMalformed, ByteFlipsNeverCrash) {
  // Flip each header byte in turn: the result either opens (and all tensor data lies inside
  // the image) or fails with a named error. ASan/UBSan builds check the "no bad read" part.
  const auto base = valid().build();
  const size_t header = base.size() - 112;
  for (size_t i = 0; i < header; ++i)
    for (uint8_t x : {0xffu, 0x80u, 0x01u}) {
      auto bytes = base;
      bytes[i] ^= x;
      auto o = open_image(bytes);
      if (!o.file) {
        EXPECT_EQ(o.error.rfind(std::string(kName) + ": ", 0), 0u) << o.error;
        continue;
      }
      for (const auto& t : o.file->tensors()) {
        EXPECT_GE(t.data, o.bytes.data());
        EXPECT_LE(t.data + t.n_bytes, o.bytes.data() + o.bytes.size());
      }
    }
}

// Typed accessors.
class GgufAccessors : public ::testing::Test {
 protected:
  void SetUp() override {
    RawImage r;
    r.kv.push_back(raw_kv<uint8_t>("k.u8", kU8, 200));
    r.kv.push_back(raw_kv<int8_t>("k.i8", kI8, -5));
    r.kv.push_back(raw_kv<int32_t>("k.i32", kI32, 70000));
    r.kv.push_back(raw_kv<uint64_t>("k.big", kU64, 1ull << 33));
    r.kv.push_back(raw_kv<uint64_t>("k.huge", kU64, ~0ull));
    r.kv.push_back(raw_kv<float>("k.f32", kF32, 0.25f));
    r.kv.push_back(raw_kv<double>("k.f64", kF64, -1e300));
    r.kv.push_back(raw_kv<uint8_t>("k.bool", kBool, 1));
    r.kv.push_back(raw_kv_str("k.str", "hello"));
    r.kv.push_back(raw_kv_array<int32_t>("k.ints", kI32, {1, -2, 3}));
    r.kv.push_back(raw_kv_str_array("k.strs", {"x", "", "zz"}));
    o_ = open_raw(r);
    ASSERT_TRUE(o_.file) << o_.error;
  }
  const File& f() { return *o_.file; }
  Opened o_;
  GgufError err_;
};

TEST_F(GgufAccessors, Values) {
  EXPECT_EQ(f().u32("k.u8", &err_), 200u);
  EXPECT_EQ(f().i64("k.i8", &err_), -5);
  EXPECT_EQ(f().u32("k.i32", &err_), 70000u);
  EXPECT_EQ(f().u64("k.big", &err_), 1ull << 33);
  EXPECT_EQ(f().i64("k.big", &err_), int64_t{1} << 33);
  EXPECT_EQ(f().u64("k.huge", &err_), ~0ull);
  EXPECT_EQ(f().real("k.f32", &err_), 0.25);
  EXPECT_EQ(f().real("k.f64", &err_), -1e300);
  EXPECT_EQ(f().boolean("k.bool", &err_), true);
  EXPECT_EQ(f().str("k.str", &err_), "hello");
  const auto* s = f().str_array("k.strs", &err_);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, (std::vector<std::string_view>{"x", "", "zz"}));
  const Value* a = f().array("k.ints", &err_, ValueType::I32);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ints, (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(a->array_size(), 3u);
  EXPECT_EQ(f().metadata()[0].first, "k.u8");
  EXPECT_EQ(f().metadata().size(), 11u);
}

TEST_F(GgufAccessors, Errors) {
  auto check = [&](bool failed, const std::string& key, const std::string& reason) {
    EXPECT_TRUE(failed) << key;
    EXPECT_EQ(err_.message.rfind(std::string(kName) + ": " + key + ": ", 0), 0u) << err_.message;
    EXPECT_NE(err_.message.find(reason), std::string::npos) << err_.message;
  };
  check(!f().u32("k.none", &err_), "k.none", "missing");
  check(!f().u32("k.big", &err_), "k.big", "does not fit in u32");
  check(!f().u64("k.i8", &err_), "k.i8", "value -5 does not fit in u64");
  check(!f().i64("k.huge", &err_), "k.huge", "does not fit in i64");
  check(!f().u32("k.str", &err_), "k.str", "expected u32, found string");
  check(!f().u32("k.f32", &err_), "k.f32", "expected u32, found f32");
  check(!f().real("k.u8", &err_), "k.u8", "expected f32 or f64, found u8");
  check(!f().boolean("k.u8", &err_), "k.u8", "expected bool, found u8");
  check(!f().str("k.strs", &err_), "k.strs", "expected string, found array of string");
  check(!f().str_array("k.ints", &err_), "k.ints", "expected array of string, found array of i32");
  check(!f().array("k.ints", &err_, ValueType::F32), "k.ints",
        "expected array of f32, found array of i32");
  check(!f().array("k.str", &err_), "k.str", "expected array, found string");
  EXPECT_FALSE(f().u32("k.none", nullptr));  // a null error pointer is allowed
}

}  // namespace
}  // namespace cke::gguf
