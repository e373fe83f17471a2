// Expert matmuls: an entry over a generated linear kernel (gen_moe.h).
#include <fmt/format.h>

#include "jit/gen_moe.h"
#include "jit/gen_tile.h"
#include "kernels/formats/dtype.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

bool build_linear_id(Isa isa, const GeneratorParams& params, kir::Module* m, std::string* err) {
  const std::string gen = fmt::format("linear_id__{}", isa_suffix(isa));
  std::string linear, wname, xname;
  GeneratorParams inner_params;
  for (const auto& [k, v] : params) {
    if (k == "linear")
      linear = v;
    else if (k == "w")
      wname = v;
    else if (k == "x")
      xname = v;
    else
      inner_params[k] = v;  // the linear generator's own (it rejects what it does not take)
  }
  if (params.empty()) {
    // No parameters: the vec_dot linear kernel of this level's own float (or q8_0) format.
    switch (isa) {
      case Isa::Avx2:
        linear = "linear_f32__avx2", wname = xname = "f32";
        break;
      case Isa::Avx512:
        linear = "linear_f32__avx512", wname = xname = "f32";
        break;
      case Isa::Avx512Vnni:
        linear = "linear_q8_0__avx512vnni", wname = xname = "q8_0";
        break;
      case Isa::Avx512Bf16:
        linear = "linear_bf16__avx512bf16", wname = xname = "bf16";
        break;
    }
  }
  if (linear.empty() || wname.empty() || xname.empty()) {
    *err = fmt::format("generator '{}': parameters linear, w and x are required", gen);
    return false;
  }
  const Generator* g = find_generator(linear);
  if (!g) {
    *err =
        fmt::format("generator '{}': linear '{}' is not a generator of this binary", gen, linear);
    return false;
  }
  // Its code must need exactly this level's features, and take the linear ABI.
  const std::vector<std::string> want = isa_features(isa);
  bool same = g->n_isa == want.size();
  for (size_t i = 0; same && i < want.size(); ++i) same = g->isa[i] == want[i];
  constexpr ArgKind kLin[] = {ArgKind::Ptr, ArgKind::Ptr, ArgKind::Ptr, ArgKind::I64,
                              ArgKind::I64, ArgKind::I64, ArgKind::I64, ArgKind::I64};
  bool abi = g->n_args == 8;
  for (int i = 0; abi && i < 8; ++i) abi = g->args[i] == kLin[i];
  if (!same || !abi) {
    *err = fmt::format("generator '{}': linear '{}' is not a linear generator of the {} level", gen,
                       linear, isa_suffix(isa));
    return false;
  }
  const std::optional<DType> wt = dtype_from_name(wname), xt = dtype_from_name(xname);
  if (!wt || !xt) {
    *err = fmt::format("generator '{}': unknown dtype '{}'", gen, !wt ? wname : xname);
    return false;
  }
  const DTypeInfo &wi = dtype_info(*wt), &xi = dtype_info(*xt);
  // Block sizes are powers of two (1, 32, 256): K % block is an AND.
  for (const DTypeInfo* i : {&wi, &xi})
    if (i->block_size < 1 || (i->block_size & (i->block_size - 1)) != 0 || i->type_size < 1) {
      *err = fmt::format("generator '{}': dtype {} has no row layout", gen, i->name);
      return false;
    }

  kir::Module inner;
  if (!build_kernel(linear, inner_params, m->name + "_linear", &inner, err)) return false;

  m->isa = inner.isa;
  std::string lp;
  for (const auto& [k, v] : inner_params)
    lp += fmt::format("{}{} {}", lp.empty() ? "" : ", ", k, v);
  m->comment = fmt::format(
      "generator {}: ggml's mul_mat_id on the pairs grouped by expert (contract linear_id.*), "
      "one call per expert of\nthe generated linear kernel {} ({}; weights {}, activations {}), "
      "below as {}_linear",
      gen, linear, lp.empty() ? "no parameters" : lp, wname, xname, m->name);

  Builder e(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64,
             Kind::I64, Kind::I64});
  // The linear kernel's functions after the entry: its entry becomes function 1.
  const int base = int(m->funcs.size());
  for (kir::Func f : inner.funcs) {
    for (kir::Inst& i : f.code)
      if (i.op == kir::Op::Call && i.callee >= 0) i.callee += base;
    m->funcs.push_back(std::move(f));
  }
  for (const kir::Helper& h : inner.helpers)
    if (!m->helper(h.name)) m->helpers.push_back(h);

  const V x = e.arg(0), w = e.arg(1), sched = e.arg(2), y = e.arg(3), K = e.arg(4), N = e.arg(5),
          E = e.arg(6), P = e.arg(7), n0 = e.arg(8), n1 = e.arg(9);
  ret_if(e, E, Cmp::LE, 0);
  ret_if(e, K, Cmp::LE, 0);
  ret_if(e, N, Cmp::LE, 0);
  V tail = e.i64("k_tail");
  for (const DTypeInfo* i : {&wi, &xi})
    if (i->block_size > 1) {
      e.andi(tail, K, i->block_size - 1);
      ret_if(e, tail, Cmp::NE, 0);
    }
  V arow = e.i64("x_row"), wexp = e.i64("w_expert");
  e.div(arow, K, e.imm(xi.block_size, "x_block"));
  e.muli(arow, arow, int64_t(xi.type_size));
  e.div(wexp, K, e.imm(wi.block_size, "w_block"));
  e.muli(wexp, wexp, int64_t(wi.type_size));
  e.mul(wexp, wexp, N);
  V ex = e.i64("e"), cnt = e.i64("count"), first = e.i64("first"), idx = e.i64("idx"),
    end = e.i64("end"), tmp = e.i64("tmp");
  V xp = e.ptr("x_e"), wp = e.ptr("w_e"), yp = e.ptr("y_e");
  e.for_(ex, e.imm(0, "zero"), E, e.imm(1, "one"));
  {
    e.load_i32(cnt, Mem{sched, ex, 4, 0});
    e.if_(cnt, Cmp::GT, 0);
    {
      e.add(idx, ex, E);
      e.load_i32(first, Mem{sched, idx, 4, 0});
      e.add(end, first, cnt);
      e.if_(first, Cmp::GE, 0);
      e.if_(end, Cmp::LE, P);  // a malformed schedule reads nothing out of bounds
      e.mul(tmp, first, arow);
      e.ptr_add(xp, x, tmp, 1);
      e.mul(tmp, ex, wexp);
      e.ptr_add(wp, w, tmp, 1);
      e.mul(tmp, first, N);
      e.ptr_add(yp, y, tmp, 4);
      e.call(base, {xp, wp, yp, K, N, cnt, n0, n1});
      e.end_if();
      e.end_if();
    }
    e.end_if();
  }
  e.end_for();
  return true;
}

}  // namespace

bool build_linear_id_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_linear_id(Isa::Avx512Vnni, p, m, err);
}
bool build_linear_id_avx512bf16(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_linear_id(Isa::Avx512Bf16, p, m, err);
}
bool build_linear_id_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_linear_id(Isa::Avx512, p, m, err);
}
bool build_linear_id_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_linear_id(Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
