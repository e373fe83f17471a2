// Bit-exactness evidence against llama.cpp: layer inputs/outputs dumped from a real
// llama.cpp run (shared/reference/checkpoints, `once_upon`, 5 tokens, 1 thread) and the
// weights read from the same GGUF files with the project's reader.
//
// Which ggml kernel produced each dump decides what to expect (GGML-NUMERICS.md §0):
//  - F32 matmuls with K % 16 == 0 ran llamafile's tinyBLAS in prefill (one 16-lane
//    accumulator per output), not ggml_vec_dot_f32: ulp-level differences, NMSE <= 1e-12.
//    A tinyBLAS model written here reproduces those dumps bit for bit, which pins the
//    reduction tree the kernel shares with it, and so does linear_f32_tinyblas_f32__ref
//    (contract linear.f32_tinyblas.ggml, what the resolver now picks for such a batch).
//  - stories260K ffn_down (K = 172) ran ggml_vec_dot_f32: must be bit-identical.
//  - q6_K matmuls run the plain ggml_vec_dot_q6_K_q8_K in prefill: must be bit-identical.
//  - q4_K matmuls with rows % 8 == 0 ran the repacked q4_K_8x8 kernels (tokens 0-3 gemm,
//    token 4 gemv), which linear_q4_Kx8_f32__ref reproduces: must be bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ref/linear.h"
#include "runtime/gguf/gguf.h"
#include "tests/common/linear_call.h"
#include "tests/common/shared.h"

namespace cke::test {
namespace {

std::vector<float> read_f32(const std::string& path, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!f || f.peek() != EOF) v.clear();  // missing, short or long: the caller fails
  return v;
}

struct Compare {
  double nmse = 0;
  int64_t identical = 0, total = 0;
};

Compare compare(const std::vector<float>& y, const std::vector<float>& ref) {
  Compare c;
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    num += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
    c.identical += y[i] == ref[i] || (std::isnan(y[i]) && std::isnan(ref[i]));
  }
  c.nmse = den > 0 ? num / den : num;
  c.total = static_cast<int64_t>(y.size());
  return c;
}

using LinearFn = void (*)(const float*, const void*, float*, int64_t, int64_t, int64_t, int64_t,
                          int64_t);

struct Case {
  std::string weight, input, output;
};

// Runs `fn` on the checkpoint's input with the GGUF weight; returns y and the reference.
struct CaseRun {
  std::vector<float> y, ref;
  const gguf::TensorInfo* w = nullptr;
  std::vector<float> x;
};

// `fn` on the checkpoint's f32 input, converted as its contract says (linear_call.h).
CaseRun run_case(const gguf::File& file, const std::string& dir, const Case& c, RawLinearFn fn,
                 bool repacked = false) {
  CaseRun r;
  r.w = file.tensor(c.weight);
  if (!r.w) {
    ADD_FAILURE() << "tensor " << c.weight << " missing";
    return r;
  }
  const int64_t K = r.w->ne[0], N = r.w->ne[1], T = 5;
  r.x = read_f32(dir + "/" + c.input + ".f32", static_cast<size_t>(K * T));
  r.ref = read_f32(dir + "/" + c.output + ".f32", static_cast<size_t>(N * T));
  if (r.x.empty() || r.ref.empty()) {
    ADD_FAILURE() << "checkpoint " << c.input << " / " << c.output << " unreadable or wrong size";
    return r;
  }
  r.y.assign(static_cast<size_t>(N * T), 0.0f);
  call_linear(fn, r.w->type, repacked, r.x.data(), r.w->data, r.y.data(), K, N, T, 0, N);
  return r;
}

std::unique_ptr<gguf::File> open_model(const std::string& path) {
  gguf::GgufError err;
  auto f = gguf::File::open(path, &err);
  if (!f) ADD_FAILURE() << err.message;
  return f;
}

void report(const std::string& what, const Compare& c) {
  std::printf("[ checkpoint ] %-40s NMSE %.3g, bit-identical %lld / %lld\n", what.c_str(), c.nmse,
              static_cast<long long>(c.identical), static_cast<long long>(c.total));
}

// tinyBLAS<16, __m512> for one output: lane l accumulates elements 16c + l with FMA, then
// _mm512_reduce_add_ps (GCC's tree: +8, +4, +2, +1).
float tinyblas_f32(const float* w, const float* x, int64_t K) {
  float acc[16] = {};
  for (int64_t c = 0; c < K; c += 16)
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(w[c + l], x[c + l], acc[l]);
  float t[8], u[4];
  for (int i = 0; i < 8; ++i) t[i] = acc[i + 8] + acc[i];
  for (int i = 0; i < 4; ++i) u[i] = t[i + 4] + t[i];
  return (u[0] + u[2]) + (u[1] + u[3]);
}

