// embed_*__ref for all 13 formats: hand-built blocks (values computed from the format
// definition), rows of the real quantized models against the F32 originals (quantization
// error bound), quantize→embed round trips, and bit-identity with llama.cpp's GET_ROWS.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/formats/blocks.h"
#include "kernels/formats/quant.h"
#include "kernels/ref/ops.h"
#include "tests/kernels_ops/ops_test_util.h"

namespace cke::test {
namespace {

using EmbedFn = void (*)(const int32_t*, const void*, float*, int64_t, int64_t);

EmbedFn embed_fn(DType t) {
  switch (t) {
    case DType::F32:
      return embed_f32__ref;
    case DType::F16:
      return embed_f16__ref;
    case DType::BF16:
      return embed_bf16__ref;
    case DType::Q8_0:
      return embed_q8_0__ref;
    case DType::Q4_0:
      return embed_q4_0__ref;
    case DType::Q4_1:
      return embed_q4_1__ref;
    case DType::Q5_0:
      return embed_q5_0__ref;
    case DType::Q5_1:
      return embed_q5_1__ref;
    case DType::Q2_K:
      return embed_q2_K__ref;
    case DType::Q3_K:
      return embed_q3_K__ref;
    case DType::Q4_K:
      return embed_q4_K__ref;
    case DType::Q5_K:
      return embed_q5_K__ref;
    case DType::Q6_K:
      return embed_q6_K__ref;
    default:
      return nullptr;
  }
}

constexpr uint16_t kH1 = 0x3C00, kHalf = 0x3800, kHm1 = 0xBC00;  // fp16 1, 0.5, −1

// A table of 3 rows of `Block`; row r gets `fill(block, r)`; the kernel must return row
// tokens[t] as `value(r, i)` for every element.
template <class Block, class Fill, class Value>
void check_hand(EmbedFn fn, int64_t per_block, Fill fill, Value value) {
  const int64_t n = per_block;  // one block per row
  Block table[3];
  std::memset(table, 0, sizeof(table));
  for (int r = 0; r < 3; ++r) fill(table[r], r);
  const int32_t tokens[4] = {2, 0, 2, 1};
  std::vector<float> y(size_t(n * 4), NAN);
  fn(tokens, table, y.data(), n, 4);
  for (int t = 0; t < 4; ++t)
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y[size_t(t * n + i)], value(tokens[t], int(i))) << "token " << t << " elem " << i;
}

TEST(RefOps, embed_f32__ref) {
  const float table[3][2] = {{1, 2}, {3, 4}, {-0.0f, 1e-45f}};
  const int32_t tokens[3] = {2, 0, 1};
  float y[6];
  embed_f32__ref(tokens, table, y, 2, 3);
  const float want[6] = {-0.0f, 1e-45f, 1, 2, 3, 4};
  EXPECT_EQ(std::memcmp(y, want, sizeof(y)), 0);
}

TEST(RefOps, embed_f16__ref) {
  const uint16_t table[2][4] = {{0x3C00, 0xC000, 0x0001, 0x7BFF}, {0x8000, 0x3555, 0x7C00, 0x0400}};
  const int32_t tokens[2] = {1, 0};
  float y[8];
  embed_f16__ref(tokens, table, y, 4, 2);
  const float want[8] = {-0.0f, 0.333251953125f, INFINITY, 0x1p-14f,
                         1.0f,  -2.0f,           0x1p-24f, 65504.0f};
  EXPECT_EQ(std::memcmp(y, want, sizeof(y)), 0);
}

TEST(RefOps, embed_bf16__ref) {
  const uint16_t table[2][3] = {{0x3F80, 0xC040, 0x0001}, {0x4049, 0xFF80, 0x8000}};
  const int32_t tokens[2] = {1, 0};
  float y[6];
  embed_bf16__ref(tokens, table, y, 3, 2);
  const float want[6] = {3.140625f, -INFINITY, -0.0f, 1.0f, -3.0f, 0x1p-133f};
  EXPECT_EQ(std::memcmp(y, want, sizeof(y)), 0);
}

// q8_0: d = 0.5 (row 0), 1 (rows 1, 2); q = i − 16 + r.
TEST(RefOps, embed_q8_0__ref) {
  check_hand<block_q8_0>(
      embed_q8_0__ref, 32,
      [](block_q8_0& b, int r) {
        b.d = r == 0 ? kHalf : kH1;
        for (int i = 0; i < 32; ++i) b.qs[i] = int8_t(i - 16 + r);
      },
      [](int r, int i) { return (r == 0 ? 0.5f : 1.0f) * float(i - 16 + r); });
}

// q4_0: nibble q(i) = (i + r) % 16, low nibbles = elements 0..15, high = 16..31; x = d(q−8).
TEST(RefOps, embed_q4_0__ref) {
  auto q = [](int r, int i) { return (i + r) % 16; };
  check_hand<block_q4_0>(
      embed_q4_0__ref, 32,
      [&](block_q4_0& b, int r) {
        b.d = r == 1 ? kHalf : kH1;
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(q(r, j) | (q(r, j + 16) << 4));
      },
      [&](int r, int i) { return (r == 1 ? 0.5f : 1.0f) * float(q(r, i) - 8); });
}

// q4_1: x = d·q + m with d = 0.5, m = −1.
TEST(RefOps, embed_q4_1__ref) {
  auto q = [](int r, int i) { return (3 * i + r) % 16; };
  check_hand<block_q4_1>(
      embed_q4_1__ref, 32,
      [&](block_q4_1& b, int r) {
        b.d = kHalf;
        b.m = kHm1;
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(q(r, j) | (q(r, j + 16) << 4));
      },
      [&](int r, int i) { return 0.5f * float(q(r, i)) - 1.0f; });
}

// q5: bit 4 of element j is bit j of qh (little-endian u32).
template <class Block>
void set_q5(Block& b, int r, int (*q)(int, int)) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t((q(r, j) & 15) | ((q(r, j + 16) & 15) << 4));
  for (int j = 0; j < 32; ++j) qh |= uint32_t(q(r, j) >> 4) << j;
  std::memcpy(b.qh, &qh, 4);
}
int q5_pattern(int r, int i) {
  return (7 * i + 5 * r) % 32;
}

