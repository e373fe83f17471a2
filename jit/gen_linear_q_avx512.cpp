// AVX-512 (F, BW, VL, VNNI) tiles of the Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 linear kernels
// (gen_linear_q.h).
//
// Integer part. ggml's AVX2/VNNI code (mul_sum_i8_pairs_float) turns the signed x signed
// byte products into vpdpbusd's unsigned x signed form with vpsignb: |a| times b with a's
// sign moved onto b. 512-bit vpsignb does not exist, so it is rebuilt exactly: |a| by
// vpabsb (-128 -> 0x80, read as 128 unsigned, as vpsignb gives), the sign move by 0 - b
// masked by vpmovb2m(a) (0 - (-128) wraps to -128, as vpsignb wraps). Where a is 0 vpsignb
// zeroes b; here b is kept, but |a| = 0 makes the product 0 anyway. So each 32-bit lane
// gets exactly the reference's int32 sum of 4 products (lanes::mul_sign_i8).
//   Plain / Gemv: a = weight, b = activation (the vec_dot and the repacked gemv);
//   Gemm:         a = activation, b = weight (the repacked gemm: exact products).
// The unsigned formats (q4_1, q5_1: integers 0..15 / 0..31) need no sign move: vpdpbusd of
// the weight integers against the activation, as ggml's mul_sum_us8_pairs_float.
//
// Weight unpacking: nibbles as bytes_from_nibbles_32 (low nibbles are elements 0-15); q5's
// high bits (bytes_from_bits_32) are a byte mask as they are stored: bit e of the 32-bit qh
// is element e (kmovd from memory, the two rows of a zmm joined by kunpckdq); the masked
// bytes get 16 added.
//
// Plain tiles (2 or 4 rows; q4_1 / q5_1 also 6 or 8): each zmm holds two rows, 8 lanes
// each: lanes 0-7 are row 2p, lanes 8-15 row 2p+1, lane l = elements 4l..4l+3 of the
// 32-block, exactly ggml's 8-lane structure. Per block: isum by one vpdpbusd into zero,
// d = fl(dw * da) by one vmulps, acc = fma(d, float(isum), acc) by one vfmadd. At the
// end hsum8 per 8-lane half in ggml's order, ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
//
// Gemv/Gemm tiles (8 rows, q4_0 repacked arithmetic): zmm p holds rows p and p+4; the four
// vectors of int32 lanes are reduced to one ymm of the 8 rows' full block sums (integer
// adds: exact in any order), in row order, then acc = fma(float(isum), d, acc) with one
// float lane per row, as ggml's repacked kernels. The 8 weight scales of a block are
// inserted word by word and widened by one vcvtph2ps.
#include <vector>

#include "jit/gen_linear_q.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Mem;
using kir::V;

struct Consts {
  V zero, nib_mask, eight;  // nib_mask: nibble formats; eight: q4_0
  V bias;                   // the format's bias bytes (q4_0: eight, q5_0: 16)
  V hi_words;               // mask: words 8-15 and 24-31 of each 512 bits (nibble formats)
  V minus16;                // q5 high bits: -16 bytes (a masked subtract adds 16)
};

// `packed`: for the packed offset tiles, which need neither the sign move's zero nor the
// bias bytes (their weights stay biased, the pack holds the correction).
Consts make_consts(Builder& b, QFormat f, bool packed = false) {
  const QFormatTraits& q = q_traits(f);
  Consts c;
  if (q.is_signed() && !packed) {  // the sign move's 0 - b
    c.zero = b.vec(512, Cls::I, "zero");
    b.vzero(c.zero);
  }
  if (q.unpack == QUnpack::Nibbles) {
    c.nib_mask = b.vec(512, Cls::I, "nib_mask");
    b.vsplat32(c.nib_mask, 0x0F0F0F0Fu);
    if (q.bias && !packed) {
      c.bias = c.eight = b.vec(512, Cls::I, q.bias == 8 ? "eight" : "bias");
      b.vsplat32(c.bias, 0x01010101u * uint32_t(q.bias));
    }
    c.hi_words = b.mask("hi_words");
    b.kimm(c.hi_words, 0xFF00FF00u);
  }
  if (q.qh_offset >= 0) {
    c.minus16 = b.vec(512, Cls::I, "minus16");
    b.vsplat32(c.minus16, 0xF0F0F0F0u);
  }
  return c;
}

