// tinyBLAS on f32 copies (gen_linear_tinyblas_wide.h).
#include "jit/gen_linear_tinyblas_wide.h"

#include <fmt/format.h>

#include <vector>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

enum class Src : uint8_t { F16, BF16 };

constexpr int kMaxTile = 8;

// Vector registers of the halves tile: accumulators, a vector per token, one weight vector.
int vector_registers(int R, int TT) {
  return R * TT + TT + 1;
}

// The loop order, per call on rows [n0, n1):
//   for each panel of P rows (at most kPanelBytes of the file's weights)
//     for each chunk of C tokens (at most kChunkBytes of f32): widen it, then every row tile
//       of the panel runs every token group of the chunk.
// The panel and the copy stay in L2 (512 KiB a core on Zen 1, 1 MiB on Zen 5). Measured on
// Zen 1 with f32 panels (T = 32, one core, best of 5, GMAC/s): chunk/panel KiB 128/384 11.2,
// 64/448 11.2, 64/256 11.0, 256/256 9.9, 128/768 8.4.
constexpr int kChunkBytes = 128 * 1024;
constexpr int kPanelBytes = 384 * 1024;

struct SrcLayout {
  int block_elems;  // K elements a block (the contract's step)
  int block_bytes;  // bytes of a source block; its f32 copy is twice that
};
SrcLayout layout(Src s) {
  return s == Src::F16 ? SrcLayout{16, 32} : SrcLayout{32, 64};
}

// The f32 copy of `rows` rows of `rb` bytes at src (whole blocks), split by lane halves: a
// copy row of 2 * rb bytes is [lanes 0-7 of every 16-lane step | lanes 8-15 of every step]
// (F16: 8 elements a step and half; BF16: a block's odd pairs then its even ones, each 8
// lanes), so the halves tile (below) reads each half as one contiguous stream.
void widen(Builder& e, Src s, V src, V dst, V rows, V rb) {
  const SrcLayout l = layout(s);
  V row = e.i64("row"), off = e.i64("off"), sr = e.ptr("src_row"), d0 = e.ptr("dst_lo"),
    d1 = e.ptr("dst_hi");
  V hi;
  if (s == Src::BF16) hi = VecOf{e, 256}.splat("bf_hi", 0xffff0000u);
  e.mov(sr, src);
  e.mov(d0, dst);
  e.for_(row, e.imm(0, "zero"), rows, e.imm(1, "one"));
  e.ptr_add(d1, d0, rb, 1);  // the half streams are rb bytes each: a source block's bytes
  e.for_(off, e.imm(0, "zero"), rb, e.imm(l.block_bytes, "block_bytes"));
  for (int h = 0; h < 2; ++h) {
    const V dh = h == 0 ? d0 : d1;
    if (s == Src::F16) {  // 8 f16 -> 8 f32, in order
      V x16 = e.vec(128, Cls::I, "h16"), x32 = e.vec(256, Cls::F, "x32");
      e.vload(x16, Mem{sr, off, 1, 16 * h});
      e.vcvt_f16_f32(x32, x16);
      e.vstore(Mem{dh, off, 1, 0}, x32);
    } else {  // lanes 8h..8h+7 of the block: odd elements, then even
      V d = e.vec(256, Cls::I, "pairs"), odd = e.vec(256, Cls::I, "odd");
      e.vload(d, Mem{sr, off, 1, 32 * h});
      e.vand(odd, d, hi);
      e.vsll_i32(d, d, 16);
      e.vstore(Mem{dh, off, 1, 0}, odd);
      e.vstore(Mem{dh, off, 1, 32}, d);
    }
  }
  e.end_for();
  e.ptr_add(sr, sr, rb, 1);
  e.ptr_add(d0, d0, rb, 2);
  e.end_for();
}

