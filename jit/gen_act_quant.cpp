// act_quant generators (gen_act_quant.h): one body for both ISA levels (256-bit vectors;
// the AVX-512 module encodes them with EVEX, so any of registers 0-31 may be used).
#include "jit/gen_act_quant.h"

#include <fmt/format.h>

#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

// v's lanes (128 bits, f32) converted to fp16 as the reference's FP16-library routine: RNE as
// vcvtps2ph, but every NaN becomes sign | 0x7e00 (no payload): a NaN (|bits| + 0x007fffff
// has the sign bit) is first made sign | 0x7fc00000, which vcvtps2ph turns into that.
V to_fp16(Builder& b, const Fp16Consts& k, V v) {
  V mag = b.vec(128, Cls::I, "mag"), nan01 = b.vec(128, Cls::I, "nan01"),
    nanm = b.vec(128, Cls::I, "nanm"), keep = b.vec(128, Cls::I, "keep"),
    qn = b.vec(128, Cls::I, "qn"), c = b.vec(128, Cls::F, "canon");
  b.vand(mag, v, k.abs128);
  b.vadd_i32(nan01, mag, k.nan_bias);
  b.vsrl_i32(nan01, nan01, 31);
  b.vsub_i32(nanm, k.zero_i, nan01);  // all ones iff v is a NaN
  b.vsub_i32(keep, nan01, k.one_i);   // all ones iff v is not a NaN
  b.vor(keep, keep, k.sign128);       // ... and the sign bit always
  b.vand(qn, k.qnan, nanm);
  b.vand(c, v, keep);
  b.vor(c, c, qn);
  V h = b.vec(128, Cls::I, "h");
  b.vcvt_f32_f16(h, c);
  return h;
}

}  // namespace

Q8Rows::Q8Rows(kir::Builder& b, const Q8Layout& lay, kir::V K) : b_(b), lay_(lay) {
  abs_mask_ = b.vec(256, Cls::I, "abs_mask");
  b.vsplat32(abs_mask_, 0x7fffffffu);
  c127_ = b.vec(128, Cls::F, "c127");
  b.vsplat32(c127_, 0x42fe0000u);  // 127.0f
  one_f_ = b.vec(128, Cls::I, "one_f");
  b.vsplat32(one_f_, 0x3f800000u);  // 1.0f
  one_i_ = b.vec(128, Cls::I, "one_i");
  b.vsplat32(one_i_, 1u);
  zero_i_ = b.vec(128, Cls::I, "zero_i");
  b.vzero(zero_i_);
  nan_bias_ = b.vec(128, Cls::I, "nan_bias");
  b.vsplat32(nan_bias_, 0x007fffffu);
  qnan_ = b.vec(128, Cls::I, "qnan");
  b.vsplat32(qnan_, 0x7fc00000u);
  fk_ = {{}, {}, one_i_, zero_i_, nan_bias_, qnan_};
  if (has_sum()) {  // s may be negative: a NaN keeps its sign
    fk_.abs128 = b.vec(128, Cls::I, "abs128");
    fk_.sign128 = b.vec(128, Cls::I, "sign128");
    b.vsplat32(fk_.abs128, 0x7fffffffu);
    b.vsplat32(fk_.sign128, 0x80000000u);
  }
  order_ = b.vec(256, Cls::I, "order");  // dwords of the packs back in element order
  b.vconst32(order_, {0, 4, 1, 5, 2, 6, 3, 7});

  nb_ = b.i64("nb");
  xrow_bytes_ = b.i64("xrow_bytes");
  yrow_bytes_ = b.i64("yrow_bytes");
  b.sari(nb_, K, 5);
  b.muli(xrow_bytes_, K, 4);
  b.muli(yrow_bytes_, nb_, lay.block_bytes);
  blk_ = b.i64("blk");
  xp_ = b.ptr("xp");
  yp_ = b.ptr("yp");
}

