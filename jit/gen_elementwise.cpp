// add and kv_store generators (gen_elementwise.h): one body per op for both ISA levels.
#include "jit/gen_elementwise.h"

#include "jit/gen_fp16.h"
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

bool build_add(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
               std::string* err) {
  if (!op_prologue(params, generator, isa, "contract add.f32.ggml (y = fl(a + b) per element)", m,
                   err))
    return false;
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64});
  const V a = b.arg(0), x = b.arg(1), y = b.arg(2), n = b.arg(3), i0 = b.arg(4), i1 = b.arg(5);
  enter_range(b, n, i0, i1, b.imm(1, "one_elem"), {a, x, y});  // n = i1 - i0 from element i0
  Lanes16 L(b, isa);
  V full = b.i64("full"), end = b.i64("end"), off = b.i64("off"), i = b.i64("i");
  b.andi(full, n, ~int64_t(15));
  b.muli(end, full, 4);
  b.for_(off, b.imm(0, "zero"), end, b.imm(64, "group_bytes"));
  {
    V16 va = L.vec("va"), vb = L.vec("vb");
    L.load(va, Mem{a, off, 1, 0});
    L.load(vb, Mem{x, off, 1, 0});
    L.add(va, va, vb);
    L.store(Mem{y, off, 1, 0}, va);
  }
  b.end_for();
  V s = b.vec(128, Cls::F, "s"), t = b.vec(128, Cls::F, "t");
  b.for_(i, full, n, b.imm(1, "one"));
  b.vload_ss(s, Mem{a, i, 4, 0});
  b.vload_ss(t, Mem{x, i, 4, 0});
  b.vadd_ss(s, s, t);
  b.vstore_ss(Mem{y, i, 4, 0}, s);
  b.end_for();
  return true;
}

// y[t][i] = fl(x[t][i] + b[i]): per token row, 16-lane groups, then the row's tail.
bool build_add_bias(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                    std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract add_bias.f32.ggml (y[t][i] = fl(x[t][i] + b[i]))", m, err))
    return false;
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const V x = b.arg(0), bias = b.arg(1), y = b.arg(2), n = b.arg(3), T = b.arg(4), t0 = b.arg(5),
          t1 = b.arg(6);
  ret_if(b, n, Cmp::LE, 0);
  enter_range(b, T, t0, t1, n, {x, y});  // T = t1 - t0, from token t0
  Lanes16 L(b, isa);
  V full = b.i64("full"), end = b.i64("end"), row_bytes = b.i64("row_bytes"), off = b.i64("off"),
    i = b.i64("i"), t = b.i64("t");
  V xr = b.ptr("xr"), yr = b.ptr("yr");
  b.andi(full, n, ~int64_t(15));
  b.muli(end, full, 4);
  b.muli(row_bytes, n, 4);
  b.mov(xr, x);
  b.mov(yr, y);
  V s = b.vec(128, Cls::F, "s"), u = b.vec(128, Cls::F, "u");
  b.for_(t, b.imm(0, "zero_t"), T, b.imm(1, "one_t"));
  {
    b.for_(off, b.imm(0, "zero"), end, b.imm(64, "group_bytes"));
    {
      V16 va = L.vec("vx"), vb = L.vec("vb");
      L.load(va, Mem{xr, off, 1, 0});
      L.load(vb, Mem{bias, off, 1, 0});
      L.add(va, va, vb);
      L.store(Mem{yr, off, 1, 0}, va);
    }
    b.end_for();
    b.for_(i, full, n, b.imm(1, "one"));
    b.vload_ss(s, Mem{xr, i, 4, 0});
    b.vload_ss(u, Mem{bias, i, 4, 0});
    b.vadd_ss(s, s, u);
    b.vstore_ss(Mem{yr, i, 4, 0}, s);
    b.end_for();
    b.ptr_add(xr, xr, row_bytes, 1);
    b.ptr_add(yr, yr, row_bytes, 1);
  }
  b.end_for();
  return true;
}

// y = fl(x * s) over elements [i0, i1) of n: 16-lane groups, then the tail.
bool build_scale(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                 std::string* err) {
  if (!op_prologue(params, generator, isa, "contract scale.f32.ggml (y = fl(x * s))", m, err))
    return false;
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::F32, Kind::I64, Kind::I64});
  const V x = b.arg(0), y = b.arg(1), n = b.arg(2), sc = b.arg(3), i0 = b.arg(4), i1 = b.arg(5);
  enter_range(b, n, i0, i1, b.imm(1, "one_elem"), {x, y});  // n = i1 - i0 from element i0
  Lanes16 L(b, isa);
  const V16 s16 = L.bcast(sc, "s16");
  V full = b.i64("full"), end = b.i64("end"), off = b.i64("off"), i = b.i64("i");
  b.andi(full, n, ~int64_t(15));
  b.muli(end, full, 4);
  b.for_(off, b.imm(0, "zero"), end, b.imm(64, "group_bytes"));
  {
    V16 v = L.vec("v");
    L.load(v, Mem{x, off, 1, 0});
    L.mul(v, v, s16);
    L.store(Mem{y, off, 1, 0}, v);
  }
  b.end_for();
  V s = b.vec(128, Cls::F, "s");
  b.for_(i, full, n, b.imm(1, "one"));
  b.vload_ss(s, Mem{x, i, 4, 0});
  b.vmul_ss(s, s, sc);
  b.vstore_ss(Mem{y, i, 4, 0}, s);
  b.end_for();
  return true;
}

