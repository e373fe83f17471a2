// Lane masks for generators that compare and select, one spelling for both ISA levels: at
// an AVX-512 level a mask is a k register (vcmpps into k, vblendmps, kand/kor); at AVX2 a
// vector of all-ones / zero dwords (vcmpps, vblendvps, vpand/vpor). KIR defines every one
// of these ops on both kinds; the level only picks the cheaper encoding.
#pragma once

#include <string>

#include "jit/gen_tile.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

struct Masks {
  kir::Builder& b;
  bool k;  // k registers (AVX-512 levels) or vectors (AVX2)

  Masks(kir::Builder& builder, Isa isa) : b(builder), k(isa != Isa::Avx2) {}

  // A new mask for lanes of `bits`-wide vectors.
  kir::V make(int bits, const std::string& name) {
    return k ? b.mask(name) : b.vec(bits, kir::Cls::I, name);
  }
  // d = a p b per f32 lane.
  void cmp(kir::V d, kir::V a, kir::V x, kir::FCmp p) { b.vcmp_f(d, a, x, p); }
  kir::V cmp(kir::V a, kir::V x, kir::FCmp p, const std::string& name) {
    kir::V d = make(b.type(a).bits, name);
    b.vcmp_f(d, a, x, p);
    return d;
  }
  void and_(kir::V d, kir::V a, kir::V x) {
    if (k)
      b.kand(d, a, x);
    else
      b.vand(d, a, x);
  }
  void or_(kir::V d, kir::V a, kir::V x) {
    if (k)
      b.kor(d, a, x);
    else
      b.vor(d, a, x);
  }
  // d = m ? a : x per 32-bit lane.
  void select(kir::V d, kir::V m, kir::V a, kir::V x) { b.vselect(d, m, a, x); }
};

}  // namespace cke::jit::gen
