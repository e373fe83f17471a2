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
// A function, not a namespace-scope vector: a generator may run from another translation
// unit's static initializer (bench/), before this file's globals are constructed.
const std::vector<Kind>& kv_store_abi() {
  static const std::vector<Kind> abi = {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64,
                                        Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::I64};
  return abi;
}

bool build_kv_store(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                    std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract kv_store.f32.ggml (K rows copied to cells pos0.., V transposed: "
                   "channel c, cell j at c * n_ctx + j)",
                   m, err))
    return false;
  Builder b(*m, m->name, kv_store_abi());
  const auto [k, v, kc, vc, kv, nctx, pos0, T] = kv_store_entry(b);
  Lanes16 L(b, isa);
  // K: T * kv_dim contiguous floats to k_cache + pos0 * kv_dim.
  V cnt = b.i64("cnt"), off = b.i64("off"), one = b.imm(1, "one"), zero = b.imm(0, "zero");
  V dst = b.ptr("dst");
  b.mul(cnt, T, kv);
  b.mul(off, pos0, kv);
  b.ptr_add(dst, kc, off, 4);
  copy_floats(L, k, dst, cnt);
  // V: element (t, c) to v_cache[c * n_ctx + pos0 + t]. The cache rows are n_ctx floats
  // apart (a power of two in practice): one store per element, token by token, would touch
  // kv_dim lines of a few cache sets per token and miss every time (10 ns an element at
  // kv_dim 1024, n_ctx 4096). So 16 tokens x 8 channels at a time: two 8x8 register
  // transposes, each channel's 16 cells stored side by side (one line). Tokens past the
  // last 16 and channels past the last 8 one element at a time. A copy: bits unchanged.
  V s = b.vec(128, Cls::F, "s");
  V t = b.i64("t"), c = b.i64("c"), col = b.ptr("col"), src = b.ptr("src"),
    stride = b.i64("stride"), kvb = b.i64("kv_bytes"), t16 = b.i64("t16"), c8 = b.i64("c8");
  b.muli(stride, nctx, 4);
  b.muli(kvb, kv, 4);
  b.andi(t16, T, ~int64_t(15));
  b.andi(c8, kv, ~int64_t(7));
  V vt = b.ptr("v_tile"), ct = b.ptr("cache_tile"), q = b.ptr("q"), d = b.ptr("d");
  b.for_(t, zero, t16, b.imm(16, "sixteen"));
  {
    b.mul(off, t, kv);
    b.ptr_add(vt, v, off, 4);  // token t's row
    b.add(off, pos0, t);
    b.ptr_add(ct, vc, off, 4);  // channel 0, cell pos0 + t
    b.for_(c, zero, c8, b.imm(8, "eight"));
    {
      b.ptr_add(q, vt, c, 4);
      b.mul(off, c, stride);
      b.ptr_add(d, ct, off, 1);
      for (int half = 0; half < 2; ++half) {  // tokens t + 8 * half .. + 7
        V r[8];
        for (int j = 0; j < 8; ++j) {
          r[j] = b.vec(256, Cls::F, "row");
          b.vload(r[j], Mem{q, {}, 1, 0});
          b.ptr_add(q, q, kvb, 1);
        }
        V u[8], w8[8];
        for (int j = 0; j < 4; ++j) {  // pairs of rows interleaved by 32 bits
          u[2 * j] = b.vec(256, Cls::F, "lo32");
          u[2 * j + 1] = b.vec(256, Cls::F, "hi32");
          b.vunpack_lo32(u[2 * j], r[2 * j], r[2 * j + 1]);
          b.vunpack_hi32(u[2 * j + 1], r[2 * j], r[2 * j + 1]);
        }
        for (int h = 0; h < 2; ++h)  // rows 0-3, then 4-7: quads by 64 bits
          for (int j = 0; j < 2; ++j) {
            w8[4 * h + 2 * j] = b.vec(256, Cls::F, "lo64");
            w8[4 * h + 2 * j + 1] = b.vec(256, Cls::F, "hi64");
            b.vunpack_lo64(w8[4 * h + 2 * j], u[4 * h + j], u[4 * h + 2 + j]);
            b.vunpack_hi64(w8[4 * h + 2 * j + 1], u[4 * h + j], u[4 * h + 2 + j]);
          }
        // w8[i] (i < 4) holds channel i (low 128) and i + 4 (high 128) of rows 0-3;
        // w8[4 + i] the same of rows 4-7.
        V p = b.ptr("p");
        b.ptr_add(p, d, b.imm(32 * half, "half_bytes"), 1);
        for (int ch = 0; ch < 8; ++ch) {
          V o = b.vec(256, Cls::F, "cells");
          b.vcombine128(o, w8[ch % 4], w8[4 + ch % 4], ch < 4 ? 0 : 3);
          V pc = b.ptr("pc");
          b.mul(off, stride, b.imm(ch, "ch"));
          b.ptr_add(pc, p, off, 1);
          b.vstore(Mem{pc, {}, 1, 0}, o);
        }
      }
    }
    b.end_for();
    // Channels c8 .. kv of these 16 tokens.
    V j = b.i64("j");
    b.for_(c, c8, kv, one);
    b.for_(j, zero, b.imm(16, "sixteen_j"), one);
    b.mul(off, j, kv);
    b.add(off, off, c);
    b.vload_ss(s, Mem{vt, off, 4, 0});
    b.mul(off, c, nctx);
    b.add(off, off, j);
    b.vstore_ss(Mem{ct, off, 4, 0}, s);
    b.end_for();
    b.end_for();
  }
  b.end_for();
  // Tokens t16 .. T (fewer than 16; decode's one token), element by element.
  b.for_(t, t16, T, one);
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
  Builder b(*m, m->name, kv_store_abi());
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