TEST(RefLinearGgml, linear_f32_f32__ref_stories260K) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/stories260K");
  auto file = open_model(model);
  ASSERT_TRUE(file);

  // ggml_vec_dot_f32 (K = 172 is not a multiple of 16): bit-identical.
  for (const Case& c : {Case{"blk.0.ffn_down.weight", "ffn_swiglu-0", "ffn_out-0"},
                        Case{"blk.4.ffn_down.weight", "ffn_swiglu-4", "ffn_out-4"}}) {
    const CaseRun r = run_case(*file, dir, c, linear_f32_f32__ref);
    ASSERT_FALSE(r.y.empty());
    const Compare cmp = compare(r.y, r.ref);
    report(c.output + " (vec_dot_f32, K=172)", cmp);
    EXPECT_EQ(cmp.identical, cmp.total) << c.output;
  }

  // tinyBLAS in prefill (K = 64): the vec_dot emulation differs at ulp level.
  for (const Case& c : {Case{"blk.0.attn_q.weight", "attn_norm-0", "Qcur-0"},
                        Case{"blk.0.attn_k.weight", "attn_norm-0", "Kcur-0"},
                        Case{"blk.4.attn_v.weight", "attn_norm-4", "Vcur-4"},
                        Case{"blk.0.ffn_gate.weight", "ffn_norm-0", "ffn_gate-0"},
                        Case{"output.weight", "result_norm", "result_output"}}) {
    const CaseRun r = run_case(*file, dir, c, linear_f32_f32__ref);
    ASSERT_FALSE(r.y.empty());
    const Compare cmp = compare(r.y, r.ref);
    report(c.output + " (tinyBLAS in ggml, K=64)", cmp);
    EXPECT_LE(cmp.nmse, 1e-12) << c.output;

    // The tinyBLAS model reproduces the dump exactly.
    const int64_t K = r.w->ne[0], N = r.w->ne[1];
    const auto* w = reinterpret_cast<const float*>(r.w->data);
    int64_t same = 0;
    for (int64_t t = 0; t < 5; ++t)
      for (int64_t n = 0; n < N; ++n)
        same += tinyblas_f32(w + n * K, &r.x[t * K], K) == r.ref[t * N + n];
    EXPECT_EQ(same, N * 5) << c.output << ": tinyBLAS model";

    // And so does the reference of contract linear.f32_tinyblas.ggml, which the resolver
    // picks for this batch.
    const CaseRun rt = run_case(*file, dir, c, linear_f32_tinyblas_f32__ref);
    const Compare ct = compare(rt.y, rt.ref);
    report(c.output + " (linear_f32_tinyblas_f32__ref)", ct);
    EXPECT_EQ(ct.identical, ct.total) << c.output;
  }
}

TEST(RefLinearGgml, linear_q6_K_f32__ref_synth_llama_Q4_K_M) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q4_K_M.gguf");
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/synth-llama-Q4_K_M");
  auto file = open_model(model);
  ASSERT_TRUE(file);
  for (const Case& c : {Case{"blk.1.attn_v.weight", "attn_norm-1", "Vcur-1"},
                        Case{"blk.1.ffn_down.weight", "ffn_swiglu-1", "ffn_out-1"},
                        Case{"output.weight", "result_norm", "result_output"}}) {
    ASSERT_TRUE(file->tensor(c.weight));
    ASSERT_EQ(file->tensor(c.weight)->type, DType::Q6_K) << c.weight;
    const CaseRun r = run_case(*file, dir, c, linear_q6_K_f32__ref);
    ASSERT_FALSE(r.y.empty());
    const Compare cmp = compare(r.y, r.ref);
    report(c.output + " (vec_dot_q6_K_q8_K)", cmp);
    EXPECT_EQ(cmp.identical, cmp.total) << c.output;
  }
}

TEST(RefLinearGgml, linear_q4_Kx8_f32__ref_synth_llama_Q4_K_M) {
  CKE_REQUIRE_SHARED(model, "models/synthetic/synth-llama-Q4_K_M.gguf");
  CKE_REQUIRE_SHARED(dir, "reference/checkpoints/synth-llama-Q4_K_M");
  auto file = open_model(model);
  ASSERT_TRUE(file);
  for (const Case& c : {Case{"blk.0.attn_q.weight", "attn_norm-0", "Qcur-0"},
                        Case{"blk.0.attn_k.weight", "attn_norm-0", "Kcur-0"},
                        Case{"blk.0.ffn_up.weight", "ffn_norm-0", "ffn_up-0"},
                        Case{"blk.0.ffn_down.weight", "ffn_swiglu-0", "ffn_out-0"},
                        Case{"blk.1.attn_q.weight", "attn_norm-1", "Qcur-1"}}) {
    ASSERT_TRUE(file->tensor(c.weight));
    ASSERT_EQ(file->tensor(c.weight)->type, DType::Q4_K) << c.weight;
    ASSERT_EQ(file->tensor(c.weight)->ne[1] % 8, 0) << c.weight << ": not repacked by ggml";
    const CaseRun r = run_case(*file, dir, c, linear_q4_Kx8_f32__ref, true);
    ASSERT_FALSE(r.y.empty());
    const Compare cmp = compare(r.y, r.ref);
    report(c.output + " (repacked q4_K_8x8 gemm + gemv)", cmp);
    EXPECT_EQ(cmp.identical, cmp.total) << c.output;
  }
}

}  // namespace
}  // namespace cke::test
