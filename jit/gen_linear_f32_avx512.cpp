// linear_f32_f32__avx512: the generated F32 linear kernel (gen_linear_f32.h) and its driver.
#include <algorithm>
#include <vector>

#include "jit/gen_common.h"
#include "jit/gen_linear_f32.h"
#include "kernels/ref/linear.h"

namespace cke::jit::gen {
namespace {

using namespace asmjit;
using namespace asmjit::x86;

constexpr int kMaxTokens = 3;

struct F32Set {
  int rows = 0;
  int max_tokens = 0;
  F32MicroFn fn[kMaxTokens + 1] = {};
};

// Decode (T = 1): 4 rows x 1 token = 16 accumulators. Prefill: 2 rows x up to 3 tokens =
// 24 accumulators, each weight load feeding 3 FMAs and each activation load 2.
struct F32State {
  F32Set decode, prefill;
  LinearFn reference = nullptr;
};

// Called from generated code: allocates nothing, throws nothing.
void f32_drive(const F32State* s, const float* x, const void* w, float* y, int64_t K, int64_t N,
               int64_t T, int64_t n0, int64_t n1) noexcept {
  if (!(x && w && y && K > 0 && N > 0 && T >= 0 && 0 <= n0 && n0 <= n1 && n1 <= N)) return;
  if (T == 0 || n0 == n1) return;
  if (K > INT64_MAX / 64 || N > INT64_MAX / 64) {  // byte offsets of the inner loops
    s->reference(x, w, y, K, N, T, n0, n1);
    return;
  }
  const F32Set& set = T == 1 ? s->decode : s->prefill;
  const auto* wf = static_cast<const float*>(w);
  const int64_t rb = K * int64_t(sizeof(float));
  for (int64_t n = n0; n < n1; n += set.rows) {
    const int64_t rows = std::min<int64_t>(set.rows, n1 - n);
    for (int64_t t0 = 0; t0 < T; t0 += set.max_tokens) {
      const int64_t tt = std::min<int64_t>(set.max_tokens, T - t0);
      set.fn[tt](wf + n * K, rb, rows, x + t0 * K, y + t0 * N + n, N * int64_t(sizeof(float)), K);
    }
  }
}

// GCC's _mm512_reduce_add_ps of (a0 + a2) + (a1 + a3) into lane 0 of `out`.
void fold_reduce(Compiler& cc, const Zmm& out, const Zmm acc[4]) {
  Zmm r = cc.newZmmPs("r"), t = cc.newZmmPs("t");
  cc.vaddps(r, acc[0], acc[2]);
  cc.vaddps(t, acc[1], acc[3]);
  cc.vaddps(r, r, t);
  cc.vextractf64x4(t.ymm(), r, 1);
  cc.vaddps(r.ymm(), t.ymm(), r.ymm());  // v[i+8] + v[i]
  cc.vextractf32x4(t.xmm(), r.ymm(), 1);
  cc.vaddps(r.xmm(), t.xmm(), r.xmm());  // t[i+4] + t[i]
  cc.vpermilps(t.xmm(), r.xmm(), 0xEE);
  cc.vaddps(r.xmm(), r.xmm(), t.xmm());  // u0+u2, u1+u3
  cc.vmovshdup(t.xmm(), r.xmm());
  cc.vaddps(out.xmm(), r.xmm(), t.xmm());
}

Label emit_f32(Compiler& cc, int R, int TT) {
  FuncNode* f = cc.addFunc(FuncSignatureT<void, const float*, int64_t, int64_t, const float*,
                                          float*, int64_t, int64_t>());
  f->frame().setAvxEnabled();
  f->frame().setAvxCleanup();
  f->frame().setAvx512Enabled();
  Gp w = cc.newIntPtr("w"), rb = cc.newInt64("row_bytes"), nrows = cc.newInt64("nrows");
  Gp x = cc.newIntPtr("x"), y = cc.newIntPtr("y"), ys = cc.newInt64("y_stride");
  Gp K = cc.newInt64("K");
  f->setArg(0, w);
  f->setArg(1, rb);
  f->setArg(2, nrows);
  f->setArg(3, x);
  f->setArg(4, y);
  f->setArg(5, ys);
  f->setArg(6, K);

  // Row pointers (rows past nrows - 1 repeat the last) and token pointers.
  Gp last = cc.newInt64("last");
  cc.lea(last, ptr(nrows, -1));
  std::vector<Gp> r, xt;
  for (int i = 0; i < R; ++i) {
    Gp p = cc.newIntPtr("row");
    if (i == 0) {
      cc.mov(p, w);
    } else {
      cc.mov(p, i);
      cc.cmp(p, last);
      cc.cmovg(p, last);
      cc.imul(p, rb);
      cc.add(p, w);
    }
    r.push_back(p);
  }
  for (int t = 0; t < TT; ++t) {
    Gp p = cc.newIntPtr("xt");
    if (t == 0)
      cc.mov(p, x);
    else
      cc.lea(p, ptr(xt.back(), rb));
    xt.push_back(p);
  }

  Zmm acc[4][kMaxTokens][4];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < TT; ++t)
      for (int j = 0; j < 4; ++j) {
        acc[i][t][j] = cc.newZmmPs("acc");
        cc.vxorps(acc[i][t][j], acc[i][t][j], acc[i][t][j]);
      }

