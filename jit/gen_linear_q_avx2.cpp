// AVX2 (+ FMA, F16C) tiles of the Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 linear kernels (gen_linear_q.h).
//
// The integer part is ggml's AVX2 (non-VNNI) sequence: vpsignb moves the sign of a onto b
// and makes a unsigned, vpmaddubsw multiplies the byte pairs into int16 pair sums,
// vpmaddwd with ones adds pairs of those into int32 lanes: lane l = elements 4l..4l+3,
// the VNNI lanes the reference models. It is exact, because vpmaddubsw cannot saturate
// here: |a| <= 128 and b in [-128, 127] bound a pair sum to [-32768, 32512].
//   Plain / Gemv: a = weight, b = activation;  Gemm: a = activation, b = weight.
// The unsigned formats (q4_1, q5_1) skip the sign move: vpmaddubsw(weight, activation) as
// ggml's mul_sum_us8_pairs_float (pair sums within [-8128, 7874]: no saturation).
// A module whose ISA lists avxvnni (the __avxvnni generators) computes the same int32 lanes
// with one AVX-VNNI vpdpbusd into zeros instead of vpmaddubsw + vpmaddwd: with no saturation
// the two are the same integers.
// q5 high bits (bytes_from_bits_32): the 32-bit qh broadcast, vpshufb sends byte e / 8 to
// byte e, AND with 1 << (e % 8), vpsignb(0x10, that) & 0x10 is 0x10 where the bit is set.
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
  bool vnni = false;        // AVX-VNNI: vpdpbusd (ymm) in place of vpmaddubsw + vpmaddwd
  V ones16;                 // int16 1s for vpmaddwd (not with vnni)
  V nib_mask, bias;         // nibble formats; bias: q4_0 8, q5_0 16
  V hb_shuf, hb_bits, c10;  // q5 high bits
};

Consts make_consts(Builder& b, const kir::Module& m, QFormat f) {
  const QFormatTraits& q = q_traits(f);
  Consts c;
  c.vnni = m.uses("avxvnni");
  if (!c.vnni) {
    c.ones16 = b.vec(256, Cls::I, "ones16");
    b.vsplat32(c.ones16, 0x00010001u);
  }
  if (q.unpack == QUnpack::Nibbles) {
    c.nib_mask = b.vec(256, Cls::I, "nib_mask");
    b.vsplat32(c.nib_mask, 0x0F0F0F0Fu);
  }
  if (q.qh_offset >= 0) {
    c.hb_shuf = b.vec(256, Cls::I, "hb_shuf");  // per 128: qh bytes [0 x8, 1 x8], [2 x8, 3 x8]
    b.vconst32(c.hb_shuf, {0, 0, 0x01010101u, 0x01010101u, 0x02020202u, 0x02020202u, 0x03030303u,
                           0x03030303u});
    c.hb_bits = b.vec(256, Cls::I, "hb_bits");  // byte e: 1 << (e % 8)
    b.vconst32(c.hb_bits, {0x08040201u, 0x80402010u, 0x08040201u, 0x80402010u, 0x08040201u,
                           0x80402010u, 0x08040201u, 0x80402010u});
    c.c10 = b.vec(256, Cls::I, "c10");
    b.vsplat32(c.c10, 0x10101010u);
  }
  if (q.bias == 16 && c.c10.valid()) {
    c.bias = c.c10;
  } else if (q.bias) {
    c.bias = b.vec(256, Cls::I, "bias");
    b.vsplat32(c.bias, 0x01010101u * uint32_t(q.bias));
  }
  return c;
}

// Weight integers of one row's block (as in gen_linear_q_avx512.cpp): q8_0 the bytes; the
// nibble formats nibble (| high bit << 4) minus the format's bias.
V load_weights(Builder& b, QFormat f, const Consts& c, V row, V off) {
  const QFormatTraits& qt = q_traits(f);
  V q = b.vec(256, Cls::I, "q");
  if (qt.unpack == QUnpack::Bytes) {
    b.vload(q, Mem{row, off, 1, qt.quants_offset});
    return q;
  }
  V lo = b.vec(256, Cls::I, "qs"), hi = b.vec(128, Cls::I, "qhi");
  b.vbcast128(lo, Mem{row, off, 1, qt.quants_offset});
  b.vsrl_i16(hi, b.view(lo, 128, Cls::I), 4);
  b.vinsert(q, lo, hi, 1);
  b.vand(q, q, c.nib_mask);
  if (qt.qh_offset >= 0) {
    V h = b.vec(256, Cls::I, "qh");
    b.vbcast_f32(h, Mem{row, off, 1, qt.qh_offset});
    b.vshuf_b(h, h, c.hb_shuf);  // byte e = qh byte e / 8
    b.vand(h, h, c.hb_bits);     // 1 << (e % 8) or 0
    b.vsign_i8(h, c.c10, h);     // 0x10 (bit 0-6), 0xF0 (bit 7) or 0
    b.vand(h, h, c.c10);         // 0x10 where the high bit is set
    b.vor(q, q, h);
  }
  if (qt.bias) b.vsub_i8(q, q, c.bias);
  return q;
}

// int32 lanes of sum over 4-element groups of x (unsigned bytes) * y (signed). With
// AVX-VNNI one vpdpbusd into zeros: the same integers, as the pair sums never saturate.
V dot_lanes_u(Builder& b, const Consts& c, V x, V y) {
  V out = b.vec(256, Cls::I, "isum");
  if (c.vnni) {
    b.vzero(out);
    b.vdpbusd(out, x, y);
    return out;
  }
  b.vmaddubs_w(out, x, y);
  b.vmadd_wd(out, out, c.ones16);
  return out;
}

// int32 lanes of sum over 4-element groups of (|a| as u8) * (b with a's sign).
V dot_lanes(Builder& b, const Consts& c, V x, V y) {
  V ua = b.vec(256, Cls::I, "ua"), sb = b.vec(256, Cls::I, "sb");
  b.vsign_i8(ua, x, x);
  b.vsign_i8(sb, y, x);
  return dot_lanes_u(b, c, ua, sb);
}

int emit_plain(kir::Module& m, const std::string& name, QFormat f, int rows, int tokens) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const std::vector<V> r = tile_rows(b, a, rows);
  const Consts c = make_consts(b, m, f);
  TokenRows tr = token_rows(b, a.a, a.as, tokens);
  const bool sign = q_traits(f).is_signed();

  V acc[4][4];
  for (int i = 0; i < rows; ++i)
    for (int t = 0; t < tokens; ++t) {
      acc[i][t] = b.vec(256, Cls::F, "acc");
      b.vzero(acc[i][t]);
    }
  MinTerm mt = open_min_term(b, f, tokens, rows);
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  min_term_block(b, f, mt, r, l.off, tr);
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
      b.vload(act, act_quants(tr, t, f));
      fma_block(b, acc[i][t], sign ? dot_lanes(b, c, q, act) : dot_lanes_u(b, c, q, act), dw,
                da[t]);
    }
  }
  close_block_loop(b, tr, f);

  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < rows; ++i) {
      V h = hsum8(b, acc[i][t]);
      if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, add_min_term(b, mt, h, i, t));
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
  const Consts c = make_consts(b, m, f);
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
    b.vload(act, act_quants(tr, t, f));
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
  close_block_loop(b, tr, f);

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
