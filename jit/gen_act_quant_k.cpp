// act_quant generators beside Q8_0 (gen_act_quant_k.h): q8_K, q8_K_4x8, f16, bf16. One body
// for both ISA levels on 256-bit vectors; masks are k registers at AVX-512 and vectors at
// AVX2 (gen_masks.h).
#include "jit/gen_act_quant_k.h"

#include <fmt/format.h>

#include "jit/gen_fp16.h"
#include "jit/gen_masks.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::FCmp;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int64_t kQ8KBytes = 292;  // f32 d, 256 int8 qs, 16 int16 bsums
constexpr int32_t kQsOff = 4;
constexpr int32_t kBsumsOff = 260;

// The constants and helpers both q8_K bodies use.
struct Q8K {
  Builder& b;
  Masks M;
  V abs_mask, zero, order, ones8, ones16, big, kbase, c16, c64, magic, mant, c3fff80, c255, c128,
      sign256;
  V c127, cm127, one_f, one_i, zero_i;  // 128-bit, lane 0 is what counts

  // Constants of the bodies the kernel has: plain (quantize_row_q8_K) and / or mat (4x8).
  Q8K(Builder& builder, Isa isa, bool plain, bool mat) : b(builder), M(builder, isa) {
    auto splat = [&](int bits, Cls c, uint32_t v, const char* name) {
      V d = b.vec(bits, c, name);
      b.vsplat32(d, v);
      return d;
    };
    abs_mask = splat(256, Cls::I, 0x7fffffffu, "abs_mask");
    order = b.vec(256, Cls::I, "order");  // dwords of the packs back in element order
    b.vconst32(order, {0, 4, 1, 5, 2, 6, 3, 7});
    ones8 = splat(256, Cls::I, 0x01010101u, "ones8");
    ones16 = splat(256, Cls::I, 0x00010001u, "ones16");
    one_f = splat(128, Cls::F, 0x3f800000u, "one_f");
    one_i = splat(128, Cls::I, 1u, "one_i");
    zero_i = b.vec(128, Cls::I, "zero_i");
    b.vzero(zero_i);
    if (plain) {
      big = splat(256, Cls::I, 0x7fffffffu, "big");
      kbase = b.vec(256, Cls::I, "kbase");  // 2 * element index of lane l in vector 0
      b.vconst32(kbase, {0, 2, 4, 6, 8, 10, 12, 14});
      c16 = splat(256, Cls::I, 16u, "c16");
      c64 = splat(256, Cls::I, 64u, "c64");
      magic = splat(256, Cls::F, 0x4b400000u, "magic");  // 12582912.f = 1.5 * 2^23
      mant = splat(256, Cls::I, 0x007fffffu, "mant");
      c3fff80 = splat(256, Cls::I, 0x003fff80u, "c3fff80");  // 2^22 - 128
      c255 = splat(256, Cls::I, 255u, "c255");
      c128 = splat(256, Cls::I, 128u, "c128");
      cm127 = splat(128, Cls::F, 0xc2fe0000u, "cm127");  // -127.0f
    }
    if (mat) {
      zero = b.vec(256, Cls::F, "zero");
      b.vzero(zero);
      sign256 = splat(256, Cls::I, 0x80000000u, "sign");
      c127 = splat(128, Cls::F, 0x42fe0000u, "c127");  // 127.0f
    }
  }

  // Lane 0: the x86 maxps fold of m's 8 lanes in the Q8_0 quantizer's order: hi onto lo,
  // movehl, movehdup (maxps(m[i + 4], m[i]), then (n0, n2), (n1, n3), then (p0, p1)).
  V fold_max(V m) {
    V hi = b.vec(128, Cls::F, "hi"), n = b.vec(128, Cls::F, "n"), s = b.vec(128, Cls::F, "s");
    V t = b.vec(128, Cls::F, "t"), amax = b.vec(128, Cls::F, "amax");
    b.vextract(hi, m, 1);
    b.vmax_f(n, hi, b.view(m, 128, Cls::F));
    b.vpermil_f(s, n, 0xEE);
    b.vmax_f(s, n, s);
    b.vmovshdup(t, s);
    b.vmax_f(amax, s, t);
    return amax;
  }

