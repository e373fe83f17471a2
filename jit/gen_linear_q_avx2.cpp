// AVX2 (+ FMA, F16C) inner loops of the Q8_0/Q4_0 linear kernels (gen_linear_q.h).
//
// The integer part is ggml's AVX2 (non-VNNI) sequence: vpsignb moves the sign of a onto b
// and makes a unsigned, vpmaddubsw multiplies the byte pairs into int16 pair sums,
// vpmaddwd with ones adds pairs of those into int32 lanes: lane l = elements 4l..4l+3,
// the VNNI lanes the reference models. It is exact, because vpmaddubsw cannot saturate
// here: |a| <= 128 and b in [-128, 127] bound a pair sum to [-32768, 32512].
//   Plain / Gemv: a = weight, b = activation;  Gemm: a = activation, b = weight.
//
// Plain tiles: 4 rows, one ymm (8 lanes) per row and token, acc = fma(d, float(isum), acc)
// per block, hsum8 in ggml's order at the end.
// Gemv/Gemm tiles: 4 rows; the 4 rows' int32 lanes are reduced by vphaddd to one xmm of
// full block sums (exact), then acc = fma(float(isum), d, acc), one float lane per row.
#include <vector>

#include "jit/gen_linear_q.h"
#include "jit/gen_linear_q_tile.h"