TEST(RefOps, embed_q5_0__ref) {
  check_hand<block_q5_0>(
      embed_q5_0__ref, 32,
      [](block_q5_0& b, int r) {
        b.d = kH1;
        set_q5(b, r, q5_pattern);
      },
      [](int r, int i) { return float(q5_pattern(r, i) - 16); });
}

TEST(RefOps, embed_q5_1__ref) {
  check_hand<block_q5_1>(
      embed_q5_1__ref, 32,
      [](block_q5_1& b, int r) {
        b.d = kHalf;
        b.m = kH1;
        set_q5(b, r, q5_pattern);
      },
      [](int r, int i) { return 0.5f * float(q5_pattern(r, i)) + 1.0f; });
}

// q4_K with d = 1, dmin = 1, every sub-block scale 1 and min 2: x = q − 2.
TEST(RefOps, embed_q4_K__ref) {
  auto q = [](int r, int i) { return (i * 5 + r) % 16; };
  check_hand<block_q4_K>(
      embed_q4_K__ref, 256,
      [&](block_q4_K& b, int r) {
        b.d = kH1;
        b.dmin = kH1;
        for (int j = 0; j < 4; ++j) b.scales[j] = 1, b.scales[j + 4] = 2;  // sub-blocks 0..3
        for (int j = 8; j < 12; ++j) b.scales[j] = 0x21;                   // 4..7: sc 1, m 2
        for (int c = 0; c < 4; ++c)
          for (int l = 0; l < 32; ++l)
            b.qs[32 * c + l] = uint8_t(q(r, 64 * c + l) | (q(r, 64 * c + 32 + l) << 4));
      },
      [&](int r, int i) { return float(q(r, i) - 2); });
}

// q6_K with d = 0.5 and sub-block scale k+1: x = 0.5·(k+1)·(q − 32).
TEST(RefOps, embed_q6_K__ref) {
  auto q = [](int r, int i) { return (i * 3 + r) % 64; };
  check_hand<block_q6_K>(
      embed_q6_K__ref, 256,
      [&](block_q6_K& b, int r) {
        b.d = kHalf;
        for (int k = 0; k < 16; ++k) b.scales[k] = int8_t(k + 1);
        for (int h = 0; h < 2; ++h)
          for (int l = 0; l < 32; ++l)
            for (int s = 0; s < 4; ++s) {
              const int v = q(r, 128 * h + l + 32 * s);
              uint8_t& lo = b.ql[64 * h + l + (s & 1) * 32];
              lo = uint8_t(lo | ((v & 15) << (s >= 2 ? 4 : 0)));
              b.qh[32 * h + l] = uint8_t(b.qh[32 * h + l] | ((v >> 4) << (2 * s)));
            }
      },
      [&](int r, int i) { return 0.5f * float(i / 16 + 1) * float(q(r, i) - 32); });
}

