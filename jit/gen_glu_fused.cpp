// swiglu_fused generators (gen_families.h): one body for both ISA levels.
#include "jit/gen_families.h"
#include "jit/gen_lanes16.h"
#include "jit/gen_op.h"
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
  if (!op_prologue(params, generator, isa,
                   "contract glu.swiglu_fused.f32.ggml (ggml_vec_swiglu_f32 of an AVX-512 build\n"
                   "on the halves of each row of 2n, n a multiple of 16: silu = g / (1 +\n"
                   "ggml_v_expf(0 - g)), y = silu * up)",
                   m, err))
    return false;
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  const V x = b.arg(0), y = b.arg(1), n = b.arg(2), T = b.arg(3), t0 = b.arg(4), t1 = b.arg(5);
  ret_if(b, n, Cmp::LE, 0);
  ret_unless_multiple(b, n, 16);  // outside the contract's admitted shapes: nothing written
  // T = t1 - t0 from token t0: y's rows are n floats, x's 2n (skip * 8 bytes).
  b.ptr_add(x, x, enter_range(b, T, t0, t1, n, {y}), 8);

  Lanes16 L(b, isa);
  const ExpConsts ec = exp_consts(L);
  const V16 zero = L.splat(0u, "zero");
  V half_bytes = b.i64("half_bytes"), t = b.i64("t"), off = b.i64("off");
  V gr = b.ptr("gr"), ur = b.ptr("ur"), yr = b.ptr("yr");
  b.muli(half_bytes, n, 4);
  b.mov(gr, x);
  b.mov(yr, y);
  b.for_(t, b.imm(0, "zero_t"), T, b.imm(1, "one_t"));
  {
    b.ptr_add(ur, gr, half_bytes, 1);
    b.for_(off, b.imm(0, "zero_i"), half_bytes, b.imm(64, "group_bytes"));
    {
      V16 g = L.vec("g"), u = L.vec("u"), s = L.vec("s");
      L.load(g, Mem{gr, off, 1, 0});
      L.load(u, Mem{ur, off, 1, 0});
      swiglu16(L, ec, zero, s, g, u);
      L.store(Mem{yr, off, 1, 0}, s);
    }
    b.end_for();
    b.ptr_add(gr, ur, half_bytes, 1);  // the next row's gate follows this row's up half
    b.ptr_add(yr, yr, half_bytes, 1);
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_swiglu_fused_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("swiglu_fused_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_swiglu_fused_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("swiglu_fused_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
