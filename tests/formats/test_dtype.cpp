// The dtype table: every entry is consistent, names round-trip, block structs agree with
// it, and the argument checks of dequantize_row / quantize_row reject what they must.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"

namespace {

using cke::DType;

// The types CKE converts, with ggml's block geometry written out by hand from
// ggml-common.h (elements per block, bytes per block).
struct Expected {
  DType t;
  uint32_t block, bytes;
};
const std::vector<Expected> kOurs = {
    {DType::F32, 1, 4},      {DType::F16, 1, 2},      {DType::BF16, 1, 2},
    {DType::Q4_0, 32, 18},   {DType::Q4_1, 32, 20},   {DType::Q5_0, 32, 22},
    {DType::Q5_1, 32, 24},   {DType::Q8_0, 32, 34},   {DType::Q2_K, 256, 84},
    {DType::Q3_K, 256, 110}, {DType::Q4_K, 256, 144}, {DType::Q5_K, 256, 176},
    {DType::Q6_K, 256, 210}, {DType::Q8_K, 256, 292},
};

TEST(DType, TableEntriesAreConsistent) {
  std::set<uint32_t> ids;
  std::set<std::string> names;
  int n = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    auto info = cke::dtype_info(id);
    if (!info) continue;
    ++n;
    EXPECT_EQ(static_cast<uint32_t>(info->type), id);
    EXPECT_TRUE(ids.insert(id).second);
    EXPECT_TRUE(names.insert(std::string(info->name)).second) << info->name;
    EXPECT_GT(info->block_size, 0u);
    EXPECT_GT(info->type_size, 0u);
    // A block holds at least 1 bit per element... and a plain type is one element.
    if (info->block_size == 1) {
      EXPECT_LE(info->type_size, 8u);
    }
    // Name lookups in both spellings.
    EXPECT_EQ(cke::dtype_from_name(info->name), info->type);
    std::string upper(info->name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(cke::dtype_from_name(upper), info->type);
    EXPECT_EQ(cke::dtype_name(info->type), info->name);
    // dtype_info(DType) agrees with the id lookup.
    EXPECT_EQ(cke::dtype_info(info->type).type_size, info->type_size);
  }
  EXPECT_EQ(n, 32);
  // Retired ggml ids are unknown.
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u})
    EXPECT_FALSE(cke::dtype_info(id).has_value()) << id;
  EXPECT_FALSE(cke::dtype_from_name("q4_k_m").has_value());
  EXPECT_FALSE(cke::dtype_from_name("").has_value());
}

TEST(DType, OurFormatsHaveGgmlGeometry) {
  std::set<DType> ours;
  for (const Expected& e : kOurs) {
    const cke::DTypeInfo& i = cke::dtype_info(e.t);
    EXPECT_EQ(i.block_size, e.block) << i.name;
    EXPECT_EQ(i.type_size, e.bytes) << i.name;
    EXPECT_TRUE(i.has_reference) << i.name;
    ours.insert(e.t);
  }
  // has_reference is set on exactly these.
  for (uint32_t id = 0; id < 64; ++id) {
    auto info = cke::dtype_info(id);
    if (info) {
      EXPECT_EQ(info->has_reference, ours.count(info->type) == 1) << info->name;
    }
  }
  EXPECT_EQ(cke::row_bytes(DType::Q4_K, 4096), 16u * 144u);
  EXPECT_EQ(cke::row_bytes(DType::Q8_0, 64), 68u);
  EXPECT_EQ(cke::row_bytes(DType::F16, 7), 14u);
}

TEST(DType, BlockStructsMatchTable) {
  EXPECT_EQ(sizeof(cke::block_q4_0), cke::dtype_info(DType::Q4_0).type_size);
  EXPECT_EQ(sizeof(cke::block_q8_1), cke::dtype_info(DType::Q8_1).type_size);
  EXPECT_EQ(sizeof(cke::block_q6_K), cke::dtype_info(DType::Q6_K).type_size);
  EXPECT_EQ(sizeof(cke::block_q8_K), cke::dtype_info(DType::Q8_K).type_size);
  // Field offsets that kernels rely on (ggml-common.h order).
  EXPECT_EQ(offsetof(cke::block_q5_0, qs), 6u);
  EXPECT_EQ(offsetof(cke::block_q2_K, d), 80u);
  EXPECT_EQ(offsetof(cke::block_q3_K, d), 108u);
  EXPECT_EQ(offsetof(cke::block_q4_K, qs), 16u);
  EXPECT_EQ(offsetof(cke::block_q5_K, qs), 48u);
  EXPECT_EQ(offsetof(cke::block_q6_K, scales), 192u);
  EXPECT_EQ(offsetof(cke::block_q8_K, bsums), 260u);
}

TEST(DType, ConversionsRejectBadArguments) {
  std::vector<float> f(512, 1.0f);
  std::vector<uint8_t> b(4096, 0xAB);
  const std::vector<uint8_t> before = b;
  // Not a multiple of the block size.
  EXPECT_FALSE(cke::quantize_row(DType::Q4_0, f.data(), b.data(), 31));
  EXPECT_FALSE(cke::quantize_row(DType::Q4_K, f.data(), b.data(), 32));
  EXPECT_FALSE(cke::dequantize_row(DType::Q6_K, b.data(), f.data(), 255));
  EXPECT_FALSE(cke::dequantize_row(DType::Q8_0, b.data(), f.data(), -32));
  // Types without a reference conversion.
  EXPECT_FALSE(cke::quantize_row(DType::IQ2_XXS, f.data(), b.data(), 256));
  EXPECT_FALSE(cke::dequantize_row(DType::Q8_1, b.data(), f.data(), 32));
  EXPECT_FALSE(cke::dequantize_row(DType::I32, b.data(), f.data(), 4));
  EXPECT_FALSE(cke::dequantize_row(static_cast<DType>(4), b.data(), f.data(), 32));
  EXPECT_EQ(b, before);  // nothing written
  for (float v : f) ASSERT_EQ(v, 1.0f);
  // Empty rows are fine.
  EXPECT_TRUE(cke::quantize_row(DType::Q4_K, f.data(), b.data(), 0));
  EXPECT_TRUE(cke::dequantize_row(DType::F16, b.data(), f.data(), 0));
}

}  // namespace
