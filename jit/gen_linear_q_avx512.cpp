// AVX-512 (F, BW, VL, VNNI) inner loops of the Q8_0/Q4_0 linear kernels (gen_linear_q.h).
//
// Integer part. ggml's AVX2/VNNI code (mul_sum_i8_pairs_float) turns the signed x signed
// byte products into vpdpbusd's unsigned x signed form with vpsignb: |a| times b with a's
// sign moved onto b. 512-bit vpsignb does not exist, so it is rebuilt exactly: |a| by
// vpabsb (-128 -> 0x80, read as 128 unsigned, as vpsignb gives), the sign move by 0 - b
// masked by vpmovb2m(a) (0 - (-128) wraps to -128, as vpsignb wraps). Where a
// is 0 vpsignb zeroes b; here b is kept, but |a| = 0 makes the product 0 anyway. So each
// 32-bit lane gets exactly the reference's int32 sum of 4 products (lanes::mul_sign_i8).
//   Plain / Gemv: a = weight, b = activation (the vec_dot and the repacked gemv);
//   Gemm:         a = activation, b = weight (the repacked gemm: exact products).
//
// Plain tiles (4 rows): each zmm holds two rows, 8 lanes each: lanes 0-7 are row 2p,
// lanes 8-15 row 2p+1, lane l = elements 4l..4l+3 of the 32-block, exactly ggml's 8-lane
// structure. Per block: isum by one vpdpbusd into zero, d = fl(dw * da) by one vmulps,
// acc = fma(d, float(isum), acc) by one vfmadd. At the end hsum8 per 8-lane half in
// ggml's order, ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
//
// Gemv/Gemm tiles (8 rows, q4_0 repacked arithmetic): zmm p holds rows p and p+4; the four
// vectors of int32 lanes are reduced to one ymm of the 8 rows' full block sums (integer
// adds: exact in any order), in row order, then acc = fma(float(isum), d, acc) with one
// float lane per row, as ggml's repacked kernels. The 8 weight scales of a block come
// from one dword gather.
#include <vector>

#include "jit/gen_linear_q.h"
#include "jit/gen_linear_q_tile.h"

