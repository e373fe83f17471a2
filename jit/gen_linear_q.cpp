// The driver of the generated Q8_0/Q4_0 linear kernels and their generators.
#include "jit/gen_linear_q.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "jit/gen_common.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/quant.h"
#include "kernels/ref/act_quant.h"
#include "kernels/ref/linear.h"

namespace cke::jit::gen {
namespace {

// Tokens quantized at a time: bounds the per-thread buffer (64 * K bytes) and keeps the
// activations of a chunk in L2 while every row tile streams past them. A multiple of 4,
// so the repacked path's gemm groups (tokens 4g .. 4g+3) never straddle two chunks.
constexpr int64_t kChunkTokens = 64;

struct Group {
  int64_t t0;  // first token, relative to the chunk
  int tokens;
  QMicroFn fn;
};

struct Scratch {
  std::vector<block_q8_0> q;  // one token, as act_quantize_q8_0 writes it
  std::vector<int8_t> aq;     // a chunk of tokens in the group layout
  std::vector<float> ad;
  std::vector<Group> groups;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Quantizes tokens [t0, t0 + tokens) of the chunk into the group layout at aq + t0*K,
// ad + t0*nb: block b of group token j at aq[(b*tokens + j)*32], ad[b*tokens + j].
void prepare_group(const float* x, int64_t K, int64_t t0, int tokens, Scratch& s) {
  const int64_t nb = K / kQK8_0;
  int8_t* aq = s.aq.data() + t0 * K;
  float* ad = s.ad.data() + t0 * nb;
  for (int j = 0; j < tokens; ++j) {
    act_quantize_q8_0(x + (t0 + j) * K, s.q.data(), K);
    for (int64_t b = 0; b < nb; ++b) {
      std::memcpy(aq + (b * tokens + j) * kQK8_0, s.q[b].qs, kQK8_0);
      ad[b * tokens + j] = fp16_to_fp32(s.q[b].d);
    }
  }
}

}  // namespace

// The body of q_linear_drive; may throw std::bad_alloc (the scratch buffers).
static void drive(const QLinearState* s, const float* x, const void* w, float* y, int64_t K,
                  int64_t N, int64_t T, int64_t n0, int64_t n1) {
  // The reference's validity rule: a call breaking the contract computes nothing.
  if (!(x && w && y && K > 0 && K % kQK8_0 == 0 && N > 0 && T >= 0 && 0 <= n0 && n0 <= n1 &&
        n1 <= N))
    return;
  if (T == 0 || n0 == n1) return;
  const int64_t nb = K / kQK8_0;
  const int64_t block_bytes =
      s->format == QFormat::Q8_0 ? int64_t(sizeof(block_q8_0)) : int64_t(sizeof(block_q4_0));
  const int64_t rb = nb * block_bytes;
  const bool repacked = s->format == QFormat::Q4_0 && N % 8 == 0;
  const QKernelSet& main = repacked ? s->gemv : s->plain;
  // The inner loops address a tile's rows by 32-bit offsets (the scale gathers); absurd
  // rows take the reference, which computes the same bits.
  if (rb > INT32_MAX / 16 || N > INT64_MAX / 4 / kChunkTokens) {
    s->reference(x, w, y, K, N, T, n0, n1);
    return;
  }

  Scratch& sc = scratch();
  sc.q.resize(size_t(nb));
  const int64_t t_gemm = repacked ? T - T % 4 : 0;
  const auto* wb = static_cast<const uint8_t*>(w);
  std::vector<Group>& groups = sc.groups;
  for (int64_t c0 = 0; c0 < T; c0 += kChunkTokens) {
    const int64_t ct = std::min(kChunkTokens, T - c0);
    sc.aq.resize(size_t(ct * K));
    sc.ad.resize(size_t(ct * nb));
    groups.clear();
    for (int64_t t = 0; t < ct;) {
      const int64_t abs_t = c0 + t;
      int n;
      QMicroFn fn;
      if (abs_t < t_gemm) {
        n = 4;
        fn = s->gemm.fn[4];
      } else {
        n = int(std::min<int64_t>(main.max_tokens, ct - t));
        fn = main.fn[n];
      }
      prepare_group(x + c0 * K, K, t, n, sc);
      groups.push_back({t, n, fn});
      t += n;
    }
    // Row tiles outer: a tile's weights stay in L1 while every group of the chunk passes.
    for (int64_t n = n0; n < n1; n += main.rows) {
      const int64_t rows = std::min<int64_t>(main.rows, n1 - n);
      for (const Group& g : groups)
        g.fn(wb + n * rb, rb, rows, sc.aq.data() + g.t0 * K, sc.ad.data() + g.t0 * nb,
             y + (c0 + g.t0) * N + n, N * int64_t(sizeof(float)), nb);
    }
  }
}

// Called from generated code, which has no unwind tables: nothing may propagate. Out of
// memory for the scratch buffers falls back to the reference (a K/32-block buffer).
void q_linear_drive(const QLinearState* s, const float* x, const void* w, float* y, int64_t K,
                    int64_t N, int64_t T, int64_t n0, int64_t n1) noexcept {
  try {
    drive(s, x, w, y, K, N, T, n0, n1);
  } catch (...) {
    try {
      s->reference(x, w, y, K, N, T, n0, n1);
    } catch (...) {
    }
  }
}

namespace {

std::unique_ptr<KernelModule> generate_q(std::string_view name, QFormat f, bool avx512,
                                         const GeneratorParams& params, std::string* err) {
  if (!reject_params(params, name, err)) return nullptr;
  auto state = std::make_shared<QLinearState>();
  state->format = f;
  state->reference = f == QFormat::Q8_0 ? &linear_q8_0_f32__ref : &linear_q4_0_f32__ref;
  ModuleBuilder mb{std::string(name)};
  auto emit = avx512 ? &emit_q_avx512 : &emit_q_avx2;
  // Plain: 4-row tiles, up to 4 (AVX-512) or 2 (AVX2, 16 registers) tokens.
  state->plain.rows = 4;
  state->plain.max_tokens = avx512 ? 4 : 2;
  asmjit::Label plain[kMaxGroupTokens + 1], gemv[kMaxGroupTokens + 1], gemm;
  for (int t = 1; t <= state->plain.max_tokens; ++t) plain[t] = emit(mb.cc(), f, QArith::Plain, t);
  if (f == QFormat::Q4_0) {
    state->gemv.rows = state->gemm.rows = avx512 ? 8 : 4;
    state->gemv.max_tokens = 3;  // the T % 4 tail
    state->gemm.max_tokens = 4;
    for (int t = 1; t <= 3; ++t) gemv[t] = emit(mb.cc(), f, QArith::Gemv, t);
    gemm = emit(mb.cc(), f, QArith::Gemm, 4);
  }
  const asmjit::Label entry =
      mb.emit_linear_entry(state.get(), reinterpret_cast<const void*>(&q_linear_drive));
  if (!mb.finish(err)) return nullptr;
  for (int t = 1; t <= state->plain.max_tokens; ++t)
    state->plain.fn[t] = reinterpret_cast<QMicroFn>(mb.address(plain[t]));
  if (f == QFormat::Q4_0) {
    for (int t = 1; t <= 3; ++t)
      state->gemv.fn[t] = reinterpret_cast<QMicroFn>(mb.address(gemv[t]));
    state->gemm.fn[4] = reinterpret_cast<QMicroFn>(mb.address(gemm));
  }
  return mb.make_module(entry, std::move(state));
}

}  // namespace

std::unique_ptr<KernelModule> generate_linear_q8_0_avx512vnni(const GeneratorParams& p,
                                                              std::string* err) {
  return generate_q("linear_q8_0_f32__avx512vnni", QFormat::Q8_0, true, p, err);
}
std::unique_ptr<KernelModule> generate_linear_q4_0_avx512vnni(const GeneratorParams& p,
                                                              std::string* err) {
  return generate_q("linear_q4_0_f32__avx512vnni", QFormat::Q4_0, true, p, err);
}
std::unique_ptr<KernelModule> generate_linear_q8_0_avx2(const GeneratorParams& p,
                                                        std::string* err) {
  return generate_q("linear_q8_0_f32__avx2", QFormat::Q8_0, false, p, err);
}
std::unique_ptr<KernelModule> generate_linear_q4_0_avx2(const GeneratorParams& p,
                                                        std::string* err) {
  return generate_q("linear_q4_0_f32__avx2", QFormat::Q4_0, false, p, err);
}

}  // namespace cke::jit::gen