// Mask bit e (0-31) = bit e of row ra's qh, bit 32 + e = bit e of rb's (bytes_from_bits_32):
// the two 32-bit words as masks, joined by kunpckdq.
V high_bits(Builder& b, QFormat f, V ra, V rb, V off) {
  V ka = b.mask("qha"), kb = b.mask("qhb"), k = b.mask("hbit");
  b.kload32(ka, Mem{ra, off, 1, q_traits(f).qh_offset});
  b.kload32(kb, Mem{rb, off, 1, q_traits(f).qh_offset});
  b.kunpack_dq(k, kb, ka);
  return k;
}

// The weight integers of the block at `off` of rows ra (bytes 0-31) and rb (32-63): q8_0
// the stored bytes; the nibble formats nibble (| high bit << 4), low nibbles first
// (bytes_from_nibbles_32), minus the format's bias (q4_0 8, q5_0 16) unless `biased` is
// false.
V load_weights(Builder& b, QFormat f, const Consts& c, V ra, V rb, V off, bool biased = true) {
  const QFormatTraits& qt = q_traits(f);
  V q = b.vec(512, Cls::I, "q");
  if (qt.unpack == QUnpack::Bytes) {
    V lo = b.vec(512, Cls::I, "qa"), hi = b.vec(256, Cls::I, "qb");
    b.vbcast256(lo, Mem{ra, off, 1, qt.quants_offset});
    b.vload(hi, Mem{rb, off, 1, qt.quants_offset});
    b.vinsert(q, lo, hi, 1);
    return q;
  }
  // [qs_a, qs_a, qs_b, qs_b], then the second copy of each shifted right by 4.
  V qa = b.vec(512, Cls::I, "qa"), qb = b.vec(256, Cls::I, "qb");
  b.vbcast128(qa, Mem{ra, off, 1, qt.quants_offset});
  b.vbcast128(qb, Mem{rb, off, 1, qt.quants_offset});
  b.vinsert(q, qa, qb, 1);
  b.vsrl_i16_mk(q, c.hi_words, q, 4);
  b.vand(q, q, c.nib_mask);
  if (biased && qt.bias) b.vsub_i8(q, q, c.bias);
  if (qt.qh_offset >= 0) {
    const V k = high_bits(b, f, ra, rb, off);
    b.vsub_i8_mk(q, k, q, c.minus16);  // + 16 where the high bit is set
  }
  return q;
}

// The two weight scales of rows ra, rb as floats: lanes 0-7 ra's, lanes 8-15 rb's.
V load_scales_pair(Builder& b, QFormat f, V ra, V rb, V off) {
  V h0 = b.vec(256, Cls::I, "h0"), h1 = b.vec(128, Cls::I, "h1"), h = b.vec(256, Cls::I, "h");
  b.vbcast_i16(h0, Mem{ra, off, 1, q_traits(f).scale_offset});
  b.vbcast_i16(h1, Mem{rb, off, 1, q_traits(f).scale_offset});
  b.vinsert(h, h0, h1, 1);
  V dw = b.vec(512, Cls::F, "dw");
  b.vcvt_f16_f32(dw, h);
  return dw;
}

// sy = b with the sign of a moved onto it (vpsignb(b, a) up to a == 0, see above).
V sign_move(Builder& bl, V a_neg, V b, V zero) {
  V sy = bl.vec(512, Cls::I, "sy");
  bl.vcopy(sy, b);
  bl.vsub_i8_mk(sy, a_neg, zero, b);
  return sy;
}

// Lane 0 of the result: hsum8 of lanes 0-7; lane 8: hsum8 of lanes 8-15.
V hsum8_pair(Builder& b, V acc) {
  V s = b.vec(512, Cls::F, "s"), t = b.vec(512, Cls::F, "t"), out = b.vec(512, Cls::F, "h");
  b.vshuf128(s, acc, acc, 0xB1);  // 128-bit blocks [1, 0, 3, 2]
  b.vadd_f(s, acc, s);            // a_l + a_{l+4}
  b.vpermil_f(t, s, 0xEE);        // lanes [2, 3, 2, 3] of each block
  b.vadd_f(s, s, t);              // (a0+a4)+(a2+a6), (a1+a5)+(a3+a7)
  b.vmovshdup(t, s);
  b.vadd_f(out, s, t);
  return out;
}