// The kv_store ABI's arguments; as the reference, a call outside the cache writes nothing.
// Then tokens [t0, t1) of T: k and v move on t0 rows, pos0 by t0, and T = t1 - t0.
struct KvStoreArgs {
  V k, v, kc, vc, kv, nctx, pos0, T;
};
KvStoreArgs kv_store_entry(Builder& b) {
  const KvStoreArgs a{b.arg(0), b.arg(1), b.arg(2), b.arg(3),
                      b.arg(4), b.arg(5), b.arg(6), b.arg(7)};
  const V t0 = b.arg(8), t1 = b.arg(9);
  ret_if(b, a.pos0, Cmp::LT, 0);
  ret_if(b, a.T, Cmp::LE, 0);
  V end = b.i64("end");
  b.add(end, a.pos0, a.T);
  b.if_(end, Cmp::GT, a.nctx);
  b.ret();
  b.end_if();
  enter_range(b, a.T, t0, t1, a.kv, {a.k, a.v});
  b.add(a.pos0, a.pos0, t0);
  return a;
}
const std::vector<Kind> kKvStoreAbi = {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64,
                                       Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::I64};

bool build_kv_store(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                    std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract kv_store.f32.ggml (K rows copied to cells pos0.., V transposed: "
                   "channel c, cell j at c * n_ctx + j)",
                   m, err))
    return false;
  Builder b(*m, m->name, kKvStoreAbi);
  const auto [k, v, kc, vc, kv, nctx, pos0, T] = kv_store_entry(b);
  Lanes16 L(b, isa);
  // K: T * kv_dim contiguous floats to k_cache + pos0 * kv_dim.
  V cnt = b.i64("cnt"), off = b.i64("off"), one = b.imm(1, "one"), zero = b.imm(0, "zero");
  V dst = b.ptr("dst");
  b.mul(cnt, T, kv);
  b.mul(off, pos0, kv);
  b.ptr_add(dst, kc, off, 4);
  copy_floats(L, k, dst, cnt);
  V s = b.vec(128, Cls::F, "s");
  // V: element (t, c) to v_cache[c * n_ctx + pos0 + t].
  V t = b.i64("t"), c = b.i64("c"), col = b.ptr("col"), src = b.ptr("src"),
    stride = b.i64("stride");
  b.muli(stride, nctx, 4);
  b.for_(t, zero, T, one);
  b.mul(off, t, kv);
  b.ptr_add(src, v, off, 4);
  b.add(off, pos0, t);
  b.ptr_add(col, vc, off, 4);
  b.for_(c, zero, kv, one);
  b.vload_ss(s, Mem{src, c, 4, 0});
  b.vstore_ss(Mem{col, {}, 1, 0}, s);
  b.ptr_add(col, col, stride, 1);
  b.end_for();
  b.end_for();
  return true;
}

// The F16 cache (flash attention): K and V both cell-major, so each is one contiguous range
// of T * kv_dim values converted at cells pos0.. (jit/gen_fp16.h, as the f16 activations).
bool build_kv_store_f16(const char* generator, Isa isa, const GeneratorParams& params,
                        kir::Module* m, std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract kv_store.f16.ggml (K and V rows to cells pos0.., both cell-major, "
                   "each value fp16 RNE, a NaN sign | 0x7e00)",
                   m, err))
    return false;
  Builder b(*m, m->name, kKvStoreAbi);
  const auto [k, v, kc, vc, kv, nctx, pos0, T] = kv_store_entry(b);
  V cnt = b.i64("cnt"), off = b.i64("off"), zero = b.imm(0, "zero");
  V kdst = b.ptr("kdst"), vdst = b.ptr("vdst");
  b.mul(cnt, T, kv);
  b.mul(off, pos0, kv);
  b.ptr_add(kdst, kc, off, 2);
  b.ptr_add(vdst, vc, off, 2);
  convert_f16_range(b, isa, k, kdst, zero, cnt);
  convert_f16_range(b, isa, v, vdst, zero, cnt);
  return true;
}

}  // namespace

bool build_add_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_add("add_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_add_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_add("add_f32__avx2", Isa::Avx2, p, m, err);
}
bool build_add_bias_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_add_bias("add_bias_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_add_bias_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_add_bias("add_bias_f32__avx2", Isa::Avx2, p, m, err);
}
bool build_scale_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_scale("scale_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_scale_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_scale("scale_f32__avx2", Isa::Avx2, p, m, err);
}
bool build_kv_store_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kv_store("kv_store_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_kv_store_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kv_store("kv_store_f32__avx2", Isa::Avx2, p, m, err);
}

bool build_kv_store_f16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kv_store_f16("kv_store_f16__avx512", Isa::Avx512, p, m, err);
}
bool build_kv_store_f16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kv_store_f16("kv_store_f16__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