  // Main loop over the 64-element chunks: byte offsets [0, 4 * (K & ~63)).
  Gp off = cc.newInt64("off"), end = cc.newInt64("end");
  cc.mov(end, K);
  cc.and_(end, ~int64_t(63));
  cc.shl(end, 2);
  cc.xor_(off, off);
  Label done = cc.newLabel(), loop = cc.newLabel();
  cc.test(end, end);
  cc.jz(done);
  cc.bind(loop);
  for (int j = 0; j < 4; ++j) {
    Zmm xv[kMaxTokens];
    for (int t = 0; t < TT; ++t) {
      xv[t] = cc.newZmmPs("xv");
      cc.vmovups(xv[t], ptr(xt[t], off, 0, 64 * j));
    }
    for (int i = 0; i < R; ++i) {
      if (TT == 1) {
        cc.vfmadd231ps(acc[i][0][j], xv[0], ptr(r[i], off, 0, 64 * j));
        continue;
      }
      Zmm wv = cc.newZmmPs("wv");
      cc.vmovups(wv, ptr(r[i], off, 0, 64 * j));
      for (int t = 0; t < TT; ++t) cc.vfmadd231ps(acc[i][t][j], wv, xv[t]);
    }
  }
  cc.add(off, 256);
  cc.cmp(off, end);
  cc.jb(loop);
  cc.bind(done);

  // Per output: reduce, the K % 64 tail, store.
  Gp np = cc.newInt64("np"), mul_end = cc.newInt64("mul_end"), idx = cc.newInt64("idx");
  cc.mov(np, K);
  cc.and_(np, ~int64_t(63));
  cc.mov(mul_end, K);
  cc.and_(mul_end, ~int64_t(7));  // np + ((K - np) & ~7), as np is a multiple of 8
  Gp yt = cc.newIntPtr("yt");
  cc.mov(yt, y);
  for (int t = 0; t < TT; ++t) {
    if (t > 0) cc.add(yt, ys);
    for (int i = 0; i < R; ++i) {
      Zmm s = cc.newZmmPs("sum"), p = cc.newZmmPs("p");
      fold_reduce(cc, s, acc[i][t]);
      Label mul_loop = cc.newLabel(), fma_part = cc.newLabel(), fma_loop = cc.newLabel(),
            tail_done = cc.newLabel();
      cc.mov(idx, np);
      cc.cmp(idx, mul_end);
      cc.jae(fma_part);
      cc.bind(mul_loop);  // sumf = sumf + fl(w * x)
      cc.vmovss(p.xmm(), dword_ptr(r[i], idx, 2));
      cc.vmulss(p.xmm(), p.xmm(), dword_ptr(xt[t], idx, 2));
      cc.vaddss(s.xmm(), s.xmm(), p.xmm());
      cc.inc(idx);
      cc.cmp(idx, mul_end);
      cc.jb(mul_loop);
      cc.bind(fma_part);
      cc.cmp(idx, K);
      cc.jae(tail_done);
      cc.bind(fma_loop);  // sumf = fma(w, x, sumf)
      cc.vmovss(p.xmm(), dword_ptr(r[i], idx, 2));
      cc.vfmadd231ss(s.xmm(), p.xmm(), dword_ptr(xt[t], idx, 2));
      cc.inc(idx);
      cc.cmp(idx, K);
      cc.jb(fma_loop);
      cc.bind(tail_done);
      Label skip = cc.newLabel();
      if (i > 0) {
        cc.cmp(nrows, i);
        cc.jle(skip);
      }
      cc.vmovss(dword_ptr(yt, 4 * i), s.xmm());
      cc.bind(skip);
    }
  }
  cc.endFunc();
  return f->label();
}

}  // namespace

std::unique_ptr<KernelModule> generate_linear_f32_avx512(const GeneratorParams& params,
                                                         std::string* err) {
  const std::string name = "linear_f32_f32__avx512";
  if (!reject_params(params, name, err)) return nullptr;
  auto state = std::make_shared<F32State>();
  state->reference = &linear_f32_f32__ref;
  state->decode.rows = 4;
  state->decode.max_tokens = 1;
  state->prefill.rows = 2;
  state->prefill.max_tokens = kMaxTokens;
  ModuleBuilder mb{name};
  const Label dec = emit_f32(mb.cc(), 4, 1);
  Label pre[kMaxTokens + 1];
  for (int t = 1; t <= kMaxTokens; ++t) pre[t] = emit_f32(mb.cc(), 2, t);
  const Label entry = mb.emit_linear_entry(state.get(), reinterpret_cast<const void*>(&f32_drive));
  if (!mb.finish(err)) return nullptr;
  state->decode.fn[1] = reinterpret_cast<F32MicroFn>(mb.address(dec));
  for (int t = 1; t <= kMaxTokens; ++t)
    state->prefill.fn[t] = reinterpret_cast<F32MicroFn>(mb.address(pre[t]));
  return mb.make_module(entry, std::move(state));
}

}  // namespace cke::jit::gen