namespace cke::jit::gen {
namespace {

using namespace asmjit;
using namespace asmjit::x86;

// Broadcasts a 32-bit constant to every dword of a new zmm.
Zmm splat32(Compiler& cc, uint32_t v) {
  Gp g = cc.newUInt32("imm");
  cc.mov(g, v);
  Zmm z = cc.newZmm("const");
  cc.vpbroadcastd(z, g);
  return z;
}

struct Consts {
  Zmm zero, nib_mask, eight;  // nib_mask / eight: q4_0 only
  KReg hi_words;              // words 8-15 and 24-31 of each 512 bits (q4_0 only)
};

Consts make_consts(Compiler& cc, QFormat f) {
  Consts c;
  c.zero = cc.newZmm("zero");
  cc.vpxord(c.zero, c.zero, c.zero);
  if (f == QFormat::Q4_0) {
    c.nib_mask = splat32(cc, 0x0F0F0F0Fu);
    c.eight = splat32(cc, 0x08080808u);
    Gp g = cc.newUInt32("mask");
    cc.mov(g, 0xFF00FF00u);
    c.hi_words = cc.newKd("hi_words");
    cc.kmovd(c.hi_words, g);
  }
  return c;
}

// The signed weight integers of block `off` of rows ra (bytes 0-31) and rb (32-63):
// q8_0 the stored bytes; q4_0 nibble - 8, low nibbles first (bytes_from_nibbles_32).
void load_weights(Compiler& cc, QFormat f, const Consts& c, const Zmm& q, const Gp& ra,
                  const Gp& rb, const Gp& off) {
  if (f == QFormat::Q8_0) {
    cc.vmovdqu8(q.ymm(), ptr(ra, off, 0, 2));
    cc.vinserti64x4(q, q, ptr(rb, off, 0, 2), 1);
    return;
  }
  // [qs_a, qs_a, qs_b, qs_b], then the second copy of each shifted right by 4.
  Zmm t = cc.newZmm("qs_b");
  cc.vbroadcasti32x4(q.ymm(), ptr(ra, off, 0, 2));
  cc.vbroadcasti32x4(t.ymm(), ptr(rb, off, 0, 2));
  cc.vinserti64x4(q, q, t.ymm(), 1);
  cc.k(c.hi_words).vpsrlw(q, q, 4);
  cc.vpandd(q, q, c.nib_mask);
  cc.vpsubb(q, q, c.eight);
}

// The two weight scales of rows ra, rb as floats: lanes 0-7 ra's, lanes 8-15 rb's.
void load_scales_pair(Compiler& cc, const Zmm& dw, const Gp& ra, const Gp& rb, const Gp& off) {
  Ymm h0 = cc.newYmm("h0");
  Xmm h1 = cc.newXmm("h1");
  cc.vpbroadcastw(h0.xmm(), word_ptr(ra, off));
  cc.vpbroadcastw(h1, word_ptr(rb, off));
  cc.vinserti32x4(h0, h0, h1, 1);
  cc.vcvtph2ps(dw, h0);
}

// sy = b with the sign of a moved onto it (vpsignb(b, a) up to a == 0, see above): a copy
// of b, negated where a < 0 by a merge-masked 0 - b. (Not vpblendmb: asmjit reads a masked
// destination as an input and would keep a dead value alive across the loop.)
void sign_move(Compiler& cc, const Zmm& sy, const KReg& a_neg, const Zmm& b, const Zmm& zero) {
  cc.vmovdqa64(sy, b);
  cc.k(a_neg).vpsubb(sy, zero, b);
}

// Lane 0 of the result: hsum8 of lanes 0-7; lane 8: hsum8 of lanes 8-15.
void hsum8_pair(Compiler& cc, const Zmm& out, const Zmm& acc) {
  Zmm s = cc.newZmmPs("s"), t = cc.newZmmPs("t");
  cc.vshuff32x4(s, acc, acc, 0xB1);  // 128-bit blocks [1, 0, 3, 2]
  cc.vaddps(s, acc, s);              // a_l + a_{l+4}
  cc.vpermilps(t, s, 0xEE);          // lanes [2, 3, 2, 3] of each block
  cc.vaddps(s, s, t);                // (a0+a4)+(a2+a6), (a1+a5)+(a3+a7)
  cc.vmovshdup(t, s);
  cc.vaddps(out, s, t);
}

Label emit_plain(Compiler& cc, QFormat f, int tokens) {
  QTileArgs a;
  FuncNode* fn = begin_q_tile(cc, a, true);
  constexpr int kPairs = 2;
  const std::vector<Gp> r = tile_rows(cc, a, 2 * kPairs);
  const Consts c = make_consts(cc, f);
  const int block_bytes = f == QFormat::Q8_0 ? 34 : 18;

  Zmm acc[kPairs][kMaxGroupTokens];
  for (int p = 0; p < kPairs; ++p)
    for (int t = 0; t < tokens; ++t) {
      acc[p][t] = cc.newZmmPs("acc");
      cc.vxorps(acc[p][t], acc[p][t], acc[p][t]);
    }
  Gp off = cc.newInt64("off"), cnt = cc.newInt64("cnt");
  Gp aq = cc.newIntPtr("aq_b"), ad = cc.newIntPtr("ad_b");
  cc.xor_(off, off);
  cc.mov(cnt, a.nb);
  cc.mov(aq, a.aq);
  cc.mov(ad, a.ad);

  Label loop = cc.newLabel();
  cc.bind(loop);
  Zmm ax[kPairs], dw[kPairs];
  KReg neg[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    Zmm q = cc.newZmm("q");
    load_weights(cc, f, c, q, r[2 * p], r[2 * p + 1], off);
    ax[p] = cc.newZmm("ax");
    cc.vpabsb(ax[p], q);
    neg[p] = cc.newKq("neg");
    cc.vpmovb2m(neg[p], q);
    dw[p] = cc.newZmmPs("dw");
    load_scales_pair(cc, dw[p], r[2 * p], r[2 * p + 1], off);
  }
  for (int t = 0; t < tokens; ++t) {
    Zmm act = cc.newZmm("act");
    cc.vbroadcasti64x4(act, ptr(aq, 32 * t));
    for (int p = 0; p < kPairs; ++p) {
      Zmm sy = cc.newZmm("sy"), isum = cc.newZmm("isum");
      sign_move(cc, sy, neg[p], act, c.zero);
      cc.vpxord(isum, isum, isum);
      cc.vpdpbusd(isum, ax[p], sy);
      Zmm fsum = cc.newZmmPs("fsum"), d = cc.newZmmPs("d");
      cc.vcvtdq2ps(fsum, isum);
      cc.vmulps(d, dw[p], dword_ptr(ad, 4 * t)._1to16());  // fl(dw * da)
      cc.vfmadd231ps(acc[p][t], d, fsum);                  // fma(d, float(isum), acc)
    }
  }
  cc.add(off, block_bytes);
  cc.add(aq, 32 * tokens);
  cc.add(ad, 4 * tokens);
  cc.dec(cnt);
  cc.jnz(loop);

  Gp yt = cc.newIntPtr("yt");
  cc.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) cc.add(yt, a.ys);
    for (int p = 0; p < kPairs; ++p) {
      Zmm h = cc.newZmmPs("h"), hi = cc.newZmmPs("hi");
      hsum8_pair(cc, h, acc[p][t]);
      cc.vextractf32x4(hi.xmm(), h, 2);
      for (int half = 0; half < 2; ++half) {
        const int row = 2 * p + half;
        Label skip = cc.newLabel();
        if (row > 0) {
          cc.cmp(a.nrows, row);
          cc.jle(skip);
        }
        cc.vmovss(dword_ptr(yt, 4 * row), half ? hi.xmm() : h.xmm());
        cc.bind(skip);
      }
    }
  }
  cc.endFunc();
  return fn->label();
}

