// add and kv_store generators (gen_elementwise.h): one body per op for both ISA levels.
#include "jit/gen_elementwise.h"

#include <fmt/format.h>

#include "jit/gen_lanes16.h"
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
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment =
      fmt::format("generator {}: contract add.f32.ggml (y = fl(a + b) per element)", generator);
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64});
  const V a = b.arg(0), x = b.arg(1), y = b.arg(2), n = b.arg(3);
  ret_if(b, n, Cmp::LE, 0);
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

bool build_kv_store(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                    std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}: contract kv_store.f32.ggml (K rows copied to cells pos0.., V transposed: "
      "channel c, cell j at c * n_ctx + j)",
      generator);
  Builder b(
      *m, m->name,
      {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const V k = b.arg(0), v = b.arg(1), kc = b.arg(2), vc = b.arg(3), kv = b.arg(4), nctx = b.arg(5),
          pos0 = b.arg(6), T = b.arg(7);
  // As the reference: a call outside the cache writes nothing.
  ret_if(b, pos0, Cmp::LT, 0);
  ret_if(b, T, Cmp::LE, 0);
  V end = b.i64("end");
  b.add(end, pos0, T);
  b.if_(end, Cmp::GT, nctx);
  b.ret();
  b.end_if();
  Lanes16 L(b, isa);
  // K: T * kv_dim contiguous floats to k_cache + pos0 * kv_dim.
  V cnt = b.i64("cnt"), full = b.i64("full"), bytes = b.i64("bytes"), off = b.i64("off"),
    i = b.i64("i"), one = b.imm(1, "one"), zero = b.imm(0, "zero");
  V dst = b.ptr("dst");
  b.mul(cnt, T, kv);
  b.mul(off, pos0, kv);
  b.ptr_add(dst, kc, off, 4);
  b.andi(full, cnt, ~int64_t(15));
  b.muli(bytes, full, 4);
  b.for_(off, zero, bytes, b.imm(64, "group_bytes"));
  {
    V16 x = L.vec("x");
    L.load(x, Mem{k, off, 1, 0});
    L.store(Mem{dst, off, 1, 0}, x);
  }
  b.end_for();
  V s = b.vec(128, Cls::F, "s");
  b.for_(i, full, cnt, one);
  b.vload_ss(s, Mem{k, i, 4, 0});
  b.vstore_ss(Mem{dst, i, 4, 0}, s);
  b.end_for();
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

}  // namespace

bool build_add_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_add("add_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_add_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_add("add_f32__avx2", Isa::Avx2, p, m, err);
}
bool build_kv_store_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kv_store("kv_store_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_kv_store_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kv_store("kv_store_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