  // keep (all ones iff amax != 0, i.e. its bits are not 0: amax is +0..+Inf or a NaN with the
  // sign bit clear) and id = num / amax, or +0 when amax == 0 (lane 0).
  std::pair<V, V> scale(V num, V amax) {
    V z01 = b.vec(128, Cls::I, "z01"), zm = b.vec(128, Cls::I, "zm");
    V keep = b.vec(128, Cls::I, "keep"), z = b.vec(128, Cls::F, "z");
    b.vsub_i32(z01, amax, one_i);
    b.vsrl_i32(z01, z01, 31);      // 1 iff amax == 0
    b.vsub_i32(zm, zero_i, z01);   // all ones iff amax == 0
    b.vsub_i32(keep, z01, one_i);  // all ones iff amax != 0
    b.vand(z, zm, one_f);          // 1.0f iff amax == 0
    V id = b.vec(128, Cls::F, "id");
    b.vadd_f(id, amax, z);  // amax exactly, or 1.0
    b.vdiv_f(id, num, id);
    b.vand(id, id, keep);
    return {keep, id};
  }

  // d = 1 / id, 0 where amax == 0, to the block's f32 d.
  void store_d(V yp, V id, V keep) {
    V d = b.vec(128, Cls::F, "d");
    b.vdiv_f(d, one_f, id);
    b.vand(d, d, keep);
    b.vstore_ss(Mem{yp, {}, 1, 0}, d);
  }

  // 32 int8 in element order from four vectors of int32 (elements 8v + l): saturating
  // packs, then their dwords back in order.
  V pack(const V q[4]) {
    V w01 = b.vec(256, Cls::I, "w01"), w23 = b.vec(256, Cls::I, "w23");
    V qb = b.vec(256, Cls::I, "qb");
    b.vpackss_dw(w01, q[0], q[1]);
    b.vpackss_dw(w23, q[2], q[3]);
    b.vpackss_wb(qb, w01, w23);
    b.vperm_d(qb, qb, order);
    return qb;
  }

  // The sums of the 8 quads of 32 int8 (lanes 0-3: group 2sb, 4-7: group 2sb + 1).
  V quads(V qb, int sb) {
    V w = b.vec(256, Cls::I, fmt::format("w{}", sb)),
      s = b.vec(256, Cls::I, fmt::format("qs{}", sb));
    b.vmaddubs_w(w, ones8, qb);  // 1 * q pairwise: exact int16
    b.vmadd_wd(s, w, ones16);
    return s;
  }

  // bsums[16] (int16) from the quad sums of the 8 32-element sub-blocks.
  void store_bsums(V yp, const V Q[8]) {
    V g[2];
    for (int h = 0; h < 2; ++h) {
      V a = b.vec(256, Cls::I, "ha"), c = b.vec(256, Cls::I, "hc");
      g[h] = b.vec(256, Cls::I, fmt::format("g{}", h));
      b.vhadd_i32(a, Q[4 * h], Q[4 * h + 1]);
      b.vhadd_i32(c, Q[4 * h + 2], Q[4 * h + 3]);
      b.vhadd_i32(g[h], a, c);       // [g0 g2 g4 g6 | g1 g3 g5 g7] of these 4 sub-blocks
      b.vperm_d(g[h], g[h], order);  // groups in order
    }
    V w = b.vec(256, Cls::I, "bsums"), o2 = b.vec(256, Cls::I, "order2");
    b.vpackss_dw(w, g[0], g[1]);  // exact: |sum| <= 2048
    b.vconst32(o2, {0, 1, 4, 5, 2, 3, 6, 7});
    b.vperm_d(w, w, o2);
    b.vstore(Mem{yp, {}, 1, kBsumsOff}, w);
  }

