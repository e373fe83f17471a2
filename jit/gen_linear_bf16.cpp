// BF16 linear generators (gen_linear_bf16.h): one tile body for both arithmetics.
#include "jit/gen_linear_bf16.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int kMaxTile = 8;

// vdpbf16ps on a machine without it (AVX2, AVX-512 F): per f32 lane l of 32 bf16 (16 dword
// lanes; bf16 2l in the low half, 2l + 1 in the high half), as kernels/ref/linear_lanes.h
// dpbf16_lane: acc = fma(w_odd, x_odd, acc), then the same with the even pair, each with
// denormal inputs read as zero and a tiny result flushed to zero. That is what the FMA does
// while MXCSR has DAZ and FTZ set (x86 detects tininess after rounding, as vdpbf16ps does:
// tests/kernels_linear/test_dpbf16_lane.cpp), so the tile sets them around its loop of FMAs
// and restores MXCSR before its reductions, which ggml runs in the default environment. A
// bf16 widens exactly to f32 (odd: the dword & 0xffff0000, even: dword << 16).
struct Dpbf16 {
  Lanes16& L;
  V16 hi;  // 0xffff0000 in every lane
  explicit Dpbf16(Lanes16& lanes) : L(lanes), hi(L.splat(0xffff0000u, "bf_hi")) {}
  // The 32 bf16 at mem as f32 (odd, even).
  void widen(Mem mem, V16 odd, V16 even) {
    kir::Builder& b = L.b;
    L.load(even, mem);
    for (int h = 0; h < L.parts; ++h) {
      b.vand(odd.part[h], even.part[h], hi.part[h]);
      b.vsll_i32(even.part[h], even.part[h], 16);
    }
  }
  void step(V16 acc, V16 w_odd, V16 w_even, V16 x_odd, V16 x_even) {
    L.fma(acc, w_odd, x_odd);
    L.fma(acc, w_even, x_even);
  }
};

// accs = 2: ggml_vec_dot_bf16 (64-element steps, c1/c2, double tail); accs = 1: tinyBLAS.
// isa Avx512Bf16: vdpbf16ps; Avx512 / Avx2: Dpbf16's emulation of it.
int emit_tile(kir::Module& m, const std::string& name, Isa isa, int accs, int R, int TT) {
  Builder b = open_tile(m, name);
  Lanes16 ft(b, isa == Isa::Avx512Bf16 ? Isa::Avx512 : isa);
  const bool native = isa == Isa::Avx512Bf16;
  const TileArgs a = begin_tile(b);
  const std::vector<V> r = tile_rows(b, a, R);
  std::vector<V> xt = tile_tokens(b, a, TT);
  V16 acc[kMaxTile][kMaxTile][2];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < TT; ++t)
      for (int j = 0; j < accs; ++j) acc[i][t][j] = ft.zero("acc");
  std::optional<Dpbf16> em;
  if (!native) em.emplace(ft);

  // Steps of 32 * accs bf16 (64 * accs bytes). a.n: K for vec_dot, K / 32 for tinyBLAS.
  const int step = 64 * accs;
  V off = b.i64("off"), end = b.i64("end");
  if (accs == 2) {
    b.andi(end, a.n, ~int64_t(63));
    b.muli(end, end, 2);
  } else {
    b.muli(end, a.n, step);
  }
  // Decode streams the weights once: prefetched a tile ahead where the host wants it
  // (decode_stream_prefetch, gen_tile.h).
  const bool prefetch = TT == 1 && decode_stream_prefetch();
  RowPrefetch pf;
  if (prefetch) pf = row_prefetch(b, a, R);
  V csr;
  if (!native) {
    csr = b.i64("mxcsr");
    b.mxcsr_flush(csr);
  }
  b.for_(off, b.imm(0, "zero"), end, b.imm(step, "step_bytes"));
  if (prefetch) prefetch_rows(b, r, off, step, pf);
  for (int j = 0; j < accs; ++j) {
    if (native) {
      V xv[kMaxTile];
      for (int t = 0; t < TT; ++t) {
        xv[t] = b.vec(512, Cls::I, "xv");
        b.vload(xv[t], Mem{xt[t], off, 1, 64 * j});
      }
      for (int i = 0; i < R; ++i) {
        V wv = b.vec(512, Cls::I, "wv");
        b.vload(wv, Mem{r[i], off, 1, 64 * j});
        for (int t = 0; t < TT; ++t) b.vdpbf16(acc[i][t][j].part[0], wv, xv[t]);
      }
    } else {
      V16 xo[kMaxTile], xe[kMaxTile];
      for (int t = 0; t < TT; ++t) {
        xo[t] = ft.vec("x_odd");
        xe[t] = ft.vec("x_even");
        em->widen(Mem{xt[t], off, 1, 64 * j}, xo[t], xe[t]);
      }
      for (int i = 0; i < R; ++i) {
        V16 wo = ft.vec("w_odd"), we = ft.vec("w_even");
        em->widen(Mem{r[i], off, 1, 64 * j}, wo, we);
        for (int t = 0; t < TT; ++t) em->step(acc[i][t][j], wo, we, xo[t], xe[t]);
      }
    }
  }
  b.end_for();
  if (!native) b.mxcsr_set(csr);

  V np, idx, one;
  if (accs == 2) {
    np = b.i64("np");
    idx = b.i64("idx");
    one = b.imm(1, "one");
    b.andi(np, a.n, ~int64_t(63));
  }
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < TT; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < R; ++i) {
      V s = ft.reduce_add(acc[i][t][0]);
      if (accs == 2) {  // ggml_float sumf = 0; += reduce(c1); += reduce(c2); tail; (float)
        V s2 = ft.reduce_add(acc[i][t][1]);
        V sd = b.vec(128, Cls::F, "sd"), pd = b.vec(128, Cls::F, "pd");
        V hw = b.vec(128, Cls::I, "hw"), hx = b.vec(128, Cls::I, "hx");
        V p = b.vec(128, Cls::F, "p");
        b.vzero(sd);
        b.vcvt_ss_sd(pd, s);
        b.vadd_sd(sd, sd, pd);
        b.vcvt_ss_sd(pd, s2);
        b.vadd_sd(sd, sd, pd);
        b.for_(idx, np, a.n, one);
        b.vzero(hw);
        b.vzero(hx);
        b.vinsert_u16(hw, hw, Mem{r[i], idx, 2, 0}, 0);
        b.vinsert_u16(hx, hx, Mem{xt[t], idx, 2, 0}, 0);
        b.vsll_i32(hw, hw, 16);  // bf16 -> f32: the bits moved up (exact)
        b.vsll_i32(hx, hx, 16);
        b.vmul_ss(p, b.view(hw, 128, Cls::F), b.view(hx, 128, Cls::F));  // exact (8-bit mantissas)
        b.vcvt_ss_sd(pd, p);
        b.vadd_sd(sd, sd, pd);
        b.end_for();
        b.vcvt_sd_ss(s, sd);
      }
      if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, s);
      if (i > 0) b.end_if();
    }
  }
  return b.index();
}