// The pairs' results: lane 0 of each half of hsum8_pair, rows 2p and 2p + 1, as many rows
// as the tile has valid (nrows), plus the min term (q4_1, q5_1).
void store_pairs(Builder& b, const TileArgs& a, V acc[4][4], int pairs, int tokens,
                 const MinTerm& mt = {}) {
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int p = 0; p < pairs; ++p) {
      V h = hsum8_pair(b, acc[p][t]);
      V hi = b.vec(128, Cls::F, "hi");
      b.vextract(hi, h, 2);
      V lo = b.view(h, 128, Cls::F);
      for (int half = 0; half < 2; ++half) {
        const int row = 2 * p + half;
        if (row > 0) b.if_(a.nrows, kir::Cmp::GT, row);
        b.vstore_ss(Mem{yt, {}, 1, 4 * row}, add_min_term(b, mt, half ? hi : lo, row, t));
        if (row > 0) b.end_if();
      }
    }
  }
}

int emit_plain(kir::Module& m, const std::string& name, QFormat f, int rows, int tokens) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const int pairs = rows / 2;
  const std::vector<V> r = tile_rows(b, a, rows);
  const Consts c = make_consts(b, f);
  TokenRows tr = token_rows(b, a.a, a.as, tokens);
  const bool sign = q_traits(f).is_signed();

  V acc[4][4];
  for (int p = 0; p < pairs; ++p)
    for (int t = 0; t < tokens; ++t) {
      acc[p][t] = b.vec(512, Cls::F, "acc");
      b.vzero(acc[p][t]);
    }
  MinTerm mt = open_min_term(b, f, tokens, rows);
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  V ax[4], dw[4], neg[4];
  for (int p = 0; p < pairs; ++p) {
    V q = load_weights(b, f, c, r[2 * p], r[2 * p + 1], l.off);
    if (sign) {
      ax[p] = b.vec(512, Cls::I, "ax");
      b.vabs_i8(ax[p], q);
      neg[p] = b.mask("neg");
      b.kfrom_bytes(neg[p], q);
    } else {
      ax[p] = q;  // unsigned integers: vpdpbusd takes them as they are
    }
    dw[p] = load_scales_pair(b, f, r[2 * p], r[2 * p + 1], l.off);
  }
  min_term_block(b, f, mt, r, l.off, tr);
  for (int t = 0; t < tokens; ++t) {
    V act = b.vec(512, Cls::I, "act");
    b.vbcast256(act, act_quants(tr, t, f));
    const V da = act_scale(b, tr, t, 512);
    for (int p = 0; p < pairs; ++p) {
      V isum = b.vec(512, Cls::I, "isum");
      b.vzero(isum);
      b.vdpbusd(isum, ax[p], sign ? sign_move(b, neg[p], act, c.zero) : act);
      fma_block(b, acc[p][t], isum, dw[p], da);
    }
  }
  close_block_loop(b, tr, f);
  store_pairs(b, a, acc, pairs, tokens, mt);
  return b.index();
}

// The offset tiles' exit for an activation of -128 (amin: the bytewise minimum of every
// activation the tile read): then the tile runs again as `exact`, the sign-move tile, with its
// own arguments, and returns. |min| keeps its sign bit only for -128.
void rerun_if_min8(Builder& b, V amin, int exact, const TileArgs& a) {
  V am = b.vec(512, Cls::I, "amin_abs"), k = b.mask("has_min8");
  V bits = b.i64("has_min8_bits");
  b.vabs_i8(am, amin);
  b.kfrom_bytes(k, am);
  b.kto_i64(bits, k);
  b.if_(bits, kir::Cmp::NE, 0);
  b.call(exact, {a.w, a.rb, a.nrows, a.a, a.as, a.y, a.ys, a.n});
  b.ret();
  b.end_if();
}

