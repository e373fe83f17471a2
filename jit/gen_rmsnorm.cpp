// rmsnorm generators (gen_rmsnorm.h): one body for both ISA levels.
#include "jit/gen_rmsnorm.h"

#include "jit/gen_lanes16.h"
#include "jit/gen_op.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

RmsNormRows::RmsNormRows(kir::Builder& b, Isa isa, kir::V n, kir::V eps)
    : b_(b), isa_(isa), n_(n), eps_(eps) {
  nd_ = b.vec(128, Cls::F, "n_f64");
  one_ = b.vec(128, Cls::F, "one");
  b.vcvt_i64_sd(nd_, n);
  b.vsplat32(one_, 0x3f800000u);  // 1.0f
  row_bytes_ = b.i64("row_bytes");
  b.muli(row_bytes_, n, 4);
  i_ = b.i64("i");
  off_ = b.i64("off");
}

// R rows from row r: each row's double sum runs in index order (ggml's loop), but the R
// sums are independent chains, so R rows cost about one row's add latency.
void RmsNormRows::emit(kir::V x, kir::V w, kir::V y, kir::V r, int R) {
  Builder& b = b_;
  Lanes16 L(b, isa_);
  const V i = i_, off = off_, n = n_;
  V xr[4], sum[4];
  for (int k = 0; k < R; ++k) {
    xr[k] = b.ptr("xr");
    sum[k] = b.vec(128, Cls::F, "sum");
    b.addi(off, r, k);
    b.mul(off, off, row_bytes_);
    b.ptr_add(xr[k], x, off, 1);
    b.vzero(sum[k]);
  }
  b.for_(i, b.imm(0, "zero_k"), n, b.imm(1, "one_k"));
  for (int k = 0; k < R; ++k) {
    V p = b.vec(128, Cls::F, "p"), pd = b.vec(128, Cls::F, "pd");
    b.vload_ss(p, Mem{xr[k], i, 4, 0});
    b.vmul_ss(p, p, p);  // fl(x * x)
    b.vcvt_ss_sd(pd, p);
    b.vadd_sd(sum[k], sum[k], pd);
  }
  b.end_for();
  for (int k = 0; k < R; ++k) {
    V mean = b.vec(128, Cls::F, "mean"), scale = b.vec(128, Cls::F, "scale");
    b.vdiv_sd(mean, sum[k], nd_);
    b.vcvt_sd_ss(mean, mean);
    b.vadd_ss(scale, mean, eps_);
    b.vsqrt_ss(scale, scale);
    b.vdiv_f(scale, one_, scale);  // lane 0: fl(1 / sqrt)
    const V16 s16 = L.bcast(scale, "scale16");
    // Row k's output pointer made here, not with the sums: R of them live through the sum
    // loop would spill in this one.
    V yr = b.ptr("yr");
    b.addi(off, r, k);
    b.mul(off, off, row_bytes_);
    b.ptr_add(yr, y, off, 1);
    b.for_(i, b.imm(0, "zero_v"), row_bytes_, b.imm(64, "group_bytes"));
    {
      V16 v = L.vec("v"), wv = L.vec("w");
      L.load(v, Mem{xr[k], i, 1, 0});
      L.load(wv, Mem{w, i, 1, 0});
      L.mul(v, v, s16);
      L.mul(v, v, wv);
      L.store(Mem{yr, i, 1, 0}, v);
    }
    b.end_for();
  }
}

namespace {

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!op_prologue(
          params, generator, isa,
          "contract rmsnorm.f32.ggml (ggml RMS_NORM + MUL: a double sum of the\n"
          "float squares in index order, scale = 1 / sqrtf(mean + eps), y = fl(fl(x * scale) * w))",
          m, err))
    return false;
  Builder b(
      *m, m->name,
      {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::F32, Kind::I64, Kind::I64});
  const V x = b.arg(0), w = b.arg(1), y = b.arg(2), n = b.arg(3), rows = b.arg(4), eps = b.arg(5),
          r0 = b.arg(6), r1 = b.arg(7);
  ret_if(b, n, Cmp::LE, 0);
  ret_unless_multiple(b, n, 16);  // outside the contract's admitted shapes: nothing written
  enter_range(b, rows, r0, r1, n, {x, y});  // rows = r1 - r0, from row r0

  RmsNormRows norm(b, isa, n, eps);
  V r = b.i64("r"), rows4 = b.i64("rows4");
  b.andi(rows4, rows, ~int64_t(3));
  b.for_(r, b.imm(0, "zero"), rows4, b.imm(4, "four"));
  norm.emit(x, w, y, r, 4);
  b.end_for();
  b.for_(r, rows4, rows, b.imm(1, "one_i"));
  norm.emit(x, w, y, r, 1);
  b.end_for();
  return true;
}

}  // namespace

bool build_rmsnorm_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rmsnorm_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_rmsnorm_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rmsnorm_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