bool build(const char* generator, Isa isa, int accs, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  int rows = 4, tokens = accs == 2 ? 1 : 6;
  if (!int_params(params, generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows < 1 || rows > kMaxTile || tokens < 1 || tokens > kMaxTile ||
      accs * rows * tokens + tokens + 1 > 32) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows, tokens in 1..{}; {}rows * "
        "tokens accumulators + tokens + 1 <= 32 zmm)",
        generator, rows, tokens, kMaxTile, accs == 2 ? "2 * " : "");
    return false;
  }
  m->isa = isa_features(isa);
  m->comment =
      accs == 2
          ? fmt::format(
                "generator {}, rows {}, tokens {}: contract linear.bf16.ggml (ggml_vec_dot_bf16 "
                "with AVX512-BF16:\nvdpbf16ps{} into c1 (elements 0..31) and c2 (32..63) of "
                "each 64, reduced and added in double, tail in double)",
                generator, rows, tokens,
                isa == Isa::Avx512Bf16 ? "" : " (emulated: FMAs under MXCSR DAZ|FTZ)")
          : fmt::format(
                "generator {}, rows {}, tokens {}: contract linear.bf16_tinyblas.ggml "
                "(tinyBLAS<32, __m512bh>:\none vdpbf16ps{} accumulator per output, reduce tree, "
                "K % 32 == 0)",
                generator, rows, tokens,
                isa == Isa::Avx512Bf16 ? "" : " (emulated: FMAs under MXCSR DAZ|FTZ)");
  Builder e = open_linear_entry(*m, m->name);
  const Grid g = token_grid(m->name, rows, tokens, [&](const std::string& fn, int t) {
    return emit_tile(*m, fn, isa, accs, rows, t);
  });
  // vec_dot: any K (tiles get K); tinyBLAS: blocks of 32 elements (tiles get K / 32).
  if (accs == 2)
    emit_linear_entry(e, g, {1, 2, 2});
  else
    emit_linear_entry(e, g, {32, 64, 64});
  return true;
}

}  // namespace

bool build_linear_bf16_avx512bf16(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_bf16__avx512bf16", Isa::Avx512Bf16, 2, p, m, err);
}
bool build_linear_bf16_tinyblas_avx512bf16(const GeneratorParams& p, kir::Module* m,
                                           std::string* err) {
  return build("linear_bf16_tinyblas__avx512bf16", Isa::Avx512Bf16, 1, p, m, err);
}
bool build_linear_bf16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_bf16__avx512", Isa::Avx512, 2, p, m, err);
}
bool build_linear_bf16_tinyblas_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_bf16_tinyblas__avx512", Isa::Avx512, 1, p, m, err);
}
bool build_linear_bf16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_bf16__avx2", Isa::Avx2, 2, p, m, err);
}
bool build_linear_bf16_tinyblas_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_bf16_tinyblas__avx2", Isa::Avx2, 1, p, m, err);
}

}  // namespace cke::jit::gen