void Q8Rows::row(kir::V xrow, kir::V yrow) {
  Builder& b = b_;
  b.for_(blk_, b.imm(0, "zero"), nb_, b.imm(1, "one_b"));
  {
    b.ptr_add(xp_, xrow, blk_, 128);
    b.ptr_add(yp_, yrow, blk_, lay_.block_bytes);
    V v[4], a[4];
    for (int i = 0; i < 4; ++i) {
      v[i] = b.vec(256, Cls::F, fmt::format("x{}", i));
      a[i] = b.vec(256, Cls::F, fmt::format("ax{}", i));
      b.vload(v[i], Mem{xp_, {}, 1, 32 * i});
      b.vand(a[i], v[i], abs_mask_);
    }
    // m = maxps(m, |x_v|) lane-wise in vector order (maxps: a NaN in either gives the second)
    V mx = b.vec(256, Cls::F, "mx");
    b.vmax_f(mx, a[0], a[1]);
    b.vmax_f(mx, mx, a[2]);
    b.vmax_f(mx, mx, a[3]);
    V hi = b.vec(128, Cls::F, "hi"), n = b.vec(128, Cls::F, "n");
    b.vextract(hi, mx, 1);
    b.vmax_f(n, hi, b.view(mx, 128, Cls::F));  // maxps(m[i + 4], m[i])
    V s = b.vec(128, Cls::F, "s"), amax = b.vec(128, Cls::F, "amax");
    b.vpermil_f(s, n, 0xEE);  // movehl: [n2, n3, n2, n3]
    b.vmax_f(s, n, s);        // maxps(n0, n2), maxps(n1, n3)
    b.vmovshdup(amax, s);
    b.vmax_f(amax, s, amax);  // lane 0: maxps(p0, p1)
    V d = b.vec(128, Cls::F, "d");
    b.vdiv_f(d, amax, c127_);
    // amax >= +0 or a NaN with the sign bit clear: its bits are 0 iff amax == 0, and then
    // bits - 1 is the only negative value. z01 = 1 iff amax == 0.
    V z01 = b.vec(128, Cls::I, "z01"), zm = b.vec(128, Cls::I, "zm"),
      keep = b.vec(128, Cls::I, "keep"), z = b.vec(128, Cls::F, "z");
    b.vsub_i32(z01, amax, one_i_);
    b.vsrl_i32(z01, z01, 31);
    b.vsub_i32(zm, zero_i_, z01);   // all ones iff amax == 0
    b.vsub_i32(keep, z01, one_i_);  // all ones iff amax != 0
    b.vand(z, zm, one_f_);          // 1.0f iff amax == 0, else +0
    V id = b.vec(128, Cls::F, "id");
    b.vadd_f(id, amax, z);    // amax exactly, or 1.0
    b.vdiv_f(id, c127_, id);  // 127 / amax
    b.vand(id, id, keep);     // +0 iff amax == 0
    V idv = b.vec(256, Cls::F, "idv");
    b.vbcast_ss(idv, id);
    V q[4];
    for (int i = 0; i < 4; ++i) {
      V p = b.vec(256, Cls::F, fmt::format("p{}", i));
      q[i] = b.vec(256, Cls::I, fmt::format("q{}", i));
      b.vmul_f(p, v[i], idv);
      b.vcvt_f32_i32_rn(q[i], p);
    }
    V w01 = b.vec(256, Cls::I, "w01"), w23 = b.vec(256, Cls::I, "w23");
    V qb = b.vec(256, Cls::I, "qb");
    b.vpackss_dw(w01, q[0], q[1]);  // per 128: q0[0..3], q1[0..3] | q0[4..7], q1[4..7]
    b.vpackss_dw(w23, q[2], q[3]);
    b.vpackss_wb(qb, w01, w23);  // dwords: q0 q1 q2 q3 (low halves) | q0 q1 q2 q3 (high)
    b.vperm_d(qb, qb, order_);
    b.vstore(Mem{yp_, {}, 1, lay_.quants_offset}, qb);
    if (has_sum()) {
      // s = fp16(d * float(hsum_i32_8(q0 + q1 + q2 + q3))): integer sums wrap, so their
      // order is free; one float product with the unrounded d.
      V s8 = b.vec(256, Cls::I, "qsum"), s4 = b.vec(128, Cls::I, "qsum4"),
        sh = b.vec(128, Cls::I, "qsum_hi"), sf = b.vec(128, Cls::F, "qsumf"),
        sd = b.vec(128, Cls::F, "s");
      b.vadd_i32(s8, q[0], q[1]);
      b.vadd_i32(s8, s8, q[2]);
      b.vadd_i32(s8, s8, q[3]);
      b.vextract(sh, s8, 1);
      b.vadd_i32(s4, b.view(s8, 128, Cls::I), sh);
      b.vpermil_f(sh, s4, 0xEE);
      b.vadd_i32(s4, s4, sh);
      b.vpermil_f(sh, s4, 0x55);
      b.vadd_i32(s4, s4, sh);
      b.vcvt_i32_f32(sf, s4);
      b.vmul_f(sd, d, sf);
      b.vstore_u16(Mem{yp_, {}, 1, lay_.sum_offset}, to_fp16(b, fk_, sd), 0);
    }
    // The reference converts with the FP16 library's algorithm: RNE as vcvtps2ph, but
    // every NaN becomes 0x7e00 (sign | quiet, no payload). d is +0..+Inf or a NaN with
    // the sign bit clear, so NaN iff bits + 0x007fffff has the sign bit: canonicalize
    // it to 0x7fc00000, which vcvtps2ph turns into 0x7e00.
    V nan01 = b.vec(128, Cls::I, "nan01"), nanm = b.vec(128, Cls::I, "nanm"),
      finm = b.vec(128, Cls::I, "finm"), qn = b.vec(128, Cls::I, "qn");
    b.vadd_i32(nan01, d, nan_bias_);
    b.vsrl_i32(nan01, nan01, 31);
    b.vsub_i32(nanm, zero_i_, nan01);  // all ones iff d is a NaN
    b.vsub_i32(finm, nan01, one_i_);   // all ones iff d is not a NaN
    b.vand(qn, qnan_, nanm);
    b.vand(d, d, finm);
    b.vor(d, d, qn);
    V h = b.vec(128, Cls::I, "h");
    b.vcvt_f32_f16(h, d);
    b.vstore_u16(Mem{yp_, {}, 1, 0}, h, 0);
  }
  b.end_for();
}