// Q8_0 and Q5_0 tiles of 6 or 8 rows (prefill): the weight biased to unsigned instead of
// the sign move. vpdpbusd takes u = w + bias (q8_0: w + 128, a wrapping byte add; q5_0: the
// stored 5-bit value, w + 16) against the signed activation a, and sum(u * a) - bias *
// sum(a) = sum(w * a) exactly per lane; -bias * sum(a) is made once per token and block
// (vpdpbusd of bias bytes) and shared by the pairs. Per pair and token that leaves
// vpdpbusd, cvt, the scale product and the FMA.
// ggml's sign move differs from the exact product in one case: an activation of -128 (only
// a NaN makes one) against a negative weight wraps (see the top of this file). So the tile
// keeps the smallest activation byte it met; if that was -128 it computes the tile again
// with the sign-move tile of the same shape (`exact`), whose bits are ggml's.
int emit_plain_offset(kir::Module& m, const std::string& name, QFormat f, int rows, int tokens) {
  const bool bytes = q_traits(f).unpack == QUnpack::Bytes;
  Builder b = open_tile(m, name);  // before its callee: a caller has the lower index
  const int exact = emit_plain(m, name + "_exact", f, rows, tokens);
  const TileArgs a = begin_tile(b);
  const int pairs = rows / 2;
  const std::vector<V> r = tile_rows(b, a, rows);
  const Consts c = make_consts(b, f);
  V c80 = c.bias, amin = b.vec(512, Cls::I, "amin");
  if (bytes) {
    c80 = b.vec(512, Cls::I, "c80");
    b.vsplat32(c80, 0x80808080u);
  }
  b.vsplat32(amin, 0x7F7F7F7Fu);
  TokenRows tr = token_rows(b, a.a, a.as, tokens);

  V acc[4][4];
  for (int p = 0; p < pairs; ++p)
    for (int t = 0; t < tokens; ++t) {
      acc[p][t] = b.vec(512, Cls::F, "acc");
      b.vzero(acc[p][t]);
    }
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  V u[4], dw[4];
  for (int p = 0; p < pairs; ++p) {
    if (bytes) {
      V q = load_weights(b, f, c, r[2 * p], r[2 * p + 1], l.off);
      u[p] = b.vec(512, Cls::I, "u");
      b.vsub_i8(u[p], q, c80);  // w - (-128) = w + 128 (mod 256): w biased to unsigned
    } else {
      u[p] = load_weights(b, f, c, r[2 * p], r[2 * p + 1], l.off, false);  // w + bias
    }
    dw[p] = load_scales_pair(b, f, r[2 * p], r[2 * p + 1], l.off);
  }
  for (int t = 0; t < tokens; ++t) {
    V act = b.vec(512, Cls::I, "act");
    b.vbcast256(act, act_quants(tr, t, f));
    const V da = act_scale(b, tr, t, 512);
    b.vmin_i8(amin, amin, act);
    V pos = b.vec(512, Cls::I, "corr"), ncorr = b.vec(512, Cls::I, "ncorr");
    b.vzero(pos);
    b.vdpbusd(pos, c80, act);  // bias * (sum of each lane's 4 activations)
    b.vsub_i32(ncorr, c.zero, pos);
    for (int p = 0; p < pairs; ++p) {
      V isum = b.vec(512, Cls::I, "isum");
      b.vcopy(isum, ncorr);
      b.vdpbusd(isum, u[p], act);
      fma_block(b, acc[p][t], isum, dw[p], da);
    }
  }
  close_block_loop(b, tr, f);
  rerun_if_min8(b, amin, exact, a);
  store_pairs(b, a, acc, pairs, tokens);
  return b.index();
}

// The offset tiles with activations packed once per group of 4 tokens (prefill of q8_0 and
// q5_0; contract linear.<format>.ggml, the vec_dot lanes). Per 4-token group and block the
// entry writes into a frame buffer (kOffPack bytes a block): token t's 32 quants at 32 t,
// its scale as f32 at kOffPackScale + 4 t, and at kOffPackCorr + 32 t the 8 int32 lanes
// -bias * (sum of each lane's 4 quants). A tile then reads every per-token value by a
// broadcast load, and each pair-token block is vpdpbusd into the loaded correction, cvt,
// the scale product and the FMA: the same integers and float operations as the offset tile
// (exact products), without per-tile activation work. A group with an activation of -128
// (the sign move's wrap, see emit_plain_offset) runs through the offset tile instead,
// which reruns as the sign-move tile.
constexpr int kOffRowBlock = 128;  // rows per pass over a token group (their weights stay in L2)