  // quantize_row_q8_K of the 256 floats at xp into the block at yp.
  void plain_block(V xp, V yp) {
    // Four independent chains (vector v in chain v % 4): each lane of a chain keeps its
    // first maximum; the keys are global, so the chains combine exactly.
    constexpr int kChains = 4;
    V m[kChains], key[kChains], kb[kChains];
    for (int c = 0; c < kChains; ++c) {
      m[c] = b.vec(256, Cls::F, fmt::format("m{}", c));
      key[c] = b.vec(256, Cls::I, fmt::format("key{}", c));
      kb[c] = b.vec(256, Cls::I, fmt::format("kb{}", c));
      b.vzero(m[c]);
      b.vcopy(key[c], big);
      if (c == 0)
        b.vcopy(kb[c], kbase);
      else
        b.vadd_i32(kb[c], kb[c - 1], c16);
    }
    V xv = b.vec(256, Cls::F, "xv"), ax = b.vec(256, Cls::F, "ax"), s = b.vec(256, Cls::I, "sb");
    V gt = M.make(256, "gt");
    for (int v = 0; v < 32; ++v) {
      const int c = v % kChains;
      b.vload(xv, Mem{xp, {}, 1, 32 * v});
      b.vand(ax, xv, abs_mask);
      M.cmp(gt, ax, m[c], FCmp::GT);  // a larger magnitude in this lane (NaN: false)
      b.vmax_f(m[c], ax, m[c]);       // NaN in ax: m
      b.vsrl_i32(s, xv, 31);
      b.vadd_i32(s, kb[c], s);  // 2 * index + sign
      M.select(key[c], gt, s, key[c]);
      if (v + kChains < 32) b.vadd_i32(kb[c], kb[c], c64);
    }
    // amax: every lane is NaN-free, so the order of the max fold does not matter.
    V mm = b.vec(256, Cls::F, "mm");
    b.vmax_f(mm, m[0], m[1]);
    for (int c = 2; c < kChains; ++c) b.vmax_f(mm, mm, m[c]);
    V amax = fold_max(mm);
    V ab = b.vec(256, Cls::F, "ab");
    b.vbcast_ss(ab, amax);
    V eq = M.make(256, "eq"), kk = b.vec(256, Cls::I, "kk"), kc = b.vec(256, Cls::I, "kc");
    for (int c = 0; c < kChains; ++c) {
      M.cmp(eq, m[c], ab, FCmp::EQ);
      M.select(c == 0 ? kk : kc, eq, key[c], big);
      if (c > 0) b.vmin_i32(kk, kk, kc);
    }
    // The smallest key: the first element of magnitude amax, its sign in bit 0.
    V hk = b.vec(128, Cls::I, "hk"), mn = b.vec(128, Cls::I, "mn"), p = b.vec(128, Cls::F, "p");
    b.vextract(hk, kk, 1);
    b.vmin_i32(mn, hk, b.view(kk, 128, Cls::I));
    b.vpermil_f(p, mn, 0xEE);
    b.vmin_i32(mn, mn, p);
    b.vmovshdup(p, mn);
    b.vmin_i32(mn, mn, p);
    V num = b.vec(128, Cls::F, "num");
    b.vsll_i32(mn, mn, 31);  // the sign of max
    b.vxor(num, mn, cm127);  // -127 / max = (-127 ^ sign) / amax
    auto [keep, id] = scale(num, amax);
    store_d(yp, id, keep);
    V idv = b.vec(256, Cls::F, "idv"), keepv = b.vec(256, Cls::I, "keepv");
    b.vbcast_ss(idv, id);
    b.vbcast_ss(keepv, keep);
    V Q[8];
    for (int sb = 0; sb < 8; ++sb) {
      V q[4];
      for (int v = 0; v < 4; ++v) {
        V x = b.vec(256, Cls::F, fmt::format("x{}", v));
        q[v] = b.vec(256, Cls::I, fmt::format("q{}", v));
        b.vload(x, Mem{xp, {}, 1, 128 * sb + 32 * v});
        b.vmul_f(x, idv, x);
        b.vadd_f(x, x, magic);            // nearest_int: v + 1.5 * 2^23 ...
        b.vand(q[v], x, mant);            // ... its mantissa - 2^22
        b.vsub_i32(q[v], q[v], c3fff80);  // q + 128
        b.vmin_i32(q[v], q[v], c255);     // min(q, 127) + 128
        b.vand(q[v], q[v], c255);         // the low byte of min(q, 127), + 128 mod 256
        b.vsub_i32(q[v], q[v], c128);     // as int8: exact through the packs
      }
      V qb = pack(q);
      b.vand(qb, qb, keepv);  // amax == 0: every quant 0
      b.vstore(Mem{yp, {}, 1, kQsOff + 32 * sb}, qb);
      Q[sb] = quads(qb, sb);
    }
    store_bsums(yp, Q);
  }

