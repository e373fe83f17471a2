// moe_route and moe_group generators (gen_moe.h): one body per op for both ISA levels.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "jit/gen_lanes16.h"
#include "jit/gen_moe.h"
#include "jit/gen_op.h"
#include "jit/gen_tile.h"
#include "kernels/ref/ops_ggml_math.h"

// The helpers start with vzeroupper (as gen_attention_flash.cpp's): they run scalar SSE code
// right after AVX-512 code. Vector registers are caller-saved across the call anyway.
extern "C" void cke_moe_expf(float* v, int64_t n) {
  asm volatile("vzeroupper");
  for (int64_t i = 0; i < n; ++i) v[i] = std::exp(v[i]);
}

extern "C" void cke_moe_topk(const float* p, int32_t* ids, int64_t n, int64_t n_used) {
  asm volatile("vzeroupper");
  if (n <= 0 || n > cke::jit::gen::kMoeMaxExperts || n_used <= 0 || n_used > n) return;
  int32_t order[cke::jit::gen::kMoeMaxExperts];
  cke::ref::argsort_desc_ggml(p, order, n);
  std::memcpy(ids, order, size_t(n_used) * sizeof(int32_t));
}

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int64_t kF32InfBits = 0x7f800000;

// Per token t of [t0, t1), on a frame row p of E floats:
//   max    16-lane maxps over the full 16-groups, the tree of reduce_max, then the tail by
//          maxss in index order. ggml's MAX runs in index order; the two differ only when a
//          logit is NaN (then every probability is NaN whatever the max: the sum is NaN) or
//          in the sign of a zero max (x - (+-0) differs only for x = +-0, and exp(+-0) = 1).
//   exp    ggml_v_expf (exp16) per full group, each group's reduce_add into a double sum;
//          the tail's x - max by libm expf (cke_moe_expf) added one by one.
//   scale  p = fl(e * (float)(1.0 / sum)).
//   top-k  p is in [0, 1] or NaN, so for non-NaN rows the order of p is the order of its
//          bits as int32. One pass keeps the n_used + 1 largest by insertion (a value enters
//          when it is above the smallest kept). If the kept values strictly descend, the top
//          n_used are distinct and above all others, so any correct sort puts them first in
//          this order: they are the ids. Otherwise (a tie that touches the top n_used, or a
//          NaN row) the token's ids come from ggml's std::sort itself (cke_moe_topk).
//   weights  w_s = p[id_s], their sum in double in slot order, rounded once, MIN(., inf),
//          MAX(., 6.103515625e-5), w_s = fl(w_s / sum).
bool build_route(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                 std::string* err) {
  if (!op_prologue(
          params, generator, isa,
          fmt::format(
              "contract moe_route.softmax_norm.f32.ggml (soft_max with ggml_v_expf and a double "
              "sum,\nlibm expf tail by cke_moe_expf; top-k by insertion on the bits, ties and "
              "NaN rows by\nggml's std::sort in cke_moe_topk; weights / clamped double sum); "
              "E <= {}",
              kMoeMaxExperts),
          m, err))
    return false;
  m->helpers.push_back(
      {"cke_moe_expf", reinterpret_cast<const void*>(&cke_moe_expf), {Kind::Ptr, Kind::I64}});
  m->helpers.push_back({"cke_moe_topk",
                        reinterpret_cast<const void*>(&cke_moe_topk),
                        {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64}});
  Builder b(
      *m, m->name,
      {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const V logits = b.arg(0), ids = b.arg(1), wts = b.arg(2), E = b.arg(3), n_used = b.arg(4),
          T = b.arg(5), t0 = b.arg(6), t1 = b.arg(7);
  ret_if(b, E, Cmp::LE, 0);
  ret_if(b, E, Cmp::GT, kMoeMaxExperts);
  ret_if(b, n_used, Cmp::LE, 0);
  ret_if(b, n_used, Cmp::GT, E);
  ret_if(b, t0, Cmp::LT, 0);
  ret_if(b, t1, Cmp::GT, T);
  ret_if(b, t0, Cmp::GE, t1);

  Lanes16 L(b, isa);
  const V16 ninf = L.splat(0xff800000u, "ninf");
  const V zero = b.imm(0, "zero"), one = b.imm(1, "one"), c16 = b.imm(16, "c16");
  V one_d = b.vec(128, Cls::F, "one_d"), inf = b.vec(128, Cls::F, "inf"),
    wmin = b.vec(128, Cls::F, "wmin");
  b.vconst32(one_d, {0u, 0x3FF00000u, 0u, 0u});  // 1.0 (double) in the low 64 bits
  b.vsplat32(inf, uint32_t(kF32InfBits));
  b.vsplat32(wmin, 0x38800000u);  // 6.103515625e-5f
  const V p = b.stack(kMoeMaxExperts * 4, "p");
  const V vals = b.stack((kMoeMaxExperts + 1) * 4, "vals"),
          idxs = b.stack(kMoeMaxExperts * 4 + 4, "idxs");
  const V minus1 = b.imm(-1, "minus1");
  V full = b.i64("full"), row_bytes = b.i64("row_bytes"), tmp = b.i64("tmp"), t = b.i64("t"),
    g = b.i64("g"), i = b.i64("i"), s = b.i64("s"), v = b.i64("v"), a = b.i64("a"),
    last = b.i64("last"), j = b.i64("j"), jm1 = b.i64("jm1"), done = b.i64("done"),
    ix = b.i64("ix"), kp1 = b.i64("kp1"), tie = b.i64("tie"), id = b.i64("id");
  V x = b.ptr("x"), tail = b.ptr("tail"), idt = b.ptr("idt"), wt = b.ptr("wt");
  b.andi(full, E, ~int64_t(15));
  b.muli(row_bytes, E, 4);
  b.addi(kp1, n_used, 1);
  b.for_(t, t0, t1, one);
  {
    b.mul(tmp, t, row_bytes);
    b.ptr_add(x, logits, tmp, 1);

    // max
    V16 mx = L.vec("mx");
    L.copy(mx, ninf);
    b.for_(g, zero, full, c16);
    {
      V16 w = L.vec("w");
      L.load(w, Mem{x, g, 4, 0});
      L.max(mx, mx, w);
    }
    b.end_for();
    V mxs = L.reduce_max(mx), xs = b.vec(128, Cls::F, "xs");
    b.for_(i, full, E, one);
    b.vload_ss(xs, Mem{x, i, 4, 0});
    b.vmax_f(mxs, mxs, xs);
    b.end_for();
    const V16 mxv = L.bcast(mxs, "mxv");

    // e = exp(x - max), the double sum
    V sum = b.vec(128, Cls::F, "sum"), sd = b.vec(128, Cls::F, "sd");
    b.vzero(sum);
    // The exp constants are made per token: made once, they would be live across the call
    // of the tail's helper, which saves and restores every live vector register.
    const ExpConsts ec = exp_consts(L);
    exp_sub_groups(L, ec, x, p, full, mxv, sum);
    b.if_(full, Cmp::LT, E);
    {
      b.for_(i, full, E, one);
      b.vload_ss(xs, Mem{x, i, 4, 0});
      b.vsub_f(xs, xs, mxs);
      b.vstore_ss(Mem{p, i, 4, 0}, xs);
      b.end_for();
      b.ptr_add(tail, p, full, 4);
      b.sub(tmp, E, full);
      b.call("cke_moe_expf", {tail, tmp});
      b.for_(i, full, E, one);
      b.vload_ss(xs, Mem{p, i, 4, 0});
      b.vcvt_ss_sd(sd, xs);
      b.vadd_sd(sum, sum, sd);
      b.end_for();
    }
    b.end_if();

    // p = e * (float)(1.0 / sum)
    const V inv = inv_of_sum(b, one_d, sum);
    scale_groups(L, p, full, inv);
    b.for_(i, full, E, one);
    b.vload_ss(xs, Mem{p, i, 4, 0});
    b.vmul_ss(xs, xs, inv);
    b.vstore_ss(Mem{p, i, 4, 0}, xs);
    b.end_for();

    // top n_used: one pass keeps the n_used + 1 largest bits in descending order (vals,
    // with their indices in idxs; -1 fills the slots no value reached), by insertion.
    b.mul(tmp, t, n_used);
    b.ptr_add(idt, ids, tmp, 4);
    b.ptr_add(wt, wts, tmp, 4);
    b.movi(tie, 0);
    b.for_(s, zero, kp1, one);
    b.store_i32(Mem{vals, s, 4, 0}, minus1);
    b.store_i32(Mem{idxs, s, 4, 0}, zero);  // never read unset: the C would read garbage
    b.end_for();
    b.for_(i, zero, E, one);
    {
      b.load_i32(v, Mem{p, i, 4, 0});
      b.if_(v, Cmp::GT, kF32InfBits);  // NaN
      b.movi(tie, 1);
      b.end_if();
      b.if_(v, Cmp::LT, 0);  // NaN with the sign bit (p is never -0)
      b.movi(tie, 1);
      b.end_if();
      b.load_i32(last, Mem{vals, n_used, 4, 0});
      b.if_(v, Cmp::GT, last);
      {
        // Shift the smaller kept values down one slot, from the end, until one is >= v.
        b.mov(j, n_used);
        b.movi(done, 0);
        b.for_(s, zero, n_used, one);
        b.if_(done, Cmp::EQ, 0);
        {
          b.addi(jm1, j, -1);
          b.load_i32(a, Mem{vals, jm1, 4, 0});
          b.if_(a, Cmp::GE, v);  // the first kept value >= v: v goes below it
          b.movi(done, 1);
          b.end_if();
          b.if_(a, Cmp::LT, v);
          {
            b.store_i32(Mem{vals, j, 4, 0}, a);
            b.load_i32(ix, Mem{idxs, jm1, 4, 0});
            b.store_i32(Mem{idxs, j, 4, 0}, ix);
            b.mov(j, jm1);
          }
          b.end_if();
        }
        b.end_if();
        b.end_for();
        b.store_i32(Mem{vals, j, 4, 0}, v);
        b.store_i32(Mem{idxs, j, 4, 0}, i);
      }
      b.end_if();
    }
    b.end_for();
    // The top n_used are unique, and above the rest, when the kept values strictly descend.
    b.for_(s, zero, n_used, one);
    {
      b.load_i32(a, Mem{vals, s, 4, 0});
      b.load_i32(last, Mem{vals, s, 4, 4});
      b.if_(a, Cmp::LE, last);
      b.movi(tie, 1);
      b.end_if();
      b.load_i32(a, Mem{idxs, s, 4, 0});
      b.store_i32(Mem{idt, s, 4, 0}, a);
    }
    b.end_for();
    b.if_(tie, Cmp::NE, 0);
    b.call("cke_moe_topk", {p, idt, E, n_used});
    b.end_if();

    // weights
    V acc = b.vec(128, Cls::F, "acc"), ws = b.vec(128, Cls::F, "ws");
    b.vzero(acc);
    b.for_(s, zero, n_used, one);
    {
      b.load_i32(id, Mem{idt, s, 4, 0});
      b.vload_ss(ws, Mem{p, id, 4, 0});
      b.vstore_ss(Mem{wt, s, 4, 0}, ws);
      b.vcvt_ss_sd(sd, ws);
      b.vadd_sd(acc, acc, sd);
    }
    b.end_for();
    b.vcvt_sd_ss(acc, acc);
    b.vmin_f(acc, acc, inf);   // MIN(sum, inf): a NaN sum gives inf, as ggml's
    b.vmax_f(acc, acc, wmin);  // MAX(., 6.103515625e-5)
    b.for_(s, zero, n_used, one);
    b.vload_ss(ws, Mem{wt, s, 4, 0});
    b.vdiv_f(ws, ws, acc);
    b.vstore_ss(Mem{wt, s, 4, 0}, ws);
    b.end_for();
  }
  b.end_for();
  return true;
}

// The counting sort of moe_group__ref: counts per expert, their exclusive prefix sum, then
// the pairs placed in (token, slot) order through a cursor per expert on the frame. Integer
// work only; ids outside [0, E) are skipped, as the reference skips them.
bool build_group(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                 std::string* err) {
  if (!op_prologue(params, generator, isa,
                   fmt::format("contract moe_group.i32.ggml (counting sort of the (token, slot) "
                               "pairs by expert); E <= {}",
                               kMoeMaxExperts),
                   m, err))
    return false;
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64});
  const V ids = b.arg(0), sched = b.arg(1), rows = b.arg(2), E = b.arg(3), n_used = b.arg(4),
          T = b.arg(5);
  ret_if(b, E, Cmp::LE, 0);
  ret_if(b, E, Cmp::GT, kMoeMaxExperts);
  ret_if(b, n_used, Cmp::LE, 0);
  ret_if(b, T, Cmp::LE, 0);
  const V zero = b.imm(0, "zero"), one = b.imm(1, "one");
  const V fill = b.stack(kMoeMaxExperts * 4, "fill");
  V P = b.i64("P"), e = b.i64("e"), j = b.i64("j"), c = b.i64("c"), at = b.i64("at"),
    t = b.i64("t"), s = b.i64("s"), k = b.i64("k");
  V first = b.ptr("first"), pos = b.ptr("pos");
  b.mul(P, n_used, T);
  b.ptr_add(first, sched, E, 4);
  b.ptr_add(pos, rows, P, 4);
  // The counts zeroed 8 at a time, then the tail.
  V z8 = b.vec(256, Cls::I, "z8"), e8 = b.i64("e8");
  b.vzero(z8);
  b.andi(e8, E, ~int64_t(7));
  b.for_(e, zero, e8, b.imm(8, "eight"));
  b.vstore(Mem{sched, e, 4, 0}, z8);
  b.end_for();
  b.for_(e, e8, E, one);
  b.store_i32(Mem{sched, e, 4, 0}, zero);
  b.end_for();
  b.for_(j, zero, P, one);
  {
    b.load_i32(e, Mem{ids, j, 4, 0});
    b.if_(e, Cmp::GE, 0);
    b.if_(e, Cmp::LT, E);
    b.load_i32(c, Mem{sched, e, 4, 0});
    b.addi(c, c, 1);
    b.store_i32(Mem{sched, e, 4, 0}, c);
    b.end_if();
    b.end_if();
  }
  b.end_for();
  b.movi(at, 0);
  b.for_(e, zero, E, one);
  b.store_i32(Mem{first, e, 4, 0}, at);
  b.store_i32(Mem{fill, e, 4, 0}, at);
  b.load_i32(c, Mem{sched, e, 4, 0});
  b.add(at, at, c);
  b.end_for();
  b.movi(k, 0);
  b.for_(t, zero, T, one);
  b.for_(s, zero, n_used, one);
  {
    b.load_i32(e, Mem{ids, k, 4, 0});
    b.if_(e, Cmp::GE, 0);
    b.if_(e, Cmp::LT, E);
    b.load_i32(j, Mem{fill, e, 4, 0});
    b.store_i32(Mem{rows, j, 4, 0}, t);
    b.store_i32(Mem{pos, k, 4, 0}, j);
    b.addi(j, j, 1);
    b.store_i32(Mem{fill, e, 4, 0}, j);
    b.end_if();
    b.end_if();
    b.addi(k, k, 1);
  }
  b.end_for();
  b.end_for();
  return true;
}

}  // namespace

bool build_moe_route_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_route("moe_route_softmax_norm_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_moe_route_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_route("moe_route_softmax_norm_f32__avx2", Isa::Avx2, p, m, err);
}
bool build_moe_group_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_group("moe_group__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
