// layernorm generators (gen_families.h): one body for both ISA levels.
#include "jit/gen_families.h"
#include "jit/gen_lanes16.h"
#include "jit/gen_op.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract layernorm.f32.ggml (ggml NORM + MUL + ADD: mean from a double sum\n"
                   "rounded to float, variance from 16-groups of squares reduced by the\n"
                   "_mm512_reduce_add_ps tree into a double, y = fl(fl(fl(d * scale) * w) + b))",
                   m, err))
    return false;
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::F32, Kind::I64,
             Kind::I64});
  const V x = b.arg(0), w = b.arg(1), bias = b.arg(2), y = b.arg(3), n = b.arg(4), rows = b.arg(5),
          eps = b.arg(6), r0 = b.arg(7), r1 = b.arg(8);
  ret_if(b, n, Cmp::LE, 0);
  ret_unless_multiple(b, n, 16);  // outside the contract's admitted shapes: nothing written
  enter_range(b, rows, r0, r1, n, {x, y});  // rows = r1 - r0, from row r0

  Lanes16 L(b, isa);
  V nd = b.vec(128, Cls::F, "n_f64"), nf = b.vec(128, Cls::F, "n_f32"),
    one = b.vec(128, Cls::F, "one");
  b.vcvt_i64_sd(nd, n);
  b.vcvt_sd_ss(nf, nd);          // n < 2^53: one rounding, as (float) n
  b.vsplat32(one, 0x3f800000u);  // 1.0f
  V row_bytes = b.i64("row_bytes"), r = b.i64("r"), i = b.i64("i"), off = b.i64("off");
  V xr = b.ptr("xr"), yr = b.ptr("yr");
  b.muli(row_bytes, n, 4);
  b.for_(r, b.imm(0, "zero"), rows, b.imm(1, "one_i"));
  {
    b.mul(off, r, row_bytes);
    b.ptr_add(xr, x, off, 1);
    b.ptr_add(yr, y, off, 1);
    // mean = fl((float) Σ (double) x_i / (float) n)
    V sum = b.vec(128, Cls::F, "sum"), p = b.vec(128, Cls::F, "p"), pd = b.vec(128, Cls::F, "pd");
    b.vzero(sum);
    b.for_(i, b.imm(0, "zero_k"), n, b.imm(1, "one_k"));
    b.vload_ss(p, Mem{xr, i, 4, 0});
    b.vcvt_ss_sd(pd, p);
    b.vadd_sd(sum, sum, pd);
    b.end_for();
    V mean = b.vec(128, Cls::F, "mean");
    b.vcvt_sd_ss(mean, sum);
    b.vdiv_f(mean, mean, nf);  // lane 0
    const V16 mean16 = L.bcast(mean, "mean16");
    // d = x - mean into y; the squares of each 16-group reduced by the tree, summed in double.
    V var = b.vec(128, Cls::F, "var"), gd = b.vec(128, Cls::F, "gd");
    b.vzero(var);
    b.for_(i, b.imm(0, "zero_g"), row_bytes, b.imm(64, "group_bytes"));
    {
      V16 d = L.vec("d"), sq = L.vec("sq");
      L.load(d, Mem{xr, i, 1, 0});
      L.sub(d, d, mean16);
      L.store(Mem{yr, i, 1, 0}, d);
      L.mul(sq, d, d);
      const V g = L.reduce_add(sq);
      b.vcvt_ss_sd(gd, g);
      b.vadd_sd(var, var, gd);
    }
    b.end_for();
    V scale = b.vec(128, Cls::F, "scale");
    b.vdiv_sd(var, var, nd);
    b.vcvt_sd_ss(scale, var);
    b.vadd_ss(scale, scale, eps);
    b.vsqrt_ss(scale, scale);
    b.vdiv_f(scale, one, scale);  // lane 0: fl(1 / sqrt)
    const V16 s16 = L.bcast(scale, "scale16");
    b.for_(i, b.imm(0, "zero_v"), row_bytes, b.imm(64, "group_bytes_y"));
    {
      V16 v = L.vec("v"), wv = L.vec("w"), bv = L.vec("b");
      L.load(v, Mem{yr, i, 1, 0});
      L.load(wv, Mem{w, i, 1, 0});
      L.load(bv, Mem{bias, i, 1, 0});
      L.mul(v, v, s16);
      L.mul(v, v, wv);
      L.add(v, v, bv);
      L.store(Mem{yr, i, 1, 0}, v);
    }
    b.end_for();
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_layernorm_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("layernorm_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_layernorm_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("layernorm_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