// Four zmm of int32 lanes (zmm p: row p in lanes 0-7, row p+4 in lanes 8-15) -> one ymm of
// the eight rows' lane sums, row i in lane i.
void reduce_rows(Compiler& cc, const Ymm& out, const Zmm in[4]) {
  Zmm lo = cc.newZmm("lo"), hi = cc.newZmm("hi"), s01 = cc.newZmm("s01"), s23 = cc.newZmm("s23");
  cc.vpunpckldq(lo, in[0], in[1]);  // per 128: [a0, b0, a1, b1]
  cc.vpunpckhdq(hi, in[0], in[1]);  // [a2, b2, a3, b3]
  cc.vpaddd(s01, lo, hi);           // [a0+a2, b0+b2, a1+a3, b1+b3]
  cc.vpunpckldq(lo, in[2], in[3]);
  cc.vpunpckhdq(hi, in[2], in[3]);
  cc.vpaddd(s23, lo, hi);
  cc.vpunpcklqdq(lo, s01, s23);
  cc.vpunpckhqdq(hi, s01, s23);
  cc.vpaddd(lo, lo, hi);               // block j: [in0_j, in1_j, in2_j, in3_j] (4-lane sums)
  cc.vshufi32x4(hi, lo, lo, 0x0D);     // blocks [1, 3, ...]
  cc.vshufi32x4(lo, lo, lo, 0x08);     // blocks [0, 2, ...]
  cc.vpaddd(out, lo.ymm(), hi.ymm());  // [rows 0-3 | rows 4-7]
}

