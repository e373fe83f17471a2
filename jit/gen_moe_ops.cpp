// moe_gather and moe_combine generators (gen_moe.h): one body per op for both ISA levels.
#include "jit/gen_lanes16.h"
#include "jit/gen_moe.h"
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

// y[j] = x[rows[j]] for pairs [j0, j1): rows of n floats copied in 16-lane groups, then the
// tail one float at a time (bits unchanged: a load and a store, no arithmetic).
bool build_gather(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                  std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract moe_gather.f32.ggml (y[j] = x[rows[j]], rows of n floats copied)", m,
                   err))
    return false;
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const V x = b.arg(0), rows = b.arg(1), y = b.arg(2), n = b.arg(3), P = b.arg(4), j0 = b.arg(5),
          j1 = b.arg(6);
  ret_if(b, n, Cmp::LE, 0);
  ret_if(b, j0, Cmp::LT, 0);
  ret_if(b, j1, Cmp::GT, P);
  Lanes16 L(b, isa);
  V row_bytes = b.i64("row_bytes"), j = b.i64("j"), t = b.i64("t"), tmp = b.i64("tmp");
  V xr = b.ptr("xr"), yr = b.ptr("yr");
  b.muli(row_bytes, n, 4);
  b.for_(j, j0, j1, b.imm(1, "one_j"));
  {
    b.load_i32(t, Mem{rows, j, 4, 0});
    b.mul(tmp, t, row_bytes);
    b.ptr_add(xr, x, tmp, 1);
    b.mul(tmp, j, row_bytes);
    b.ptr_add(yr, y, tmp, 1);
    copy_floats(L, xr, yr, n);
  }
  b.end_for();
  return true;
}

// Tokens [t0, t1): y = fl(x[pos(0)] * w0), then y = fl(y + fl(x[pos(s)] * ws)) for the slots
// in order; 16-lane groups, then the tail (the same two roundings per element).
bool build_combine(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                   std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract moe_combine.f32.ggml (y = ((x0 * w0) + x1 * w1) + ..., every "
                   "product and sum rounded,\nslots in order)",
                   m, err))
    return false;
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64,
             Kind::I64});
  const V x = b.arg(0), wts = b.arg(1), rows = b.arg(2), y = b.arg(3), n = b.arg(4),
          n_used = b.arg(5), T = b.arg(6), t0 = b.arg(7), t1 = b.arg(8);
  ret_if(b, n, Cmp::LE, 0);
  ret_if(b, n_used, Cmp::LE, 0);
  ret_if(b, t0, Cmp::LT, 0);
  ret_if(b, t1, Cmp::GT, T);
  Lanes16 L(b, isa);
  V full = b.i64("full"), end = b.i64("end"), row_bytes = b.i64("row_bytes"), off = b.i64("off"),
    i = b.i64("i"), t = b.i64("t"), sl = b.i64("slot"), k = b.i64("k"), jp = b.i64("pair"),
    tmp = b.i64("tmp");
  V xr = b.ptr("xr"), yr = b.ptr("yr"), pos = b.ptr("pos");
  b.andi(full, n, ~int64_t(15));
  b.muli(end, full, 4);
  b.muli(row_bytes, n, 4);
  b.mul(tmp, n_used, T);
  b.ptr_add(pos, rows, tmp, 4);  // rows + P: the pair of each (token, slot)
  V s = b.vec(128, Cls::F, "s"), u = b.vec(128, Cls::F, "u"), wv = b.vec(128, Cls::F, "w");
  b.for_(t, t0, t1, b.imm(1, "one_t"));
  {
    b.mul(tmp, t, row_bytes);
    b.ptr_add(yr, y, tmp, 1);
    b.for_(sl, b.imm(0, "zero_s"), n_used, b.imm(1, "one_s"));
    {
      b.mul(k, t, n_used);
      b.add(k, k, sl);
      b.load_i32(jp, Mem{pos, k, 4, 0});
      b.mul(tmp, jp, row_bytes);
      b.ptr_add(xr, x, tmp, 1);
      b.vload_ss(wv, Mem{wts, k, 4, 0});
      const V16 w16 = L.bcast(wv, "w16");
      b.for_(off, b.imm(0, "zero"), end, b.imm(64, "group_bytes"));
      {
        V16 v = L.vec("v");
        L.load(v, Mem{xr, off, 1, 0});
        L.mul(v, v, w16);
        b.if_(sl, Cmp::GT, 0);
        {
          V16 o = L.vec("o");
          L.load(o, Mem{yr, off, 1, 0});
          L.add(v, o, v);
        }
        b.end_if();
        L.store(Mem{yr, off, 1, 0}, v);
      }
      b.end_for();
      b.for_(i, full, n, b.imm(1, "one"));
      b.vload_ss(s, Mem{xr, i, 4, 0});
      b.vmul_ss(s, s, wv);
      b.if_(sl, Cmp::GT, 0);
      b.vload_ss(u, Mem{yr, i, 4, 0});
      b.vadd_ss(s, u, s);
      b.end_if();
      b.vstore_ss(Mem{yr, i, 4, 0}, s);
      b.end_for();
    }
    b.end_for();
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_moe_gather_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_gather("moe_gather_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_moe_gather_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_gather("moe_gather_f32__avx2", Isa::Avx2, p, m, err);
}
bool build_moe_combine_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_combine("moe_combine_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_moe_combine_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_combine("moe_combine_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
