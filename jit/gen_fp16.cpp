// gen_fp16.h: the f32 -> f16 conversion body.
#include "jit/gen_fp16.h"

#include "jit/gen_masks.h"

namespace cke::jit::gen {

using kir::Cls;
using kir::FCmp;
using kir::Mem;
using kir::V;

void convert_f16_range(kir::Builder& b, Isa isa, V x, V y, V i0, V i1) {
  Masks M(b, isa);
  // vcvtps2ph keeps a NaN's payload; the reference writes sign | 0x7e00. So a NaN lane is
  // first replaced by sign | 0x7fc00000, which vcvtps2ph turns into exactly that.
  V sign = b.vec(256, Cls::I, "sign"), qnan = b.vec(256, Cls::I, "qnan");
  b.vsplat32(sign, 0x80000000u);
  b.vsplat32(qnan, 0x7fc00000u);
  V v = b.vec(256, Cls::F, "x"), c = b.vec(256, Cls::I, "canon"), h = b.vec(128, Cls::I, "h");
  V isn = M.make(256, "isnan");
  V i = b.i64("i"), n = b.i64("n"), full_end = b.i64("full_end");
  b.sub(n, i1, i0);
  b.andi(n, n, ~int64_t(7));
  b.add(full_end, i0, n);
  b.for_(i, i0, full_end, b.imm(8, "eight"));
  b.vload(v, Mem{x, i, 4, 0});
  M.cmp(isn, v, v, FCmp::UNORD);
  b.vand(c, v, sign);
  b.vor(c, c, qnan);
  M.select(v, isn, c, v);
  b.vcvt_f32_f16(h, v);
  b.vstore(Mem{y, i, 2, 0}, h);
  b.end_for();
  // The tail, lane 0 of the same operations.
  V s = b.vec(128, Cls::F, "x1"), sc = b.vec(128, Cls::I, "canon1"), ss = b.view(sign, 128, Cls::I),
    sq = b.view(qnan, 128, Cls::I);
  V sn = M.make(128, "isnan1");
  b.for_(i, full_end, i1, b.imm(1, "one"));
  b.vload_ss(s, Mem{x, i, 4, 0});
  M.cmp(sn, s, s, FCmp::UNORD);
  b.vand(sc, s, ss);
  b.vor(sc, sc, sq);
  M.select(s, sn, sc, s);
  b.vcvt_f32_f16(h, s);
  b.vstore_u16(Mem{y, i, 2, 0}, h, 0);
  b.end_for();
}

}  // namespace cke::jit::gen