int emit_offset_packed_tile(kir::Module& m, const std::string& name, QFormat f, int tokens) {
  constexpr int kPairs = 4;
  const bool bytes = q_traits(f).unpack == QUnpack::Bytes;
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const std::vector<V> r = tile_rows(b, a, 2 * kPairs);
  const Consts c = make_consts(b, f, true);
  V c80;
  if (bytes) {
    c80 = b.vec(512, Cls::I, "c80");
    b.vsplat32(c80, 0x80808080u);
  }
  V acc[4][4];
  for (int p = 0; p < kPairs; ++p)
    for (int t = 0; t < tokens; ++t) {
      acc[p][t] = b.vec(512, Cls::F, "acc");
      b.vzero(acc[p][t]);
    }
  V pk = b.ptr("pk"), off = b.i64("off"), end = b.i64("end");
  b.mov(pk, a.a);
  b.muli(end, a.n, q_block_bytes(f));
  const RowPrefetch pf = row_prefetch(b, a, int(r.size()));
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(q_block_bytes(f), "block_bytes"));
  prefetch_rows(b, r, off, q_block_bytes(f), pf);
  V u[kPairs], dw[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    if (bytes) {
      V q = load_weights(b, f, c, r[2 * p], r[2 * p + 1], off);
      u[p] = b.vec(512, Cls::I, "u");
      b.vsub_i8(u[p], q, c80);  // w + 128 (mod 256): w biased to unsigned
    } else {
      u[p] = load_weights(b, f, c, r[2 * p], r[2 * p + 1], off, false);  // w + bias
    }
    dw[p] = load_scales_pair(b, f, r[2 * p], r[2 * p + 1], off);
  }
  for (int t = 0; t < tokens; ++t) {
    V act = b.vec(512, Cls::I, "act"), da = b.vec(512, Cls::F, "da");
    b.vbcast256(act, Mem{pk, {}, 1, 32 * t});
    b.vbcast_f32(da, Mem{pk, {}, 1, kOffPackScale + 4 * t});
    for (int p = 0; p < kPairs; ++p) {
      V isum = b.vec(512, Cls::I, "isum");
      b.vbcast256(isum, Mem{pk, {}, 1, kOffPackCorr + 32 * t});  // -bias * lane sums
      b.vdpbusd(isum, u[p], act);
      fma_block(b, acc[p][t], isum, dw[p], da);
    }
  }
  b.addi(pk, pk, kOffPack);
  b.end_for();
  store_pairs(b, a, acc, kPairs, tokens);
  return b.index();
}

// Four zmm of int32 lanes (zmm p: row p in lanes 0-7, row p+4 in lanes 8-15) -> one ymm of
// the eight rows' lane sums, row i in lane i.
V reduce_rows(Builder& b, const V in[4]) {
  V lo = b.vec(512, Cls::I, "lo"), hi = b.vec(512, Cls::I, "hi");
  V s01 = b.vec(512, Cls::I, "s01"), s23 = b.vec(512, Cls::I, "s23");
  b.vunpack_lo32(lo, in[0], in[1]);  // per 128: [a0, b0, a1, b1]
  b.vunpack_hi32(hi, in[0], in[1]);  // [a2, b2, a3, b3]
  b.vadd_i32(s01, lo, hi);           // [a0+a2, b0+b2, a1+a3, b1+b3]
  b.vunpack_lo32(lo, in[2], in[3]);
  b.vunpack_hi32(hi, in[2], in[3]);
  b.vadd_i32(s23, lo, hi);
  b.vunpack_lo64(lo, s01, s23);
  b.vunpack_hi64(hi, s01, s23);
  b.vadd_i32(lo, lo, hi);        // block j: [in0_j, in1_j, in2_j, in3_j] (4-lane sums)
  b.vshuf128(hi, lo, lo, 0x0D);  // blocks [1, 3, ...]
  b.vshuf128(lo, lo, lo, 0x08);  // blocks [0, 2, ...]
  V out = b.vec(256, Cls::I, "rows");
  b.vadd_i32(out, b.view(lo, 256, Cls::I), b.view(hi, 256, Cls::I));  // [rows 0-3 | 4-7]
  return out;
}

