// swiglu generators (gen_glu.h): one body for both ISA levels.
#include "jit/gen_glu.h"

#include "jit/gen_lanes16.h"
#include "jit/gen_op.h"
#include "jit/gen_tile.h"
#include "kernels/ref/ops_ggml_math.h"

extern "C" void cke_gelu_f16_lookup(uint16_t* h, int64_t count) {
  asm volatile("vzeroupper");  // as the rope helpers (gen_rope.cpp): no dirty-upper penalty
  const uint16_t* t = cke::ref::gelu_table_f16_data();
  for (int64_t i = 0; i < count; ++i) h[i] = t[h[i]];
}

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

// The glu.gated.v2 ABI: gate, up, y, n, T, then rows [begin, end) of T. A function, not a
// namespace-scope vector: a generator may run from another translation unit's static
// initializer (bench/), before this file's globals are constructed.
const std::vector<Kind>& glu_abi() {
  static const std::vector<Kind> abi = {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64,
                                        Kind::I64, Kind::I64, Kind::I64};
  return abi;
}

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract glu.swiglu.f32.ggml (ggml_vec_swiglu_f32 of an AVX-512 build,\n"
                   "rows of a multiple of 16: silu = g / (1 + ggml_v_expf(0 - g)), y = silu * up)",
                   m, err))
    return false;
  Builder b(*m, m->name, glu_abi());
  const V gate = b.arg(0), up = b.arg(1), y = b.arg(2), n = b.arg(3), T = b.arg(4);
  ret_if(b, n, Cmp::LE, 0);
  ret_unless_multiple(b, n, 16);  // outside the contract's admitted shapes: nothing written
  enter_range(b, T, b.arg(5), b.arg(6), n, {gate, up, y});

  Lanes16 L(b, isa);
  const ExpConsts ec = exp_consts(L);
  const V16 zero = L.splat(0u, "zero");
  V bytes = b.i64("bytes"), off = b.i64("off");
  b.mul(bytes, n, T);
  b.muli(bytes, bytes, 4);
  b.for_(off, b.imm(0, "zero_i"), bytes, b.imm(64, "group_bytes"));
  {
    V16 g = L.vec("g"), u = L.vec("u"), t = L.vec("t");
    L.load(g, Mem{gate, off, 1, 0});
    L.load(u, Mem{up, off, 1, 0});
    swiglu16(L, ec, zero, t, g, u);
    L.store(Mem{y, off, 1, 0}, t);
  }
  b.end_for();
  return true;
}

bool build_geglu(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
                 std::string* err) {
  if (!op_prologue(
          params, generator, isa,
          "contract glu.geglu.f32.ggml (ggml_vec_geglu_f32, GGML_GELU_FP16: g <= -10 -> 0,\n"
          "g >= 10 -> g * up, else f32(T[f16(g)]) * up; T read by cke_gelu_f16_lookup)",
          m, err))
    return false;
  m->helpers.push_back({"cke_gelu_f16_lookup",
                        reinterpret_cast<const void*>(&cke_gelu_f16_lookup),
                        {Kind::Ptr, Kind::I64}});
  Builder b(*m, m->name, glu_abi());
  const V gate = b.arg(0), up = b.arg(1), y = b.arg(2), n = b.arg(3), T = b.arg(4);
  ret_if(b, n, Cmp::LE, 0);
  ret_unless_multiple(b, n, 16);  // outside the contract's admitted shapes: nothing written
  enter_range(b, T, b.arg(5), b.arg(6), n, {gate, up, y});

  Lanes16 L(b, isa);
  const V16 lo = L.splat(0xC1200000u, "minus10"), hi = L.splat(0x41200000u, "plus10"),
            zero = L.splat(0u, "zero");
  const V halves = b.stack(kGegluChunk * 2, "halves");
  V total = b.i64("total"), base = b.i64("base"), end = b.i64("end"), cnt = b.i64("cnt"),
    j = b.i64("j"), jh = b.i64("jh"), cnt_bytes = b.i64("cnt_bytes");
  V gp = b.ptr("gp"), upp = b.ptr("upp"), yp = b.ptr("yp"), hp = b.ptr("hp");
  const V zero_i = b.imm(0, "zero_i"), group = b.imm(64, "group_bytes");
  b.mul(total, n, T);
  b.muli(total, total, 4);
  b.for_(base, zero_i, total, b.imm(kGegluChunk * 4, "chunk_bytes"));
  {
    b.addi(end, base, kGegluChunk * 4);
    b.min(end, end, total);
    b.sub(cnt_bytes, end, base);
    b.sari(cnt, cnt_bytes, 2);
    b.ptr_add(gp, gate, base, 1);
    b.ptr_add(upp, up, base, 1);
    b.ptr_add(yp, y, base, 1);
    // f16(g) of the chunk into the frame buffer, 16 halves per 16-group.
    b.for_(j, zero_i, cnt_bytes, group);
    {
      V16 g = L.vec("g");
      L.load(g, Mem{gp, j, 1, 0});
      b.sari(jh, j, 1);
      b.ptr_add(hp, halves, jh, 1);
      for (int p = 0; p < 2; ++p) {
        V src;
        if (L.parts == 2) {
          src = g.part[p];
        } else if (p == 0) {
          src = b.view(g.part[0], 256, kir::Cls::F);
        } else {
          src = b.vec(256, kir::Cls::F, "g_hi");
          b.vextract(src, g.part[0], 1);
        }
        V h = b.vec(128, kir::Cls::I, "h");
        b.vcvt_f32_f16(h, src);
        b.vstore(Mem{hp, {}, 1, 16 * p}, h);
      }
    }
    b.end_for();
    b.call("cke_gelu_f16_lookup", {halves, cnt});  // halves[i] = T[halves[i]]
    b.for_(j, zero_i, cnt_bytes, group);
    {
      V16 g = L.vec("g"), u = L.vec("u"), t = L.vec("t"), gu = L.vec("gu");
      L.load(g, Mem{gp, j, 1, 0});
      L.load(u, Mem{upp, j, 1, 0});
      b.sari(jh, j, 1);
      b.ptr_add(hp, halves, jh, 1);
      for (int p = 0; p < L.parts; ++p) {
        V h = b.vec(L.width() / 2, kir::Cls::I, "th");
        b.vload(h, Mem{hp, {}, 1, 16 * p});
        b.vcvt_f16_f32(t.part[p], h);  // f32(T[f16(g)])
      }
      L.mul(t, t, u);
      L.mul(gu, g, u);
      for (int p = 0; p < L.parts; ++p) {
        V big = L.parts == 1 ? b.mask("big") : b.vec(256, kir::Cls::F, "big");
        V small = L.parts == 1 ? b.mask("small") : b.vec(256, kir::Cls::F, "small");
        b.vcmp_f(big, g.part[p], hi.part[p], kir::FCmp::GE);    // NaN: false
        b.vcmp_f(small, g.part[p], lo.part[p], kir::FCmp::LE);  // NaN: false
        b.vselect(t.part[p], big, gu.part[p], t.part[p]);
        b.vselect(t.part[p], small, zero.part[p], t.part[p]);
      }
      L.store(Mem{yp, j, 1, 0}, t);
    }
    b.end_for();
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_geglu_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_geglu("geglu_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_geglu_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_geglu("geglu_f32__avx2", Isa::Avx2, p, m, err);
}

bool build_swiglu_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("swiglu_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_swiglu_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("swiglu_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
