// AVX2 (+ FMA, F16C) tiles of the Q8_0/Q4_0 linear kernels (gen_linear_q.h).
//
// The integer part is ggml's AVX2 (non-VNNI) sequence: vpsignb moves the sign of a onto b
// and makes a unsigned, vpmaddubsw multiplies the byte pairs into int16 pair sums,
// vpmaddwd with ones adds pairs of those into int32 lanes: lane l = elements 4l..4l+3,
// the VNNI lanes the reference models. It is exact, because vpmaddubsw cannot saturate
// here: |a| <= 128 and b in [-128, 127] bound a pair sum to [-32768, 32512].
//   Plain / Gemv: a = weight, b = activation;  Gemm: a = activation, b = weight.
//
// Plain tiles: 1-4 rows, one ymm (8 lanes) per row and token, acc = fma(d, float(isum),
// acc) per block, hsum8 in ggml's order at the end.
// Gemv/Gemm tiles: 4 rows; the 4 rows' int32 lanes are reduced by vphaddd to one xmm of
// full block sums (exact), then acc = fma(float(isum), d, acc), one float lane per row.
#include <vector>

#include "jit/gen_linear_q.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

struct Consts {
  V ones16;           // int16 1s for vpmaddwd
  V nib_mask, eight;  // q4_0 only
};

Consts make_consts(Builder& b, QFormat f) {
  Consts c;
  c.ones16 = b.vec(256, Cls::I, "ones16");
  b.vsplat32(c.ones16, 0x00010001u);
  if (q_traits(f).unpack == QUnpack::Nibbles) {
    c.nib_mask = b.vec(256, Cls::I, "nib_mask");
    b.vsplat32(c.nib_mask, 0x0F0F0F0Fu);
    c.eight = b.vec(256, Cls::I, "eight");
    b.vsplat32(c.eight, 0x08080808u);
  }
  return c;
}

// Signed weight integers of one row's block (as in gen_linear_q_avx512.cpp).
V load_weights(Builder& b, QFormat f, const Consts& c, V row, V off) {
  V q = b.vec(256, Cls::I, "q");
  if (q_traits(f).unpack == QUnpack::Bytes) {
    b.vload(q, Mem{row, off, 1, q_traits(f).quants_offset});
    return q;
  }
  V lo = b.vec(256, Cls::I, "qs"), hi = b.vec(128, Cls::I, "qhi");
  b.vbcast128(lo, Mem{row, off, 1, q_traits(f).quants_offset});
  b.vsrl_i16(hi, b.view(lo, 128, Cls::I), 4);
  b.vinsert(q, lo, hi, 1);
  b.vand(q, q, c.nib_mask);
  b.vsub_i8(q, q, c.eight);
  return q;
}

// int32 lanes of sum over 4-element groups of (|a| as u8) * (b with a's sign).
V dot_lanes(Builder& b, const Consts& c, V x, V y) {
  V ua = b.vec(256, Cls::I, "ua"), sb = b.vec(256, Cls::I, "sb"), out = b.vec(256, Cls::I, "isum");
  b.vsign_i8(ua, x, x);
  b.vsign_i8(sb, y, x);
  b.vmaddubs_w(out, ua, sb);
  b.vmadd_wd(out, out, c.ones16);
  return out;
}

