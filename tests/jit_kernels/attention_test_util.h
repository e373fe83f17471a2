// What the two attention tests (test_jit_attention.cpp: the F32 cache,
// test_jit_attention_flash.cpp: the F16 cache with flash attention) share: the shape of a layer,
// the call, the queries, and the three-way comparison of reference, machine code and emitted C.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jit_test_util.h"

namespace cke::test {

struct AttnShape {
  int64_t hd, nh, nhkv, nctx;  // head_dim, query heads, KV heads, cache cells
};

struct AttnCall {
  int64_t pos0, T, window, h0, h1;  // first position, tokens, sliding window, heads [h0, h1)
  float scale;
};

// Queries [T][n_head][head_dim], normal with standard deviation `mag`.
inline std::vector<float> make_attn_q(const AttnShape& s, int64_t T, float mag, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, mag);
  std::vector<float> q(size_t(s.hd * s.nh * T));
  for (float& x : q) x = nd(rng);
  return q;
}

inline std::string show_float(float x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (%a)", double(x), double(x));
  return buf;
}

// Bit-identical, or both NaN (which NaN is not part of the attention contracts).
inline bool same_bits_or_nan(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, 4) == 0;
}

// Runs the three renderings of a loaded kernel (GeneratedKernel: ref, fn, cfn) on the same
// inputs, outputs prefilled with a sentinel, and returns "" when all agree bit for bit,
// else the first difference. Cell is the cache's element type (float or fp16 bits).
template <class Loaded, class Cell>
std::string compare_attention(const Loaded& l, const AttnShape& s, const Cell* k, const Cell* v,
                              const std::vector<float>& q, const AttnCall& c) {
  const size_t n = size_t(s.hd * s.nh * c.T);
  const float sentinel = -12345.678f;
  std::vector<float> yr(n, sentinel), yj(n, sentinel), yc(n, sentinel);
  l.ref(q.data(), k, v, yr.data(), s.hd, s.nh, s.nhkv, s.nctx, c.pos0, c.T, c.scale, c.window, c.h0,
        c.h1);
  dirty_stack(uint8_t(c.pos0 * 7 + c.T));
  l.fn(q.data(), k, v, yj.data(), s.hd, s.nh, s.nhkv, s.nctx, c.pos0, c.T, c.scale, c.window, c.h0,
       c.h1);
  dirty_stack(uint8_t(c.pos0 * 7 + c.T));
  l.cfn(q.data(), k, v, yc.data(), s.hd, s.nh, s.nhkv, s.nctx, c.pos0, c.T, c.scale, c.window, c.h0,
        c.h1);
  const std::string where = "hd=" + std::to_string(s.hd) + " nh=" + std::to_string(s.nh) +
                            " nhkv=" + std::to_string(s.nhkv) + " nctx=" + std::to_string(s.nctx) +
                            " pos0=" + std::to_string(c.pos0) + " T=" + std::to_string(c.T) +
                            " window=" + std::to_string(c.window) + " heads [" +
                            std::to_string(c.h0) + "," + std::to_string(c.h1) + ")";
  for (size_t i = 0; i < n; ++i) {
    if (!same_bits_or_nan(yj[i], yr[i]))
      return where + ": out[" + std::to_string(i) + "] jit " + show_float(yj[i]) + " reference " +
             show_float(yr[i]);
    if (!same_bits_or_nan(yj[i], yc[i]))
      return where + ": out[" + std::to_string(i) + "] jit " + show_float(yj[i]) + " emitted C " +
             show_float(yc[i]);
  }
  return "";
}

}  // namespace cke::test