  // ggml_quantize_mat_q8_K_4x8's arithmetic for one row's block at xp.
  void mat_block(V xp, V yp) {
    V m = b.vec(256, Cls::F, "m"), prev = b.vec(256, Cls::F, "prev");
    V pos = M.make(256, "pos"), e = M.make(256, "e");
    V x[4], a[4];
    for (int v = 0; v < 4; ++v) {
      x[v] = b.vec(256, Cls::F, fmt::format("x{}", v));
      a[v] = b.vec(256, Cls::F, fmt::format("a{}", v));
    }
    for (int sb = 0; sb < 8; ++sb) {
      for (int v = 0; v < 4; ++v) {
        b.vload(x[v], Mem{xp, {}, 1, 128 * sb + 32 * v});
        b.vand(a[v], x[v], abs_mask);
      }
      if (sb == 0) {
        b.vmax_f(m, a[0], a[1]);
      } else {
        b.vcopy(prev, m);
        b.vmax_f(m, m, a[0]);
        b.vmax_f(m, m, a[1]);
      }
      b.vmax_f(m, m, a[2]);
      b.vmax_f(m, m, a[3]);
      if (sb == 0) {
        M.cmp(pos, m, x[0], FCmp::EQ);
      } else {
        M.cmp(e, prev, m, FCmp::EQ);  // cleared when the lane's max changed
        M.and_(pos, pos, e);
        M.cmp(e, m, x[0], FCmp::EQ);
        M.or_(pos, pos, e);
      }
      for (int v = 1; v < 4; ++v) {
        M.cmp(e, m, x[v], FCmp::EQ);
        M.or_(pos, pos, e);
      }
    }
    V amax = fold_max(m);
    V ab = b.vec(256, Cls::F, "ab");
    b.vbcast_ss(ab, amax);
    M.cmp(e, ab, m, FCmp::EQ);
    M.and_(e, e, pos);  // a lane holding amax saw +amax
    V sel = b.vec(256, Cls::I, "sel");
    M.select(sel, e, sign256, zero);
    V hi = b.vec(128, Cls::I, "shi"), o = b.vec(128, Cls::I, "o"), p = b.vec(128, Cls::F, "op");
    b.vextract(hi, sel, 1);
    b.vor(o, hi, b.view(sel, 128, Cls::I));
    b.vpermil_f(p, o, 0xEE);
    b.vor(o, o, p);
    b.vmovshdup(p, o);
    b.vor(o, o, p);  // lane 0: the sign bit iff negative
    V num = b.vec(128, Cls::F, "num");
    b.vor(num, o, c127);
    auto [keep, id] = scale(num, amax);
    store_d(yp, id, keep);
    V idv = b.vec(256, Cls::F, "idv");
    b.vbcast_ss(idv, id);
    V Q[8];
    for (int sb = 0; sb < 8; ++sb) {
      V q[4];
      for (int v = 0; v < 4; ++v) {
        q[v] = b.vec(256, Cls::I, fmt::format("q{}", v));
        b.vload(x[v], Mem{xp, {}, 1, 128 * sb + 32 * v});
        b.vmul_f(x[v], x[v], idv);
        b.vcvt_f32_i32_rn(q[v], x[v]);
      }
      V qb = pack(q);
      b.vstore(Mem{yp, {}, 1, kQsOff + 32 * sb}, qb);
      Q[sb] = quads(qb, sb);
    }
    store_bsums(yp, Q);
  }
};

