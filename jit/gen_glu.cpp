// swiglu generators (gen_glu.h): one body for both ISA levels.
#include "jit/gen_glu.h"

#include <fmt/format.h>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}: contract glu.swiglu.f32.ggml (ggml_vec_swiglu_f32 of an AVX-512 build,\n"
      "rows of a multiple of 16: silu = g / (1 + ggml_v_expf(0 - g)), y = silu * up)",
      generator);
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64});
  const V gate = b.arg(0), up = b.arg(1), y = b.arg(2), n = b.arg(3), T = b.arg(4);
  ret_if(b, n, Cmp::LE, 0);
  ret_if(b, T, Cmp::LE, 0);
  V n16 = b.i64("n16");
  b.andi(n16, n, 15);
  ret_if(b, n16, Cmp::NE, 0);  // outside the contract's admitted shapes: nothing written

  Lanes16 L(b, isa);
  const ExpConsts ec = exp_consts(L);
  const V16 zero = L.splat(0u, "zero");
  V bytes = b.i64("bytes"), off = b.i64("off");
  b.mul(bytes, n, T);
  b.muli(bytes, bytes, 4);
  b.for_(off, b.imm(0, "zero_i"), bytes, b.imm(64, "group_bytes"));
  {
    V16 g = L.vec("g"), u = L.vec("u"), t = L.vec("t"), e = L.vec("e");
    L.load(g, Mem{gate, off, 1, 0});
    L.load(u, Mem{up, off, 1, 0});
    L.sub(t, zero, g);  // 0 - g
    exp16(L, ec, e, t);
    L.add(e, ec.one, e);  // 1 + exp
    L.div(t, g, e);       // silu
    L.mul(t, t, u);
    L.store(Mem{y, off, 1, 0}, t);
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_swiglu_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("swiglu_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_swiglu_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("swiglu_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
