// Helpers of the reference op tests: checkpoint files, GGUF weights, comparisons, random data.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/gguf/gguf.h"
#include "tests/common/shared.h"

namespace cke::test {

// A llama.cpp checkpoint (raw little-endian f32, ggml logical order); empty if unreadable.
inline std::vector<float> read_f32(const std::string& path) {
  std::vector<float> v;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return v;
  float buf[1024];
  size_t n;
  while ((n = std::fread(buf, sizeof(float), 1024, f)) > 0) v.insert(v.end(), buf, buf + n);
  std::fclose(f);
  return v;
}

inline std::string ckpt_rel(const std::string& model, const std::string& name) {
  return "reference/checkpoints/" + model + "/" + name + ".f32";
}

// An F32 tensor of a GGUF file, copied out.
inline std::vector<float> gguf_f32(const std::string& path, const std::string& tensor) {
  gguf::GgufError err;
  auto f = gguf::File::open(path, &err);
  EXPECT_TRUE(f) << err.message;
  if (!f) return {};
  const gguf::TensorInfo* t = f->tensor(tensor);
  EXPECT_TRUE(t) << tensor;
  if (!t) return {};
  EXPECT_EQ(t->type, DType::F32) << tensor;
  std::vector<float> v(static_cast<size_t>(t->n_elements()));
  std::memcpy(v.data(), t->data, v.size() * sizeof(float));
  return v;
}

// Number of elements whose bits differ (NaNs of any payload count as equal).
inline int64_t bit_diffs(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return -1;
  int64_t d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    uint32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    d += x != y;
  }
  return d;
}

// Σ(a−ref)² / Σref², in double.
inline double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < ref.size(); ++i) {
    const double d = double(a[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return den > 0 ? num / den : num;
}

inline std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Distance in float ulps (same sign assumed; large if signs differ).
inline int64_t ulp_dist(float a, float b) {
  int32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  if ((x < 0) != (y < 0)) return (a == b) ? 0 : INT64_MAX / 2;
  return std::llabs(int64_t(x) - int64_t(y));
}

}  // namespace cke::test