namespace cke::jit::gen {
namespace {

using namespace asmjit;
using namespace asmjit::x86;

Ymm splat32(Compiler& cc, uint32_t v) {
  Gp g = cc.newUInt32("imm");
  cc.mov(g, v);
  Ymm y = cc.newYmm("const");
  cc.vmovd(y.xmm(), g);
  cc.vpbroadcastd(y, y.xmm());
  return y;
}

struct Consts {
  Ymm ones16;           // int16 1s for vpmaddwd
  Ymm nib_mask, eight;  // q4_0 only
};

Consts make_consts(Compiler& cc, QFormat f) {
  Consts c;
  c.ones16 = splat32(cc, 0x00010001u);
  if (f == QFormat::Q4_0) {
    c.nib_mask = splat32(cc, 0x0F0F0F0Fu);
    c.eight = splat32(cc, 0x08080808u);
  }
  return c;
}

// Signed weight integers of one row's block (as in gen_linear_q_avx512.cpp).
void load_weights(Compiler& cc, QFormat f, const Consts& c, const Ymm& q, const Gp& row,
                  const Gp& off) {
  if (f == QFormat::Q8_0) {
    cc.vmovdqu(q, ptr(row, off, 0, 2));
    return;
  }
  Ymm hi = cc.newYmm("hi");
  cc.vmovdqu(q.xmm(), ptr(row, off, 0, 2));
  cc.vpsrlw(hi.xmm(), q.xmm(), 4);
  cc.vinserti128(q, q, hi.xmm(), 1);
  cc.vpand(q, q, c.nib_mask);
  cc.vpsubb(q, q, c.eight);
}

// int32 lanes of sum over 4-element groups of (|a| as u8) * (b with a's sign).
void dot_lanes(Compiler& cc, const Consts& c, const Ymm& out, const Ymm& a, const Ymm& b) {
  Ymm ua = cc.newYmm("ua"), sb = cc.newYmm("sb");
  cc.vpsignb(ua, a, a);
  cc.vpsignb(sb, b, a);
  cc.vpmaddubsw(out, ua, sb);
  cc.vpmaddwd(out, out, c.ones16);
}

// hsum8 of acc into lane 0 of out: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
void hsum8(Compiler& cc, const Ymm& out, const Ymm& acc) {
  Ymm s = cc.newYmmPs("s"), t = cc.newYmmPs("t");
  cc.vextractf128(t.xmm(), acc, 1);
  cc.vaddps(s.xmm(), acc.xmm(), t.xmm());
  cc.vpermilps(t.xmm(), s.xmm(), 0xEE);
  cc.vaddps(s.xmm(), s.xmm(), t.xmm());
  cc.vmovshdup(t.xmm(), s.xmm());
  cc.vaddps(out.xmm(), s.xmm(), t.xmm());
}

Label emit_plain(Compiler& cc, QFormat f, int tokens) {
  QTileArgs a;
  FuncNode* fn = begin_q_tile(cc, a, false);
  constexpr int kRows = 4;
  const std::vector<Gp> r = tile_rows(cc, a, kRows);
  const Consts c = make_consts(cc, f);
  const int block_bytes = f == QFormat::Q8_0 ? 34 : 18;

  Ymm acc[kRows][kMaxGroupTokens];
  for (int i = 0; i < kRows; ++i)
    for (int t = 0; t < tokens; ++t) {
      acc[i][t] = cc.newYmmPs("acc");
      cc.vxorps(acc[i][t], acc[i][t], acc[i][t]);
    }
  Gp off = cc.newInt64("off"), cnt = cc.newInt64("cnt");
  Gp aq = cc.newIntPtr("aq_b"), ad = cc.newIntPtr("ad_b");
  cc.xor_(off, off);
  cc.mov(cnt, a.nb);
  cc.mov(aq, a.aq);
  cc.mov(ad, a.ad);

  Label loop = cc.newLabel();
  cc.bind(loop);
  Ymm da[kMaxGroupTokens];
  for (int t = 0; t < tokens; ++t) {
    da[t] = cc.newYmmPs("da");
    cc.vbroadcastss(da[t], dword_ptr(ad, 4 * t));
  }
  for (int i = 0; i < kRows; ++i) {
    Ymm q = cc.newYmm("q"), dw = cc.newYmmPs("dw");
    load_weights(cc, f, c, q, r[i], off);
    cc.vpbroadcastw(dw.xmm(), word_ptr(r[i], off));
    cc.vcvtph2ps(dw, dw.xmm());
    for (int t = 0; t < tokens; ++t) {
      Ymm act = cc.newYmm("act"), isum = cc.newYmm("isum");
      cc.vmovdqu(act, ptr(aq, 32 * t));
      dot_lanes(cc, c, isum, q, act);
      Ymm fsum = cc.newYmmPs("fsum"), d = cc.newYmmPs("d");
      cc.vcvtdq2ps(fsum, isum);
      cc.vmulps(d, dw, da[t]);             // fl(dw * da)
      cc.vfmadd231ps(acc[i][t], d, fsum);  // fma(d, float(isum), acc)
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
    for (int i = 0; i < kRows; ++i) {
      Ymm h = cc.newYmmPs("h");
      hsum8(cc, h, acc[i][t]);
      Label skip = cc.newLabel();
      if (i > 0) {
        cc.cmp(a.nrows, i);
        cc.jle(skip);
      }
      cc.vmovss(dword_ptr(yt, 4 * i), h.xmm());
      cc.bind(skip);
    }
  }
  cc.endFunc();
  return fn->label();
}

Label emit_repacked(Compiler& cc, QFormat f, QArith arith, int tokens) {
  QTileArgs a;
  FuncNode* fn = begin_q_tile(cc, a, false);
  constexpr int kRows = 4;
  const std::vector<Gp> r = tile_rows(cc, a, kRows);
  const Consts c = make_consts(cc, f);
  const int block_bytes = f == QFormat::Q8_0 ? 34 : 18;

  // Gather offsets of the rows relative to w, the store mask (lane i < nrows) and the
  // byte shuffle that packs the low words of 4 dwords.
  Mem consts = cc.newStack(48, 16);
  for (int i = 0; i < kRows; ++i) {
    Gp o = cc.newInt64("o");
    cc.mov(o, r[i]);
    cc.sub(o, a.w);
    Mem m = consts;
    m.addOffset(4 * i);
    m.setSize(4);
    cc.mov(m, o.r32());
    Gp v = cc.newInt32("v");
    cc.xor_(v, v);
    cc.cmp(a.nrows, i);
    Gp all = cc.newInt32("all");
    cc.mov(all, -1);
    cc.cmovg(v, all);
    m.addOffset(16);
    cc.mov(m, v);
  }
  {
    Gp k = cc.newUInt64("k");
    Mem m = consts;
    m.addOffset(32);
    m.setSize(8);
    cc.mov(k, uint64_t(0x0D0C090805040100ull));
    cc.mov(m, k);
    m.addOffset(8);
    cc.mov(k, uint64_t(0x8080808080808080ull));
    cc.mov(m, k);
  }
  Ymm vidx = cc.newYmm("vidx"), store = cc.newYmm("store"), pack = cc.newYmm("pack");
  {
    Mem m = consts;
    cc.vmovdqu(vidx.xmm(), m);
    m.addOffset(16);
    cc.vmovdqu(store.xmm(), m);
    m.addOffset(16);
    cc.vmovdqu(pack.xmm(), m);
  }

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
  Ymm q[kRows];
  for (int i = 0; i < kRows; ++i) {
    q[i] = cc.newYmm("q");
    load_weights(cc, f, c, q[i], r[i], off);
  }
  // The 4 weight scales: dword gather at each row's block start, low words -> f32.
  Ymm dw = cc.newYmmPs("dw");
  {
    Ymm g = cc.newYmm("g"), mask = cc.newYmm("mask");
    cc.lea(gbase, ptr(a.w, off));
    cc.vpcmpeqd(mask.xmm(), mask.xmm(), mask.xmm());
    cc.vpxor(g.xmm(), g.xmm(), g.xmm());
    cc.vpgatherdd(g.xmm(), ptr(gbase, vidx.xmm()), mask.xmm());
    cc.vpshufb(g.xmm(), g.xmm(), pack.xmm());
    cc.vcvtph2ps(dw.xmm(), g.xmm());
  }
  for (int t = 0; t < tokens; ++t) {
    Ymm act = cc.newYmm("act");
    cc.vmovdqu(act, ptr(aq, 32 * t));
    Ymm isum[kRows];
    for (int i = 0; i < kRows; ++i) {
      isum[i] = cc.newYmm("isum");
      if (arith == QArith::Gemv)
        dot_lanes(cc, c, isum[i], q[i], act);
      else
        dot_lanes(cc, c, isum[i], act, q[i]);
    }
    // vphaddd: per 128 lane [a0+a1, a2+a3, b0+b1, b2+b3]; twice -> [r0, r1, r2, r3] of
    // that 128-bit half; the two halves added give the full sums (exact integers).
    Ymm h01 = cc.newYmm("h01"), h23 = cc.newYmm("h23"), hi = cc.newYmm("hi");
    cc.vphaddd(h01, isum[0], isum[1]);
    cc.vphaddd(h23, isum[2], isum[3]);
    cc.vphaddd(h01, h01, h23);
    cc.vextracti128(hi.xmm(), h01, 1);
    cc.vpaddd(h01.xmm(), h01.xmm(), hi.xmm());
    Ymm fsum = cc.newYmmPs("fsum"), d = cc.newYmmPs("d");
    cc.vcvtdq2ps(fsum.xmm(), h01.xmm());
    cc.vbroadcastss(d.xmm(), dword_ptr(ad, 4 * t));
    cc.vmulps(d.xmm(), dw.xmm(), d.xmm());              // fl(dw * da)
    cc.vfmadd231ps(acc[t].xmm(), fsum.xmm(), d.xmm());  // fma(float(isum), d, acc)
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
    cc.vmaskmovps(ptr(yt), store.xmm(), acc[t].xmm());
  }
  cc.endFunc();
  return fn->label();
}

}  // namespace

Label emit_q_avx2(Compiler& cc, QFormat f, QArith a, int tokens) {
  return a == QArith::Plain ? emit_plain(cc, f, tokens) : emit_repacked(cc, f, a, tokens);
}

}  // namespace cke::jit::gen