namespace {

bool build_q8(const char* generator, const Q8Layout& lay, Isa isa, const GeneratorParams& params,
              kir::Module* m, std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  const bool q8_1 = lay.sum_offset >= 0;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}: contract {} (ggml's x86 quantize_row_q8_{}: simd amax\n"
      "fold, d = amax / 127, id = amax != 0 ? 127 / amax : 0, cvtps2dq, saturating packs;{}\n"
      "fp16 as the FP16 library: RNE, every NaN sign | 0x7e00)",
      generator, lay.contract, q8_1 ? 1 : 0,
      q8_1 ? "\ns = d * (wrapping int32 sum of the unsaturated q)," : "");
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const V x = b.arg(0), y = b.arg(1), K = b.arg(2), T = b.arg(3), t0 = b.arg(4), t1 = b.arg(5);
  ret_if(b, K, Cmp::LE, 0);
  V k32 = b.i64("k32");
  b.andi(k32, K, 31);
  ret_if(b, k32, Cmp::NE, 0);  // outside the contract's shapes: nothing written
  ret_if(b, t0, Cmp::LT, 0);
  ret_if(b, t0, Cmp::GT, t1);
  ret_if(b, t1, Cmp::GT, T);

  Q8Rows quant(b, lay, K);
  V t = b.i64("t"), off = b.i64("off"), xrow = b.ptr("xrow"), yrow = b.ptr("yrow");
  b.for_(t, t0, t1, b.imm(1, "one"));
  {
    b.mul(off, t, quant.xrow_bytes());
    b.ptr_add(xrow, x, off, 1);
    b.mul(off, t, quant.yrow_bytes());
    b.ptr_add(yrow, y, off, 1);
    quant.row(xrow, yrow);
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_act_quant_q8_0_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8("act_quant_q8_0__avx512", kQ8_0, Isa::Avx512, p, m, err);
}
bool build_act_quant_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8("act_quant_q8_0__avx2", kQ8_0, Isa::Avx2, p, m, err);
}
bool build_act_quant_q8_1_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8("act_quant_q8_1__avx512", kQ8_1, Isa::Avx512, p, m, err);
}
bool build_act_quant_q8_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q8("act_quant_q8_1__avx2", kQ8_1, Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