int emit_repacked(kir::Module& m, const std::string& name, QFormat f, QArith arith, int tokens) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  constexpr int kRows = 8, kPairs = 4;
  const std::vector<V> r = tile_rows(b, a, kRows);
  const Consts c = make_consts(b, f);
  TokenRows tr = token_rows(b, a.a, a.as, tokens);

  V acc[4];
  for (int t = 0; t < tokens; ++t) {
    acc[t] = b.vec(256, Cls::F, "acc");
    b.vzero(acc[t]);
  }
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  V q[kPairs], ax[kPairs], neg[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    q[p] = load_weights(b, f, c, r[p], r[p + 4], l.off);
    if (arith == QArith::Gemv) {
      ax[p] = b.vec(512, Cls::I, "ax");
      b.vabs_i8(ax[p], q[p]);
      neg[p] = b.mask("neg");
      b.kfrom_bytes(neg[p], q[p]);
    }
  }
  // The 8 weight scales (fp16 at each row's block start) -> f32, row i in lane i.
  V h = b.vec(128, Cls::I, "h"), dw = b.vec(256, Cls::F, "dw");
  b.vzero(h);
  for (int i = 0; i < kRows; ++i)
    b.vinsert_u16(h, h, Mem{r[i], l.off, 1, q_traits(f).scale_offset}, i);
  b.vcvt_f16_f32(dw, h);
  for (int t = 0; t < tokens; ++t) {
    V act = b.vec(512, Cls::I, "act");
    b.vbcast256(act, act_quants(tr, t, f));
    V aax, aneg;
    if (arith == QArith::Gemm) {
      aax = b.vec(512, Cls::I, "aax");
      b.vabs_i8(aax, act);
      aneg = b.mask("aneg");
      b.kfrom_bytes(aneg, act);
    }
    V isum[kPairs];
    for (int p = 0; p < kPairs; ++p) {
      isum[p] = b.vec(512, Cls::I, "isum");
      b.vzero(isum[p]);
      if (arith == QArith::Gemv) {
        b.vdpbusd(isum[p], ax[p], sign_move(b, neg[p], act, c.zero));
      } else {
        b.vdpbusd(isum[p], aax, sign_move(b, aneg, q[p], c.zero));
      }
    }
    const V rows = reduce_rows(b, isum);
    fma_block(b, acc[t], rows, dw, act_scale(b, tr, t, 256));
  }
  close_block_loop(b, tr, f);

  // Store rows [0, nrows).
  V store = b.mask("store");
  b.kfirst_n(store, a.nrows);
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    b.vstore_mk(Mem{yt, {}, 1, 0}, acc[t], store);
  }
  return b.index();
}

// The q4_0x8 gemv (one token per call; contract linear.q4_0x8.ggml) in the offset form:
// vpdpbusd of the unsigned nibbles against the signed activation, minus 8 * sum(a) (made once
// per block, shared by the rows), instead of ggml's sign move, which differs from the exact
// product only for an activation of -128 against a negative weight (it wraps). As the q8_0
// offset tiles: the smallest activation byte is tracked and a tile that met -128 runs again
// as the sign-move gemv (`exact`).
int emit_gemv_offset(kir::Module& m, const std::string& name, QFormat f) {
  Builder b = open_tile(m, name);  // before its callee: a caller has the lower index
  const int exact = emit_repacked(m, name + "_exact", f, QArith::Gemv, 1);
  const TileArgs a = begin_tile(b);
  constexpr int kRows = 8, kPairs = 4;
  const std::vector<V> r = tile_rows(b, a, kRows);
  const Consts c = make_consts(b, f);
  TokenRows tr = token_rows(b, a.a, a.as, 1);
  V amin = b.vec(512, Cls::I, "amin");
  b.vsplat32(amin, 0x7F7F7F7Fu);
  V acc = b.vec(256, Cls::F, "acc");
  b.vzero(acc);
  const BlockLoop l = open_block_loop(b, a, f, tr, r);
  V act = b.vec(512, Cls::I, "act");
  b.vbcast256(act, act_quants(tr, 0, f));
  b.vmin_i8(amin, amin, act);
  V pos = b.vec(512, Cls::I, "corr"), ncorr = b.vec(512, Cls::I, "ncorr");
  b.vzero(pos);
  b.vdpbusd(pos, c.eight, act);  // 8 * (sum of each lane's 4 activations)
  b.vsub_i32(ncorr, c.zero, pos);
  V isum[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    V q = load_weights(b, f, c, r[p], r[p + 4], l.off, false);
    isum[p] = b.vec(512, Cls::I, "isum");
    b.vcopy(isum[p], ncorr);
    b.vdpbusd(isum[p], q, act);  // sum (n - 8) * a per lane, exact
  }
  V h = b.vec(128, Cls::I, "h"), dw = b.vec(256, Cls::F, "dw");
  b.vzero(h);
  for (int i = 0; i < kRows; ++i)
    b.vinsert_u16(h, h, Mem{r[i], l.off, 1, q_traits(f).scale_offset}, i);
  b.vcvt_f16_f32(dw, h);
  const V rows = reduce_rows(b, isum);
  fma_block(b, acc, rows, dw, act_scale(b, tr, 0, 256));
  close_block_loop(b, tr, f);
  rerun_if_min8(b, amin, exact, a);
  V store = b.mask("store");
  b.kfirst_n(store, a.nrows);
  b.vstore_mk(Mem{a.y, {}, 1, 0}, acc, store);
  return b.index();
}

}  // namespace