// The entry of act_quant.rows.v1 and its guards; `block` elements per block of K.
struct RowsEntry {
  V x, y, K, T, t0, t1;
};
RowsEntry rows_entry(Builder& b, int64_t block) {
  RowsEntry r{b.arg(0), b.arg(1), b.arg(2), b.arg(3), b.arg(4), b.arg(5)};
  ret_if(b, r.K, Cmp::LE, 0);
  V rem = b.i64("krem");
  b.andi(rem, r.K, block - 1);
  ret_if(b, rem, Cmp::NE, 0);  // outside the contract's shapes: nothing written
  ret_if(b, r.t0, Cmp::LT, 0);
  ret_if(b, r.t0, Cmp::GT, r.t1);
  ret_if(b, r.t1, Cmp::GT, r.T);
  return r;
}

bool build_q8_K(const char* generator, Isa isa, bool mat, const GeneratorParams& params,
                kir::Module* m, std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      fmt::runtime(
          mat ? "generator {}: contract act_quant.q8_K_4x8.ggml (tokens t < T - T % 4: ggml's\n"
                "ggml_quantize_mat_q8_K_4x8, maxps chains and the +amax lane mask; the rest: "
                "quantize_row_q8_K)"
              : "generator {}: contract act_quant.q8_K.ggml (ggml's quantize_row_q8_K: the first\n"
                "element of the largest |x| gives the sign, iscale = -127 / max, nearest_int, "
                "bsums)"),
      generator);
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const RowsEntry r = rows_entry(b, 256);
  Q8K q(b, isa, true, mat);
  V nb = b.i64("nb"), xrow_bytes = b.i64("xrow_bytes"), yrow_bytes = b.i64("yrow_bytes");
  b.sari(nb, r.K, 8);
  b.muli(xrow_bytes, r.K, 4);
  b.muli(yrow_bytes, nb, kQ8KBytes);
  V tg = b.i64("t_gemm");
  if (mat) {  // the gemm's groups of four tokens
    V t3 = b.i64("t3");
    b.andi(t3, r.T, 3);
    b.sub(tg, r.T, t3);
  }
  V t = b.i64("t"), blk = b.i64("blk"), off = b.i64("off");
  V xrow = b.ptr("xrow"), yrow = b.ptr("yrow"), xp = b.ptr("xp"), yp = b.ptr("yp");
  b.for_(t, r.t0, r.t1, b.imm(1, "one"));
  {
    b.mul(off, t, xrow_bytes);
    b.ptr_add(xrow, r.x, off, 1);
    b.mul(off, t, yrow_bytes);
    b.ptr_add(yrow, r.y, off, 1);
    b.for_(blk, b.imm(0, "zero"), nb, b.imm(1, "one_b"));
    {
      b.ptr_add(xp, xrow, blk, 1024);
      b.ptr_add(yp, yrow, blk, kQ8KBytes);
      if (mat) {
        b.if_(t, Cmp::LT, tg);
        q.mat_block(xp, yp);
        b.end_if();
        b.if_(t, Cmp::GE, tg);
        q.plain_block(xp, yp);
        b.end_if();
      } else {
        q.plain_block(xp, yp);
      }
    }
    b.end_for();
  }
  b.end_for();
  return true;
}