// NMSE bound of each format's quantization noise on N(0, σ²)-like rows: about 3× what the
// whole token_embd tables of the test models measure (q8_0 3e-5, q6_K 3e-4, q5_x 1.3–2e-3,
// q4_x 5–8e-3, q3_K 2.3e-2, q2_K 8.8e-2); F16 / BF16 are ½ ulp per element (2^-22, 2^-16).
// A wrong nibble order, bit layout or scale unpacking gives NMSE ≈ 1 or more.
double noise_bound(DType t) {
  switch (t) {
    case DType::F16:
      return 0x1p-22;
    case DType::BF16:
      return 0x1p-16;
    case DType::Q8_0:
      return 1e-4;
    case DType::Q6_K:
      return 1.2e-3;
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q5_K:
      return 6e-3;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q4_K:
      return 2.5e-2;
    case DType::Q3_K:
      return 8e-2;
    case DType::Q2_K:
      return 3e-1;
    default:
      return 0.0;
  }
}

// Real files: rows of token_embd from the quantized model against the F32 original.
struct RealCase {
  const char* quant;
  const char* f32;
  DType type;
};

void embed_real(DType type, const std::string& quant, const std::string& f32, const char* name) {
  SCOPED_TRACE(name);
  gguf::GgufError err;
  auto fq = gguf::File::open(shared_path("models/" + quant), &err);
  auto ff = gguf::File::open(shared_path("models/" + f32), &err);
  ASSERT_TRUE(fq && ff) << err.message;
  const gguf::TensorInfo* tq = fq->tensor("token_embd.weight");
  const gguf::TensorInfo* tf = ff->tensor("token_embd.weight");
  ASSERT_TRUE(tq && tf);
  ASSERT_EQ(tq->type, type);
  const int64_t n = tq->ne[0];
  const std::vector<int32_t> tokens = {0, 1, 2, 100, 403, 511, 257};
  const int64_t T = int64_t(tokens.size());
  std::vector<float> y(size_t(n * T)), ref(size_t(n * T));
  embed_fn(type)(tokens.data(), tq->data, y.data(), n, T);
  embed_f32__ref(tokens.data(), tf->data, ref.data(), n, T);
  const double e = nmse(y, ref);
  EXPECT_LT(e, noise_bound(type));
  EXPECT_GT(e, 0.0);  // it is a different (quantized) tensor
  // Each output row is the table row of its token (the row stride is right).
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t t = 0; t < T; ++t) {
    dequantize_row(type, tq->data + size_t(tokens[size_t(t)]) * row_bytes(type, n), row.data(), n);
    EXPECT_EQ(std::memcmp(row.data(), &y[size_t(t * n)], size_t(n) * 4), 0) << t;
  }
}

TEST(RefOpsReal, embed_quantized_rows_close_to_f32) {
  CKE_REQUIRE_SHARED(dir, "models/synthetic");
  const RealCase cases[] = {
      {"synthetic/stories260K-F16.gguf", "stories260K.gguf", DType::F16},
      {"synthetic/stories260K-BF16.gguf", "stories260K.gguf", DType::BF16},
      {"synthetic/stories260K-Q8_0.gguf", "stories260K.gguf", DType::Q8_0},
      {"synthetic/stories260K-Q4_0.gguf", "stories260K.gguf", DType::Q4_0},
      {"synthetic/stories260K-Q4_1.gguf", "stories260K.gguf", DType::Q4_1},
      {"synthetic/stories260K-Q5_0.gguf", "stories260K.gguf", DType::Q5_0},
      {"synthetic/stories260K-Q5_1.gguf", "stories260K.gguf", DType::Q5_1},
      {"synthetic/synth-llama-BF16.gguf", "synthetic/synth-llama-F32.gguf", DType::BF16},
      {"synthetic/synth-llama-Q8_0.gguf", "synthetic/synth-llama-F32.gguf", DType::Q8_0},
      {"synthetic/synth-llama-Q6_K.gguf", "synthetic/synth-llama-F32.gguf", DType::Q6_K},
      {"synthetic/synth-llama-Q5_K_M.gguf", "synthetic/synth-llama-F32.gguf", DType::Q5_K},
      {"synthetic/synth-llama-Q4_K_M.gguf", "synthetic/synth-llama-F32.gguf", DType::Q4_K},
      {"synthetic/synth-llama-Q3_K_M.gguf", "synthetic/synth-llama-F32.gguf", DType::Q3_K},
      {"synthetic/synth-llama-Q2_K.gguf", "synthetic/synth-llama-F32.gguf", DType::Q2_K},
  };
  for (const RealCase& c : cases) embed_real(c.type, c.quant, c.f32, c.quant);
}