void emit_offset_pack(Builder& e, QFormat f, V x, V as, V nb, V count, V pk, V amin, bool vnni) {
  const int qo = q_traits(f).act_quants_offset;
  V t = e.i64("pk_t"), blk = e.i64("pk_b"), tmp = e.i64("pk_tmp");
  V src = e.ptr("pk_src"), dq = e.ptr("pk_dq"), ds = e.ptr("pk_ds"), dc = e.ptr("pk_dc");
  const bool sums = q_traits(f).act_sum_offset >= 0;  // q4_1, q5_1: s in place of corrections
  V bias, zero, ones16;
  if (!sums) {
    bias = e.vec(256, Cls::I, "pk_bias");
    zero = e.vec(256, Cls::I, "pk_zero");
    e.vsplat32(bias, 0x01010101u *
                         uint32_t(q_traits(f).unpack == QUnpack::Bytes ? 128 : q_traits(f).bias));
    e.vzero(zero);
  }
  if (!vnni && !sums) {
    ones16 = e.vec(256, Cls::I, "pk_ones16");
    e.vsplat32(ones16, 0x00010001u);
  }
  e.for_(t, e.imm(0, "pk_zero_i"), count, e.imm(1, "pk_one"));
  {
    e.mul(tmp, t, as);
    e.ptr_add(src, x, tmp, 1);
    e.muli(tmp, t, 32);
    e.ptr_add(dq, pk, tmp, 1);
    e.ptr_add(dc, pk, tmp, 1);
    e.muli(tmp, t, 4);
    e.ptr_add(ds, pk, tmp, 1);
    e.for_(blk, e.imm(0, "pk_zero_b"), nb, e.imm(1, "pk_one_b"));
    {
      V q = e.vec(256, Cls::I, "pk_q"), s = e.vec(256, Cls::I, "pk_s");
      e.vload(q, Mem{src, {}, 1, qo});
      e.vstore(Mem{dq, {}, 1, 0}, q);
      e.vmin_i8(amin, amin, q);
      if (sums) {  // unsigned weights, no correction: the block's Q8_1 s as f32 (exact)
        V sh = e.vec(128, Cls::I, "pk_sh"), sf = e.vec(128, Cls::F, "pk_sf");
        e.vbcast_i16(sh, Mem{src, {}, 1, q_traits(f).act_sum_offset});
        e.vcvt_f16_f32(sf, sh);
        e.vstore_ss(Mem{dc, {}, 1, kOffPackCorr}, sf);
      } else {
        if (vnni) {
          e.vzero(s);
          e.vdpbusd(s, bias, q);  // bias * (sum of each lane's 4 quants)
        } else {
          e.vmaddubs_w(s, bias, q);
          e.vmadd_wd(s, s, ones16);
        }
        e.vsub_i32(s, zero, s);
        e.vstore(Mem{dc, {}, 1, kOffPackCorr}, s);
      }
      V h = e.vec(128, Cls::I, "pk_h"), d = e.vec(128, Cls::F, "pk_d");
      e.vbcast_i16(h, Mem{src, {}, 1, 0});
      e.vcvt_f16_f32(d, h);
      e.vstore_ss(Mem{ds, {}, 1, kOffPackScale}, d);
      e.addi(src, src, q_traits(f).act_block_bytes);
      e.addi(dq, dq, kOffPack);
      e.addi(dc, dc, kOffPack);
      e.addi(ds, ds, kOffPack);
    }
    e.end_for();
  }
  e.end_for();
}