// f16 / bf16: 8 floats per step over the tokens' rows, which are contiguous.
bool build_convert(const char* generator, Isa isa, bool bf16, const GeneratorParams& params,
                   kir::Module* m, std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      fmt::runtime(
          bf16 ? "generator {}: contract act_quant.bf16.ggml (ggml_compute_fp32_to_bf16: RNE on\n"
                 "the upper 16 bits, a NaN (u >> 16) | 64)"
               : "generator {}: contract act_quant.f16.ggml (vcvtps2ph RNE; a NaN as the FP16\n"
                 "library writes it, sign | 0x7e00)"),
      generator);
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const RowsEntry r = rows_entry(b, 8);
  V e0 = b.i64("e0"), e1 = b.i64("e1");
  b.mul(e0, r.t0, r.K);
  b.mul(e1, r.t1, r.K);
  if (!bf16) {
    convert_f16_range(b, isa, r.x, r.y, e0, e1);
    return true;
  }
  Masks M(b, isa);
  V i = b.i64("i");
  V x = b.vec(256, Cls::F, "x"), isn = M.make(256, "isnan");
  V one = b.vec(256, Cls::I, "one"), c7fff = b.vec(256, Cls::I, "c7fff"),
    c64 = b.vec(256, Cls::I, "c64"), o = b.vec(256, Cls::I, "order");
  b.vsplat32(one, 1u);
  b.vsplat32(c7fff, 0x7fffu);
  b.vsplat32(c64, 64u);
  b.vconst32(o, {0, 1, 4, 5, 2, 3, 6, 7});
  V hi = b.vec(256, Cls::I, "hi"), lsb = b.vec(256, Cls::I, "lsb"), rr = b.vec(256, Cls::I, "r");
  V p = b.vec(256, Cls::I, "p");
  b.for_(i, e0, e1, b.imm(8, "eight"));
  b.vload(x, Mem{r.x, i, 4, 0});
  b.vsrl_i32(hi, x, 16);
  b.vand(lsb, hi, one);
  b.vadd_i32(rr, x, c7fff);
  b.vadd_i32(rr, rr, lsb);
  b.vsrl_i32(rr, rr, 16);
  b.vor(hi, hi, c64);  // NaN: forced quiet
  M.cmp(isn, x, x, FCmp::UNORD);
  M.select(rr, isn, hi, rr);
  b.vpackus_dw(p, rr, rr);  // per 128: r0-3 r0-3 | r4-7 r4-7 (each <= 0xffff: exact)
  b.vperm_d(p, p, o);
  b.vstore(Mem{r.y, i, 2, 0}, b.view(p, 128, Cls::I));
  b.end_for();
  return true;
}

}  // namespace

bool build_act_quant_q8_K_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8_K("act_quant_q8_K__avx512", Isa::Avx512, false, p, m, err);
}
bool build_act_quant_q8_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8_K("act_quant_q8_K__avx2", Isa::Avx2, false, p, m, err);
}
bool build_act_quant_q8_K_4x8_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8_K("act_quant_q8_Kx8__avx512", Isa::Avx512, true, p, m, err);
}
bool build_act_quant_q8_K_4x8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8_K("act_quant_q8_Kx8__avx2", Isa::Avx2, true, p, m, err);
}
bool build_act_quant_f16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_convert("act_quant_f16__avx512", Isa::Avx512, false, p, m, err);
}
bool build_act_quant_f16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_convert("act_quant_f16__avx2", Isa::Avx2, false, p, m, err);
}
bool build_act_quant_bf16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_convert("act_quant_bf16__avx512", Isa::Avx512, true, p, m, err);
}
bool build_act_quant_bf16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_convert("act_quant_bf16__avx2", Isa::Avx2, true, p, m, err);
}

}  // namespace cke::jit::gen
