// relu_sqr generators (gen_families.h): one body for both ISA levels.
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

// y = fl(r * r), r = maxps(x, +0): 16-lane groups, then the tail one element at a time.
bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract unary.relu_sqr.f32.ggml (ggml RELU then SQR: r = (x > 0) ? x : 0\n"
                   "as maxps(x, +0), y = fl(r * r))",
                   m, err))
    return false;
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64});
  const V x = b.arg(0), y = b.arg(1), n = b.arg(2), i0 = b.arg(3), i1 = b.arg(4);
  enter_range(b, n, i0, i1, b.imm(1, "one_elem"), {x, y});  // n = i1 - i0 from element i0
  Lanes16 L(b, isa);
  const V16 zero16 = L.splat(0u, "zero16");
  V full = b.i64("full"), end = b.i64("end"), off = b.i64("off"), i = b.i64("i");
  b.andi(full, n, ~int64_t(15));
  b.muli(end, full, 4);
  b.for_(off, b.imm(0, "zero"), end, b.imm(64, "group_bytes"));
  {
    V16 v = L.vec("v");
    L.load(v, Mem{x, off, 1, 0});
    L.max(v, v, zero16);  // a NaN or -0 gives the second operand, +0
    L.mul(v, v, v);
    L.store(Mem{y, off, 1, 0}, v);
  }
  b.end_for();
  V s = b.vec(128, Cls::F, "s"), z = b.vec(128, Cls::F, "z");
  b.vzero(z);
  b.for_(i, full, n, b.imm(1, "one"));
  b.vload_ss(s, Mem{x, i, 4, 0});
  b.vmax_f(s, s, z);
  b.vmul_ss(s, s, s);
  b.vstore_ss(Mem{y, i, 4, 0}, s);
  b.end_for();
  return true;
}

}  // namespace

bool build_relu_sqr_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("relu_sqr_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_relu_sqr_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("relu_sqr_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