Label emit_repacked(Compiler& cc, QFormat f, QArith arith, int tokens) {
  QTileArgs a;
  FuncNode* fn = begin_q_tile(cc, a, true);
  constexpr int kRows = 8, kPairs = 4;
  const std::vector<Gp> r = tile_rows(cc, a, kRows);
  const Consts c = make_consts(cc, f);
  const int block_bytes = f == QFormat::Q8_0 ? 34 : 18;

  // Gather offsets of the tile's rows (clamped) relative to w.
  Mem idx_mem = cc.newStack(32, 32);
  for (int i = 0; i < kRows; ++i) {
    Gp o = cc.newInt64("o");
    cc.mov(o, r[i]);
    cc.sub(o, a.w);
    Mem m = idx_mem;
    m.addOffset(4 * i);
    m.setSize(4);
    cc.mov(m, o.r32());
  }
  Ymm vidx = cc.newYmm("vidx");
  cc.vmovdqu32(vidx, idx_mem);

  // Vector registers get the width they are used at: asmjit keeps the upper part of a
  // wider register alive across a partial write, which costs spills in the loop.
  Ymm acc[kMaxGroupTokens];
  for (int t = 0; t < tokens; ++t) {
    acc[t] = cc.newYmmPs("acc");
    cc.vxorps(acc[t], acc[t], acc[t]);
  }
  Gp off = cc.newInt64("off"), cnt = cc.newInt64("cnt");
  Gp aq = cc.newIntPtr("aq_b"), ad = cc.newIntPtr("ad_b"), gbase = cc.newIntPtr("gbase");
  cc.xor_(off, off);
  cc.mov(cnt, a.nb);
  cc.mov(aq, a.aq);
  cc.mov(ad, a.ad);

  Label loop = cc.newLabel();
  cc.bind(loop);
  Zmm q[kPairs], ax[kPairs];
  KReg neg[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    q[p] = cc.newZmm("q");
    load_weights(cc, f, c, q[p], r[p], r[p + 4], off);
    if (arith == QArith::Gemv) {
      ax[p] = cc.newZmm("ax");
      cc.vpabsb(ax[p], q[p]);
      neg[p] = cc.newKq("neg");
      cc.vpmovb2m(neg[p], q[p]);
    }
  }
  // The 8 weight scales: dword gather at each row's block start, low words -> f32.
  Ymm dw = cc.newYmmPs("dw"), g = cc.newYmm("g");
  Xmm h = cc.newXmm("h");
  {
    KReg all = cc.newKw("all");
    cc.kxnorw(all, all, all);
    cc.lea(gbase, ptr(a.w, off));
    cc.vpxord(g, g, g);
    cc.k(all).vpgatherdd(g, ptr(gbase, vidx));
    cc.vpmovdw(h, g);
    cc.vcvtph2ps(dw, h);
  }
  for (int t = 0; t < tokens; ++t) {
    Zmm act = cc.newZmm("act");
    cc.vbroadcasti64x4(act, ptr(aq, 32 * t));
    Zmm aax;
    KReg aneg;
    if (arith == QArith::Gemm) {
      aax = cc.newZmm("aax");
      cc.vpabsb(aax, act);
      aneg = cc.newKq("aneg");
      cc.vpmovb2m(aneg, act);
    }
    Zmm isum[kPairs];
    for (int p = 0; p < kPairs; ++p) {
      Zmm sy = cc.newZmm("sy");
      isum[p] = cc.newZmm("isum");
      cc.vpxord(isum[p], isum[p], isum[p]);
      if (arith == QArith::Gemv) {
        sign_move(cc, sy, neg[p], act, c.zero);
        cc.vpdpbusd(isum[p], ax[p], sy);
      } else {
        sign_move(cc, sy, aneg, q[p], c.zero);
        cc.vpdpbusd(isum[p], aax, sy);
      }
    }
    Ymm rows = cc.newYmm("rows"), fsum = cc.newYmmPs("fsum"), d = cc.newYmmPs("d");
    reduce_rows(cc, rows, isum);
    cc.vcvtdq2ps(fsum, rows);
    cc.vmulps(d, dw, dword_ptr(ad, 4 * t)._1to8());  // fl(dw * da)
    cc.vfmadd231ps(acc[t], fsum, d);                 // fma(float(isum), d, acc)
  }
  cc.add(off, block_bytes);
  cc.add(aq, 32 * tokens);
  cc.add(ad, 4 * tokens);
  cc.dec(cnt);
  cc.jnz(loop);

  // Store rows [0, nrows): mask 0xFF >> (8 - nrows).
  Gp m = cc.newUInt32("m"), sh = cc.newUInt32("sh");
  cc.mov(m, 0xFF);
  cc.mov(sh, 8);
  cc.sub(sh, a.nrows.r32());
  cc.shr(m, sh.r8());
  KReg store = cc.newKw("store");
  cc.kmovw(store, m);
  Gp yt = cc.newIntPtr("yt");
  cc.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) cc.add(yt, a.ys);
    cc.k(store).vmovups(ptr(yt), acc[t]);
  }
  cc.endFunc();
  return fn->label();
}

}  // namespace

Label emit_q_avx512(Compiler& cc, QFormat f, QArith a, int tokens) {
  return a == QArith::Plain ? emit_plain(cc, f, tokens) : emit_repacked(cc, f, a, tokens);
}

}  // namespace cke::jit::gen
