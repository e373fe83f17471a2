// The activation conversion steps (kernels/ref/act_steps.h) against the row quantizers of
// kernels/ref/act_quant.h, which tests/kernels_linear/test_act_quant.cpp checks against
// independent models of ggml's x86 code: each step must write exactly the quantizer's bytes
// for every token of its range and nothing else, choose the 4x8 quantizer by the token's
// place in the call's groups of four, and refuse a call that breaks its contract.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/formats/blocks.h"
#include "kernels/formats/dtype.h"
#include "kernels/ref/act_quant.h"
#include "kernels/ref/act_steps.h"

namespace cke::test {
namespace {

using StepFn = void (*)(const float*, void*, int64_t, int64_t, int64_t, int64_t);

std::vector<float> acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = d(rng);
  return x;
}

// What the step must write for token t of T: the row quantizer's bytes.
std::vector<uint8_t> expected_row(DType out, bool x4, const float* x, int64_t K, int64_t t,
                                  int64_t T) {
  std::vector<uint8_t> r(row_bytes(out, K));
  switch (out) {
    case DType::F16:
      act_convert_f16(x, reinterpret_cast<uint16_t*>(r.data()), K);
      break;
    case DType::BF16:
      act_convert_bf16(x, reinterpret_cast<uint16_t*>(r.data()), K);
      break;
    case DType::Q8_0:
      act_quantize_q8_0(x, reinterpret_cast<block_q8_0*>(r.data()), K);
      break;
    case DType::Q8_1:
      act_quantize_q8_1(x, reinterpret_cast<block_q8_1*>(r.data()), K);
      break;
    default:
      if (x4 && t < T - T % 4)
        act_quantize_q8_K_4x8(x, reinterpret_cast<block_q8_K*>(r.data()), K);
      else
        act_quantize_q8_K(x, reinterpret_cast<block_q8_K*>(r.data()), K);
  }
  return r;
}

void check_step(StepFn fn, DType out, bool x4) {
  const int64_t K = 512;
  for (int64_t T : {1, 3, 4, 5, 9}) {
    std::vector<float> x = acts(K * T, uint32_t(T));
    // Rows that the two Q8_K quantizers quantize differently: -amax first, then +amax (the
    // plain one takes the first for the sign, the 4x8 one sees +amax and maps it to -127).
    for (int64_t t = 0; t < T; ++t) {
      x[size_t(t * K + 3)] = -9.0f;
      x[size_t(t * K + 7)] = 9.0f;
    }
    const size_t rb = row_bytes(out, K);
    for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, T}, {T / 2, T}, {0, (T + 1) / 2}}) {
      std::vector<uint8_t> y(rb * size_t(T), 0xAB);
      fn(x.data(), y.data(), K, T, t0, t1);
      for (int64_t t = 0; t < T; ++t) {
        const uint8_t* row = y.data() + size_t(t) * rb;
        if (t < t0 || t >= t1) {
          for (size_t i = 0; i < rb; ++i) ASSERT_EQ(row[i], 0xAB) << "row " << t << " written";
          continue;
        }
        const std::vector<uint8_t> want = expected_row(out, x4, x.data() + t * K, K, t, T);
        ASSERT_EQ(std::memcmp(row, want.data(), rb), 0) << "T=" << T << " t=" << t;
      }
    }
  }
  // Calls outside the contract write nothing.
  std::vector<float> x = acts(64, 1);
  std::vector<uint8_t> y(row_bytes(out, 512) * 2, 0xCD);
  const int64_t bad_k = dtype_info(out).block_size == 1 ? -1 : 48;
  fn(x.data(), y.data(), bad_k, 1, 0, 1);
  fn(x.data(), y.data(), 32, 1, 0, 2);  // t1 > T
  fn(x.data(), y.data(), 32, 2, 1, 0);  // t0 > t1
  fn(nullptr, y.data(), 32, 1, 0, 1);
  for (uint8_t b : y) ASSERT_EQ(b, 0xCD);
}

TEST(RefActQuant, act_quant_f16__ref) {
  check_step(act_quant_f16__ref, DType::F16, false);
}
TEST(RefActQuant, act_quant_bf16__ref) {
  check_step(act_quant_bf16__ref, DType::BF16, false);
}
TEST(RefActQuant, act_quant_q8_0__ref) {
  check_step(act_quant_q8_0__ref, DType::Q8_0, false);
}
TEST(RefActQuant, act_quant_q8_1__ref) {
  check_step(act_quant_q8_1__ref, DType::Q8_1, false);
}
TEST(RefActQuant, act_quant_q8_K__ref) {
  check_step(act_quant_q8_K__ref, DType::Q8_K, false);
}
TEST(RefActQuant, act_quant_q8_K_4x8__ref) {
  check_step(act_quant_q8_K_4x8__ref, DType::Q8_K, true);
}

// The premise of the 4x8 test above: on those rows the two Q8_K quantizers differ.
TEST(RefActQuant, q8_K_quantizers_differ_on_plus_minus_amax) {
  std::vector<float> x = acts(256, 7);
  x[3] = -9.0f;
  x[7] = 9.0f;
  block_q8_K a, b;
  act_quantize_q8_K(x.data(), &a, 256);
  act_quantize_q8_K_4x8(x.data(), &b, 256);
  EXPECT_NE(std::memcmp(&a, &b, sizeof a), 0);
}

}  // namespace
}  // namespace cke::test