// The tinyBLAS tile: R rows x TT tokens, the 16 lanes of an output as two 8-lane halves
// computed one after the other (lanes 0-7 over all of K, then lanes 8-15). A lane's FMA chain
// is the contract's, element for element; only the time at which the halves run differs,
// and they meet in the _mm512_reduce_add_ps tree (its first step adds lanes i and i + 8).
// One half at a time, R * TT ymm accumulators fit where the two-half tile held R * TT * 2:
// 4 x 3 (12 accumulators, 3 tokens, 1 weight vector) against 3 x 2.
//
// Weights are read from the file's rows as they are, widened as loaded (f16: vcvtph2ps;
// bf16: the odd pair masked, the even one shifted): a row tile's rows stay in L1 while the
// grid runs every token group of the chunk over them (4 rows of K = 2048 f16: 16 KiB), and
// each token group's activations stream from the chunk's split f32 copy in L2 (a.as bytes a
// token; lanes 8-15 a.rb bytes into the row). flush: MXCSR DAZ|FTZ around the FMAs (BF16),
// restored before the reduction.
int emit_halves_tile(kir::Module& m, const std::string& name, Src s, int R, int TT) {
  const SrcLayout l = layout(s);
  const bool flush = s == Src::BF16;
  Builder b = open_tile(m, name);
  Lanes16 ft(b, Isa::Avx2);
  const TileArgs a = begin_tile(b);
  const std::vector<V> r = tile_rows(b, a, R);
  std::vector<V> xt = tile_tokens(b, a, TT);
  // Lanes 0-7 of every output, kept while lanes 8-15 run.
  V lo = b.ptr("lo");
  b.ptr_align(lo, b.stack(32 * R * TT + 32, "lo_raw"), 32);
  V off = b.i64("off"), csr;
  if (flush) {
    csr = b.i64("mxcsr");
    b.mxcsr_flush(csr);
  }
  V acc[kMaxTile][kMaxTile];
  for (int h = 0; h < 2; ++h) {
    if (h == 1)
      for (int t = 0; t < TT; ++t) b.ptr_add(xt[t], xt[t], a.rb, 1);  // the lanes 8-15 stream
    for (int i = 0; i < R; ++i)
      for (int t = 0; t < TT; ++t) {
        acc[i][t] = b.vec(256, Cls::F, "acc");
        b.vzero(acc[i][t]);
      }
    b.for_(off, b.imm(0, "zero"), a.rb, b.imm(l.block_bytes, "block_bytes"));
    // F16: one step a block; BF16: the odd pairs' step, then the even ones'.
    const int steps = s == Src::F16 ? 1 : 2;
    for (int k = 0; k < steps; ++k) {
      V xv[kMaxTile];
      for (int t = 0; t < TT; ++t) {
        xv[t] = b.vec(256, Cls::F, "xv");
        b.vload(xv[t], Mem{xt[t], off, 1, 32 * k});
      }
      for (int i = 0; i < R; ++i) {
        V wv = b.vec(256, Cls::F, "wv");
        if (s == Src::F16) {
          V h16 = b.vec(128, Cls::I, "h16");
          b.vload(h16, Mem{r[i], off, 1, 16 * h});
          b.vcvt_f16_f32(wv, h16);
        } else {
          // Lanes 8h..8h+7: pairs (even, odd). The odd element is cleared below by two
          // shifts, not a mask: a mask register would be the 17th vector.
          b.vload(wv, Mem{r[i], off, 1, 32 * h});
          if (k == 0) b.vsrl_i32(wv, wv, 16);
          b.vsll_i32(wv, wv, 16);
        }
        for (int t = 0; t < TT; ++t) b.vfma(acc[i][t], wv, xv[t]);  // w * x + acc
      }
    }
    b.end_for();
    if (h == 0)
      for (int i = 0; i < R; ++i)
        for (int t = 0; t < TT; ++t) b.vstore(Mem{lo, {}, 1, 32 * (i * TT + t)}, acc[i][t]);
  }
  if (flush) b.mxcsr_set(csr);  // the reductions run in the default environment

  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < TT; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < R; ++i) {
      V16 v{{b.vec(256, Cls::F, "lanes_lo"), acc[i][t]}};
      b.vload(v.part[0], Mem{lo, {}, 1, 32 * (i * TT + t)});
      V sum = ft.reduce_add(v);
      if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, sum);
      if (i > 0) b.end_if();
    }
  }
  return b.index();
}