// quantize_row → embed recovers random rows within the format's noise (rows of 512 = two
// super-blocks; tokens out of order).
void round_trip(DType type) {
  SCOPED_TRACE(std::string(dtype_name(type)));
  const int64_t n = 512, rows = 3;
  const auto x = randn(size_t(n * rows), 77);
  std::vector<uint8_t> table(row_bytes(type, n) * rows);
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(type, &x[size_t(r * n)], table.data() + row_bytes(type, n) * r, n);
  const int32_t tokens[3] = {2, 0, 1};
  std::vector<float> y(x.size()), want(x.size());
  embed_fn(type)(tokens, table.data(), y.data(), n, 3);
  for (int t = 0; t < 3; ++t)
    std::memcpy(&want[size_t(t * n)], &x[size_t(tokens[t] * n)], size_t(n) * 4);
  EXPECT_LT(nmse(y, want), noise_bound(type));
}

TEST(RefOpsReal, embed_round_trip_every_format) {
  for (DType t : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                  DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K})
    round_trip(t);
}

// GET_ROWS of once_upon (1 403 407 261 378): F32 (stories, gemma3) and Q4_K (llama Q4_K_M).
TEST(RefOpsCheckpoint, embed__ref_bit_exact) {
  const struct {
    const char* model;
    const char* gguf;
    DType type;
  } cases[] = {{"stories260K", "stories260K.gguf", DType::F32},
               {"synth-gemma3-F32", "synthetic/synth-gemma3-F32.gguf", DType::F32},
               {"synth-llama-Q4_K_M", "synthetic/synth-llama-Q4_K_M.gguf", DType::Q4_K}};
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints");
  const int32_t tokens[5] = {1, 403, 407, 261, 378};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    gguf::GgufError err;
    auto f = gguf::File::open(shared_path(std::string("models/") + c.gguf), &err);
    ASSERT_TRUE(f) << err.message;
    const gguf::TensorInfo* t = f->tensor("token_embd.weight");
    ASSERT_TRUE(t);
    ASSERT_EQ(t->type, c.type);
    const auto want = read_f32(shared_path(ckpt_rel(c.model, "embd")));
    ASSERT_EQ(want.size(), size_t(t->ne[0] * 5));
    std::vector<float> y(want.size());
    embed_fn(c.type)(tokens, t->data, y.data(), t->ne[0], 5);
    EXPECT_EQ(bit_diffs(y, want), 0);
  }
}

// The K-quant formats without a hand-built block above: round trip, then the real model.
TEST(RefOps, embed_q2_K__ref) {
  round_trip(DType::Q2_K);
  CKE_REQUIRE_SHARED(p, "models/synthetic/synth-llama-Q2_K.gguf");
  embed_real(DType::Q2_K, "synthetic/synth-llama-Q2_K.gguf", "synthetic/synth-llama-F32.gguf",
             "q2_K");
}
TEST(RefOps, embed_q3_K__ref) {
  round_trip(DType::Q3_K);
  CKE_REQUIRE_SHARED(p, "models/synthetic/synth-llama-Q3_K_M.gguf");
  embed_real(DType::Q3_K, "synthetic/synth-llama-Q3_K_M.gguf", "synthetic/synth-llama-F32.gguf",
             "q3_K");
}
TEST(RefOps, embed_q5_K__ref) {
  round_trip(DType::Q5_K);
  CKE_REQUIRE_SHARED(p, "models/synthetic/synth-llama-Q5_K_M.gguf");
  embed_real(DType::Q5_K, "synthetic/synth-llama-Q5_K_M.gguf", "synthetic/synth-llama-F32.gguf",
             "q5_K");
}

}  // namespace
}  // namespace cke::test