int emit_plain(kir::Module& m, const std::string& name, QFormat f, int rows, int tokens) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const std::vector<V> r = tile_rows(b, a, rows);
  const Consts c = make_consts(b, f);
  TokenRows tr = token_rows(b, a.a, a.as, tokens);

  V acc[4][4];
  for (int i = 0; i < rows; ++i)
    for (int t = 0; t < tokens; ++t) {
      acc[i][t] = b.vec(256, Cls::F, "acc");
      b.vzero(acc[i][t]);
    }
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  V da[4];
  for (int t = 0; t < tokens; ++t) {
    da[t] = act_scale(b, tr, t, 256);
  }
  for (int i = 0; i < rows; ++i) {
    V q = load_weights(b, f, c, r[i], l.off);
    V h = b.vec(128, Cls::I, "dh"), dw = b.vec(256, Cls::F, "dw");
    b.vbcast_i16(h, Mem{r[i], l.off, 1, q_traits(f).scale_offset});
    b.vcvt_f16_f32(dw, h);
    for (int t = 0; t < tokens; ++t) {
      V act = b.vec(256, Cls::I, "act");
      b.vload(act, act_quants(tr, t));
      fma_block(b, acc[i][t], dot_lanes(b, c, q, act), dw, da[t]);
    }
  }
  close_block_loop(b, tr);

  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < rows; ++i) {
      V h = hsum8(b, acc[i][t]);
      if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, h);
      if (i > 0) b.end_if();
    }
  }
  return b.index();
}

int emit_repacked(kir::Module& m, const std::string& name, QFormat f, QArith arith, int tokens) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  constexpr int kRows = 4;
  const std::vector<V> r = tile_rows(b, a, kRows);
  const Consts c = make_consts(b, f);
  TokenRows tr = token_rows(b, a.a, a.as, tokens);

  V acc[4];
  for (int t = 0; t < tokens; ++t) {
    acc[t] = b.vec(128, Cls::F, "acc");
    b.vzero(acc[t]);
  }
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  V q[kRows];
  for (int i = 0; i < kRows; ++i) q[i] = load_weights(b, f, c, r[i], l.off);
  // The 4 weight scales (fp16 at each row's block start) -> f32, row i in lane i.
  V h = b.vec(128, Cls::I, "h"), dw = b.vec(128, Cls::F, "dw");
  b.vzero(h);
  for (int i = 0; i < kRows; ++i)
    b.vinsert_u16(h, h, Mem{r[i], l.off, 1, q_traits(f).scale_offset}, i);
  b.vcvt_f16_f32(dw, h);
  for (int t = 0; t < tokens; ++t) {
    V act = b.vec(256, Cls::I, "act");
    b.vload(act, act_quants(tr, t));
    V isum[kRows];
    for (int i = 0; i < kRows; ++i)
      isum[i] = arith == QArith::Gemv ? dot_lanes(b, c, q[i], act) : dot_lanes(b, c, act, q[i]);
    // vphaddd: per 128 lane [a0+a1, a2+a3, b0+b1, b2+b3]; twice -> [r0, r1, r2, r3] of
    // that 128-bit half; the two halves added give the full sums (exact integers).
    V h01 = b.vec(256, Cls::I, "h01"), h23 = b.vec(256, Cls::I, "h23");
    V hi = b.vec(128, Cls::I, "hi"), s = b.vec(128, Cls::I, "s");
    b.vhadd_i32(h01, isum[0], isum[1]);
    b.vhadd_i32(h23, isum[2], isum[3]);
    b.vhadd_i32(h01, h01, h23);
    b.vextract(hi, h01, 1);
    b.vadd_i32(s, b.view(h01, 128, Cls::I), hi);
    fma_block(b, acc[t], s, dw, act_scale(b, tr, t, 128));
  }
  close_block_loop(b, tr);

  // Store rows [0, nrows): lane i of each token's accumulator.
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < kRows; ++i) {
      V lane = acc[t];
      if (i > 0) {
        lane = b.vec(128, Cls::F, "lane");
        b.vpermil_f(lane, acc[t], i * 0x55);
        b.if_(a.nrows, kir::Cmp::GT, i);
      }
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, lane);
      if (i > 0) b.end_if();
    }
  }
  return b.index();
}

}  // namespace

int build_q_tile_avx2(kir::Module& m, const std::string& name, QFormat f, QArith a, int rows,
                      int tokens) {
  return a == QArith::Plain ? emit_plain(m, name, f, rows, tokens)
                            : emit_repacked(m, name, f, a, tokens);
}

}  // namespace cke::jit::gen