void emit_entry(Builder& e, Src s, const Grid& g) {
  const SrcLayout l = layout(s);
  const int max_blocks = kPanelBytes / (l.block_bytes * g.R);
  const auto [x, w, y, K, N, T, n0, n1, nb] = linear_entry_prologue(e, l.block_elems, max_blocks);
  V rb = e.i64("row_bytes"), rb32 = e.i64("row_bytes_f32"), ys = e.i64("y_stride");
  e.muli(rb, nb, l.block_bytes);  // weights and activations alike
  e.muli(rb32, nb, 2 * l.block_bytes);
  e.muli(ys, N, 4);
  V xb = e.ptr("x_f32");
  e.ptr_align(xb, e.stack(kChunkBytes + 64, "x_raw"), 64);
  // d = as many rows of `row` bytes as `budget` holds, in whole multiples of `unit` if one
  // fits, >= 1.
  const auto fit = [&](V d, int budget, V row, int unit, const char* name) {
    V q = e.i64(name);
    e.movi(d, budget);
    e.div(d, d, row);
    e.div(q, d, e.imm(unit, "unit"));
    e.if_(q, kir::Cmp::GT, 0);
    e.muli(d, q, unit);
    e.end_if();
    e.if_(d, kir::Cmp::LT, 1);
    e.movi(d, 1);
    e.end_if();
  };
  V C = e.i64("chunk"), P = e.i64("panel");
  fit(C, kChunkBytes, rb32, g.G, "groups");
  fit(P, kPanelBytes, rb, g.R, "tiles");  // >= R: max_blocks

  V p0 = e.i64("p0"), p1 = e.i64("p1"), t0 = e.i64("t0"), cnt = e.i64("cnt"), tmp = e.i64("tmp");
  V src = e.ptr("src"), wp = e.ptr("w_panel"), yc = e.ptr("y_chunk");
  e.for_(p0, n0, n1, P);
  {
    e.add(p1, p0, P);
    e.min(p1, p1, n1);
    e.mul(tmp, p0, rb);
    e.ptr_add(wp, w, tmp, 1);
    e.for_(t0, e.imm(0, "zero"), T, C);
    {
      e.sub(cnt, T, t0);
      e.min(cnt, cnt, C);
      e.mul(tmp, t0, rb);
      e.ptr_add(src, x, tmp, 1);
      widen(e, s, src, xb, cnt, rb);
      e.mul(tmp, t0, ys);
      e.ptr_add(yc, y, tmp, 1);
      e.ptr_add(yc, yc, p0, 4);
      emit_grid(e, g, wp, rb, p0, p1, xb, rb32, cnt, yc, ys, nb);
    }
    e.end_for();
  }
  e.end_for();
}

bool build(const char* generator, Src s, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  int rows = 4, tokens = 3;
  if (!int_params(params, generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows < 1 || rows > kMaxTile || tokens < 1 || tokens > kMaxTile ||
      vector_registers(rows, tokens) > 16) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows, tokens in 1..8; rows * tokens "
        "accumulators + tokens + 1 <= 16 vector registers)",
        generator, rows, tokens);
    return false;
  }
  m->isa = isa_features(Isa::Avx2);
  m->comment =
      s == Src::F16
          ? fmt::format(
                "generator {}, rows {}, tokens {}: contract linear.f16_tinyblas.ggml (tinyBLAS<16, "
                "__m512>:\none 16-lane FMA accumulator per output, _mm512_reduce_add_ps tree), "
                "the F32 tile on\nf32 copies of a panel of rows and a chunk of tokens",
                generator, rows, tokens)
          : fmt::format(
                "generator {}, rows {}, tokens {}: contract linear.bf16_tinyblas.ggml "
                "(tinyBLAS<32, __m512bh>:\nvdpbf16ps emulated: FMAs under MXCSR DAZ|FTZ, odd "
                "pair then even), the F32 tile on f32\ncopies ([16 odd | 16 even] a block) of a "
                "panel of rows and a chunk of tokens",
                generator, rows, tokens);
  Builder e = open_linear_entry(*m, m->name);
  const Grid g = token_grid(m->name, rows, tokens, [&](const std::string& fn, int t) {
    return emit_halves_tile(*m, fn, s, rows, t);
  });
  emit_entry(e, s, g);
  return true;
}

}  // namespace

bool build_linear_f16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                         std::string* err) {
  return build("linear_f16_tinyblas_wide__avx2", Src::F16, p, m, err);
}
bool build_linear_bf16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                          std::string* err) {
  return build("linear_bf16_tinyblas_wide__avx2", Src::BF16, p, m, err);
}

}  // namespace cke::jit::gen