int build_q_tile_avx512(kir::Module& m, const std::string& name, QFormat f, QArith a, int rows,
                        int tokens) {
  if (a == QArith::Gemv && f == QFormat::Q4_0 && tokens == 1) return emit_gemv_offset(m, name, f);
  if (a != QArith::Plain) return emit_repacked(m, name, f, a, tokens);
  return rows >= 6 && q_traits(f).is_signed() ? emit_plain_offset(m, name, f, rows, tokens)
                                              : emit_plain(m, name, f, rows, tokens);
}

void build_q_offset_packed_avx512(Builder& e, kir::Module& m, const std::string& name, QFormat f) {
  const QFormatTraits& qt = q_traits(f);
  constexpr int kRows = 8;
  // Tiles: packed for 1..4 tokens; the offset tiles (with their sign-move rerun) for groups
  // holding a -128 activation.
  int packed[kOffGroup + 1], plain[kOffGroup + 1];
  for (int k = 1; k <= kOffGroup; ++k) {
    packed[k] = emit_offset_packed_tile(m, name + "_packed" + std::to_string(k), f, k);
    plain[k] = emit_plain_offset(m, name + "_t" + std::to_string(k), f, kRows, k);
  }
  const auto [x, w, y, K, N, T, n0, n1, nb] =
      linear_entry_prologue(e, qt.block_elems, kOffsetPackedMaxBlocks);
  V rb = e.i64("row_bytes"), as = e.i64("act_stride"), ys = e.i64("y_stride"), tmp = e.i64("tmp");
  V pk = e.ptr("pack");
  e.muli(rb, nb, qt.block_bytes);
  e.muli(as, nb, qt.act_block_bytes);
  e.muli(ys, N, 4);
  e.ptr_align(pk, e.stack(int64_t(kOffsetPackedMaxBlocks) * kOffPack + 64, "pack_raw"), 64);

  // Row blocks of kOffRowBlock; per block every token group: pack, then its row tiles.
  V r0 = e.i64("r0"), r1 = e.i64("r1"), t0 = e.i64("t0"), cnt = e.i64("cnt"), n = e.i64("n");
  V rows = e.i64("rows"), xt = e.ptr("xt"), yt = e.ptr("yt"), wn = e.ptr("wn"), yn = e.ptr("yn");
  V bits = e.i64("min8_bits"), four = e.imm(kOffGroup, "four"), rstep = e.imm(kRows, "R");
  V amin = e.vec(256, Cls::I, "amin"), none = e.imm(0, "none");
  e.for_(r0, n0, n1, e.imm(kOffRowBlock, "row_block"));
  e.addi(r1, r0, kOffRowBlock);
  e.min(r1, r1, n1);
  e.for_(t0, e.imm(0, "zero"), T, four);
  {
    e.sub(cnt, T, t0);
    e.min(cnt, cnt, four);
    e.mul(tmp, t0, as);
    e.ptr_add(xt, x, tmp, 1);
    e.mul(tmp, t0, ys);
    e.ptr_add(yt, y, tmp, 1);
    e.vsplat32(amin, 0x7F7F7F7Fu);
    emit_offset_pack(e, f, xt, as, nb, cnt, pk, amin, true);
    emit_has_min8(e, amin, bits);
    for (int g = 1; g <= kOffGroup; ++g) {
      e.if_(cnt, Cmp::EQ, g);
      for (int exact = 0; exact < 2; ++exact) {
        e.if_(bits, exact ? Cmp::NE : Cmp::EQ, 0);
        e.mul(tmp, r0, rb);
        e.ptr_add(wn, w, tmp, 1);
        e.ptr_add(yn, yt, r0, 4);
        e.for_(n, r0, r1, rstep);
        e.sub(rows, r1, n);
        e.min(rows, rows, rstep);
        if (exact)
          e.call(plain[g], {wn, rb, rows, xt, as, yn, ys, nb});
        else
          e.call(packed[g], {wn, rb, rows, pk, none, yn, ys, nb});
        e.muli(tmp, rb, kRows);
        e.ptr_add(wn, wn, tmp, 1);
        e.addi(yn, yn, 4 * kRows);
        e.end_for();
        e.end_if();
      }
      e.end_if();
    }
  }
  e.end_for();
  e.end_for();
}

}  // namespace cke::jit::gen
