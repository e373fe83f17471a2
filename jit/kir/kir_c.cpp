#include "jit/kir/kir_c.h"

#include <fmt/format.h>

#include <map>

namespace cke::jit::kir {
namespace {

std::string P(int bits) {
  return bits == 128 ? "_mm" : bits == 256 ? "_mm256" : "_mm512";
}
std::string SI(int bits) {
  return fmt::format("si{}", bits);
}
std::string vtype(int bits, Cls c) {
  return fmt::format("__m{}{}", bits, c == Cls::I ? "i" : "");
}

class FuncRender {
 public:
  FuncRender(const Module& m, const Func& f, bool entry) : m_(m), f_(f), entry_(entry) {}

  std::string render() {
    std::string sig;
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const Kind k = f_.params[i].kind;
      const char* t = k == Kind::Ptr   ? (entry_ ? "void*" : "uint8_t*")
                      : k == Kind::Vec ? "float"  // a float argument (Kind::F32)
                                       : "int64_t";
      sig += fmt::format("{}{} {}", i ? ", " : "", t,
                         entry_ ? fmt::format("p{}", i) : name(V{uint32_t(i)}));
    }
    out_ = fmt::format("{}void {}({}) {{\n", entry_ ? "" : "static ", cname(), sig);
    // Declarations: parameters of the entry, then every value an instruction names (views
    // are expressions).
    std::vector<bool> used(f_.values.size(), false);
    for (const Inst& in : f_.code) {
      for (V v : {in.d, in.a, in.b, in.c, in.mem.base, in.mem.index})
        if (v.valid()) used[v.id] = true;
      for (V v : in.args) used[v.id] = true;
    }
    for (size_t i = 0; i < f_.values.size(); ++i) {
      if (i >= f_.params.size() && !used[i]) continue;
      const Value& v = f_.values[i];
      const V id{uint32_t(i)};
      if (i < f_.params.size()) {
        if (entry_ && v.type.kind == Kind::Vec)
          out_ += fmt::format("  __m128 {} = _mm_set_ss(p{});\n", name(id), i);
        else if (entry_)
          out_ += fmt::format("  {} {} = ({})p{};\n", ctype(v.type), name(id), ctype(v.type), i);
        continue;
      }
      if (v.view) continue;
      out_ += fmt::format("  {} {};\n", ctype(v.type), name(id));
    }
    if (!entry_)  // a tile need not read every argument of the shared tile ABI
      for (size_t i = 0; i < f_.params.size(); ++i)
        out_ += fmt::format("  (void){};\n", name(V{uint32_t(i)}));
    for (const Inst& in : f_.code)
      if (in.op == Op::Stack)
        out_ += fmt::format("  _Alignas(16) uint8_t {}_buf[{}];\n", name(in.d), in.imm);
    depth_ = 1;
    for (const Inst& in : f_.code) render(in);
    out_ += "}\n";
    return out_;
  }

  std::string cname() const { return f_.name; }

 private:
  std::string name(V v) const {
    std::string n = f_.values[v.id].name;
    for (char& c : n)
      if (!isalnum(static_cast<unsigned char>(c))) c = '_';
    return fmt::format("{}_{}", n, v.id);
  }
  const Type& ty(V v) const { return f_.values[v.id].type; }
  static std::string ctype(const Type& t) {
    switch (t.kind) {
      case Kind::I64:
        return "int64_t";
      case Kind::Ptr:
        return "uint8_t*";
      case Kind::Mask:
        return "__mmask64";
      case Kind::Vec:
        return vtype(t.bits, t.cls);
      case Kind::F32:
        return "float";
    }
    return "?";
  }

  // Converts expression `e` of (bits, from) to class `to` (same bits).
  static std::string recls(const std::string& e, int bits, Cls from, Cls to) {
    if (from == to) return e;
    if (to == Cls::I)
      return bits == 128 ? fmt::format("_mm_castps_si128({})", e)
                         : fmt::format("{}_castps_si{}({})", P(bits), bits, e);
    return bits == 128 ? fmt::format("_mm_castsi128_ps({})", e)
                       : fmt::format("{}_castsi{}_ps({})", P(bits), bits, e);
  }
  // Low `to` bits of expression e (of `from` bits), class c.
  static std::string narrow(const std::string& e, int from, int to, Cls c) {
    if (from == to) return e;
    if (c == Cls::F) return fmt::format("{}_castps{}_ps{}({})", P(from), from, to, e);
    return fmt::format("{}_castsi{}_si{}({})", P(from), from, to, e);
  }

  // Operand v as an expression of class `want`; views render as casts of their base.
  std::string opnd(V v, Cls want) const {
    const Value& val = f_.values[v.id];
    if (val.type.kind != Kind::Vec) return name(v);
    std::string e;
    if (val.view) {
      const V base = views_.at(v.id);
      const Type& bt = ty(base);
      e = narrow(opnd(base, bt.cls), bt.bits, val.type.bits, bt.cls);
      return recls(e, val.type.bits, bt.cls, want);
    }
    return recls(name(v), val.type.bits, val.type.cls, want);
  }
  std::string f(V v) const { return opnd(v, Cls::F); }
  std::string i(V v) const { return opnd(v, Cls::I); }

  std::string addr(const Mem& m) const {
    std::string s = fmt::format("({}", name(m.base));
    if (m.index.valid()) s += fmt::format(" + {} * {}", name(m.index), int(m.scale));
    if (m.disp) s += fmt::format(" + {}", m.disp);
    return s + ")";
  }

  void line(const std::string& s) { out_ += std::string(size_t(2 * depth_), ' ') + s + "\n"; }
  // d = e, where e is of class `cls`.
  void set(V d, const std::string& e, Cls cls) {
    line(fmt::format("{} = {};", name(d), recls(e, ty(d).bits, cls, ty(d).cls)));
  }
  static const char* cmp(Cmp c) {
    switch (c) {
      case Cmp::LT:
        return "<";
      case Cmp::LE:
        return "<=";
      case Cmp::GT:
        return ">";
      case Cmp::GE:
        return ">=";
      case Cmp::EQ:
        return "==";
      case Cmp::NE:
        return "!=";
    }
    return "?";
  }
  // The VNNI intrinsics of a module without AVX512_VNNI are AVX-VNNI's (_avx_ names; ymm
  // and xmm only).
  const char* vnni_suffix() const { return m_.uses("avx512vnni") ? "" : "_avx"; }
  static std::string lit(int64_t v) {
    return v == INT64_MIN ? "INT64_MIN" : fmt::format("INT64_C({})", v);
  }

  void render(const Inst& in) {
    const V d = in.d, a = in.a, b = in.b, c = in.c;
    const int w = d.valid() && ty(d).kind == Kind::Vec ? ty(d).bits : 0;
    const std::string p = w ? P(w) : "";
    switch (in.op) {
      case Op::MovI:
        line(fmt::format("{} = {};", name(d), lit(in.imm)));
        break;
      case Op::Mov:
        line(fmt::format("{} = {};", name(d), name(a)));
        break;
      case Op::Add:
        line(fmt::format("{} = {} + {};", name(d), name(a), name(b)));
        break;
      case Op::Sub:
        line(fmt::format("{} = {} - {};", name(d), name(a), name(b)));
        break;
      case Op::Mul:
        line(fmt::format("{} = {} * {};", name(d), name(a), name(b)));
        break;
      case Op::Div:
        line(fmt::format("{} = {} / {};", name(d), name(a), name(b)));
        break;
      case Op::AddI:
        line(fmt::format("{} = {} + {};", name(d), name(a), lit(in.imm)));
        break;
      case Op::MulI:
        line(fmt::format("{} = {} * {};", name(d), name(a), lit(in.imm)));
        break;
      case Op::SarI:
        line(fmt::format("{} = {} >> {};", name(d), name(a), in.imm));
        break;
      case Op::AndI:
        line(fmt::format("{} = {} & {};", name(d), name(a), lit(in.imm)));
        break;
      case Op::Min:
        line(fmt::format("{0} = {1} < {2} ? {1} : {2};", name(d), name(a), name(b)));
        break;
      case Op::PtrAdd:
        line(fmt::format("{} = {} + {} * {};", name(d), name(a), name(b), lit(in.imm)));
        break;
      case Op::Stack:
        line(fmt::format("{0} = {0}_buf;", name(d)));
        break;
      case Op::Align:
        line(fmt::format("{} = (uint8_t*)(((uintptr_t){} + {}u) & ~(uintptr_t){}u);", name(d),
                         name(a), in.imm - 1, in.imm - 1));
        break;
      case Op::For:
        line(fmt::format("for ({0} = {1}; {0} < {2}; {0} += {3}) {{", name(d), name(a), name(b),
                         name(c)));
        ++depth_;
        break;
      case Op::If:
        line(fmt::format("if ({} {} {}) {{", name(a), cmp(in.cmp), name(b)));
        ++depth_;
        break;
      case Op::IfI:
        line(fmt::format("if ({} {} {}) {{", name(a), cmp(in.cmp), lit(in.imm)));
        ++depth_;
        break;
      case Op::EndFor:
      case Op::EndIf:
        --depth_;
        line("}");
        break;
      case Op::Ret:
        line("return;");
        break;
      case Op::Call: {
        std::string s = (in.callee >= 0 ? m_.funcs[size_t(in.callee)].name : in.sym) + "(";
        for (size_t k = 0; k < in.args.size(); ++k) s += (k ? ", " : "") + name(in.args[k]);
        line(s + ");");
        break;
      }
      case Op::VZero:
        set(d, fmt::format("{}_setzero_{}()", p, SI(w)), Cls::I);
        break;
      case Op::VSplat32:
        set(d, fmt::format("{}_set1_epi32((int)0x{:08X}u)", p, uint32_t(in.imm)), Cls::I);
        break;
      case Op::VLoad:
        if (ty(d).cls == Cls::F)
          set(d, fmt::format("{}_loadu_ps((const float*){})", p, addr(in.mem)), Cls::F);
        else
          set(d, fmt::format("{}_loadu_{}((const void*){})", p, SI(w), addr(in.mem)), Cls::I);
        break;
      case Op::VStore: {
        const int ab = ty(a).bits;
        if (ty(a).cls == Cls::F)
          line(fmt::format("{}_storeu_ps((float*){}, {});", P(ab), addr(in.mem), f(a)));
        else
          line(fmt::format("{}_storeu_{}((void*){}, {});", P(ab), SI(ab), addr(in.mem), i(a)));
        break;
      }
      case Op::VLoadSS:
        set(d, fmt::format("_mm_load_ss((const float*){})", addr(in.mem)), Cls::F);
        break;
      case Op::VStoreSS:
        line(fmt::format("_mm_store_ss((float*){}, {});", addr(in.mem), f(a)));
        break;
      case Op::VBcastF32:
        set(d, fmt::format("{}_set1_ps(*(const float*){})", p, addr(in.mem)), Cls::F);
        break;
      case Op::VBcastI16:
        set(d, fmt::format("{}_set1_epi16(*(const int16_t*){})", p, addr(in.mem)), Cls::I);
        break;
      case Op::VBcast128:
        set(d,
            fmt::format("{}(_mm_loadu_si128((const void*){}))",
                        w == 256 ? "_mm256_broadcastsi128_si256" : "_mm512_broadcast_i32x4",
                        addr(in.mem)),
            Cls::I);
        break;
      case Op::VBcast256:
        set(d,
            fmt::format("_mm512_broadcast_i64x4(_mm256_loadu_si256((const void*){}))",
                        addr(in.mem)),
            Cls::I);
        break;
      case Op::VInsertU16:
        set(d,
            fmt::format("_mm_insert_epi16({}, *(const int16_t*){}, {})", i(a), addr(in.mem),
                        in.imm),
            Cls::I);
        break;
      case Op::VInsert: {
        const int bb = ty(b).bits;
        const char* fn = bb == 256  ? "_mm512_inserti64x4"
                         : w == 512 ? "_mm512_inserti32x4"
                                    : "_mm256_inserti128_si256";
        set(d, fmt::format("{}({}, {}, {})", fn, i(a), i(b), in.imm), Cls::I);
        break;
      }
      case Op::VExtract: {
        const int ab = ty(a).bits;
        const char* fn = w == 256    ? "_mm512_extracti64x4_epi64"
                         : ab == 512 ? "_mm512_extracti32x4_epi32"
                                     : "_mm256_extracti128_si256";
        set(d, fmt::format("{}({}, {})", fn, i(a), in.imm), Cls::I);
        break;
      }
      case Op::VView:
        views_[d.id] = a;
        break;
      case Op::VCopy:
        set(d, opnd(a, ty(d).cls), ty(d).cls);
        break;
      case Op::VPrefetch:
        line(fmt::format("_mm_prefetch((const char*){}, _MM_HINT_T1);", addr(in.mem)));
        break;
      case Op::VAnd:
        set(d, fmt::format("{}_and_{}({}, {})", p, SI(w), i(a), i(b)), Cls::I);
        break;
      case Op::VSubI8:
        set(d, fmt::format("{}_sub_epi8({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VAddI32:
        set(d, fmt::format("{}_add_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VAddI16:
        set(d, fmt::format("{}_add_epi16({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VSubI16:
        set(d, fmt::format("{}_sub_epi16({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VAbsI8:
        set(d, fmt::format("{}_abs_epi8({})", p, i(a)), Cls::I);
        break;
      case Op::VMinI8:
        set(d, fmt::format("{}_min_epi8({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VSignI8:
        set(d, fmt::format("{}_sign_epi8({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VSrlI16:
        set(d, fmt::format("{}_srli_epi16({}, {})", p, i(a), in.imm), Cls::I);
        break;
      case Op::VSrlI16Mk:
        set(d,
            fmt::format("_mm512_mask_srli_epi16({0}, (__mmask32){1}, {0}, {2})", i(a), name(c),
                        in.imm),
            Cls::I);
        break;
      case Op::VSubI8Mk:
        set(d, fmt::format("_mm512_mask_sub_epi8({}, {}, {}, {})", i(d), name(c), i(a), i(b)),
            Cls::I);
        break;
      case Op::VMaddUbsW:
        set(d, fmt::format("{}_maddubs_epi16({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VMaddWd:
        set(d, fmt::format("{}_madd_epi16({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VOr:
        set(d, fmt::format("{}_or_{}({}, {})", p, SI(w), i(a), i(b)), Cls::I);
        break;
      case Op::VSubI32:
        set(d, fmt::format("{}_sub_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VMulLoI32:
        set(d, fmt::format("{}_mullo_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VSllI16:
        set(d, fmt::format("{}_slli_epi16({}, {})", p, i(a), in.imm), Cls::I);
        break;
      case Op::VSllI32:
        set(d, fmt::format("{}_slli_epi32({}, {})", p, i(a), in.imm), Cls::I);
        break;
      case Op::VSrlI32:
        set(d, fmt::format("{}_srli_epi32({}, {})", p, i(a), in.imm), Cls::I);
        break;
      case Op::VSraI32:
        set(d, fmt::format("{}_srai_epi32({}, {})", p, i(a), in.imm), Cls::I);
        break;
      case Op::VPermD:
        if (w == 512)
          set(d, fmt::format("_mm512_permutexvar_epi32({}, {})", i(b), i(a)), Cls::I);
        else
          set(d, fmt::format("_mm256_permutevar8x32_epi32({}, {})", i(a), i(b)), Cls::I);
        break;
      case Op::VSxBD:
        set(d, fmt::format("{}_cvtepi8_epi32({})", p, i(a)), Cls::I);
        break;
      case Op::VSxBW:
        set(d, fmt::format("{}_cvtepi8_epi16({})", p, i(a)), Cls::I);
        break;
      case Op::VConst32: {
        std::string lanes;
        for (size_t l = 0; l < in.consts.size(); ++l)
          lanes += fmt::format("{}(int)0x{:08X}u", l ? ", " : "", in.consts[l]);
        set(d, fmt::format("{}_setr_epi32({})", p, lanes), Cls::I);
        break;
      }
      case Op::VHaddI32:
        set(d, fmt::format("{}_hadd_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VShufB:
        set(d, fmt::format("{}_shuffle_epi8({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VTernLog:
        set(d, fmt::format("{}_ternarylogic_epi32({}, {}, {}, {})", p, i(a), i(b), i(c), in.imm),
            Cls::I);
        break;
      case Op::VDpBusd:
        set(d, fmt::format("{}_dpbusd{}_epi32({}, {}, {})", p, vnni_suffix(), i(d), i(a), i(b)),
            Cls::I);
        break;
      case Op::VDpBusdB:
        set(d,
            fmt::format("{0}_dpbusd_epi32({1}, {2}, {0}_set1_epi32(*(const int32_t*){3}))", p, i(d),
                        i(a), addr(in.mem)),
            Cls::I);
        break;
      case Op::VAddI32B:
        set(d,
            fmt::format("{0}_add_epi32({1}, {0}_set1_epi32(*(const int32_t*){2}))", p, i(a),
                        addr(in.mem)),
            Cls::I);
        break;
      case Op::VDpWssd:
        set(d, fmt::format("{}_dpwssd{}_epi32({}, {}, {})", p, vnni_suffix(), i(d), i(a), i(b)),
            Cls::I);
        break;
      case Op::VUnpackLo32:
        set(d, fmt::format("{}_unpacklo_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VUnpackHi32:
        set(d, fmt::format("{}_unpackhi_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VUnpackLo64:
        set(d, fmt::format("{}_unpacklo_epi64({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VUnpackHi64:
        set(d, fmt::format("{}_unpackhi_epi64({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VCombine128:
        set(d,
            fmt::format("_mm256_permute2x128_si256({}, {}, 0x{:02X})", i(a), i(b),
                        (in.imm & 1) | ((2 | (in.imm >> 1 & 1)) << 4)),
            Cls::I);
        break;
      case Op::VShuf128:
        set(d, fmt::format("_mm512_shuffle_i32x4({}, {}, 0x{:02X})", i(a), i(b), in.imm), Cls::I);
        break;
      case Op::VCvtI32F32:
        set(d, fmt::format("{}_cvtepi32_ps({})", p, i(a)), Cls::F);
        break;
      case Op::VCvtF16F32:
        set(d, fmt::format("{}_cvtph_ps({})", p, i(a)), Cls::F);
        break;
      case Op::VAddF:
        set(d, fmt::format("{}_add_ps({}, {})", p, f(a), f(b)), Cls::F);
        break;
      case Op::VMulF:
        set(d, fmt::format("{}_mul_ps({}, {})", p, f(a), f(b)), Cls::F);
        break;
      case Op::VFma:
        set(d, fmt::format("{}_fmadd_ps({}, {}, {})", p, f(a), f(b), f(d)), Cls::F);
        break;
      case Op::VDpBf16: {
        const char* bh = w == 512 ? "__m512bh" : w == 256 ? "__m256bh" : "__m128bh";
        set(d, fmt::format("{}_dpbf16_ps({}, ({})({}), ({})({}))", p, f(d), bh, i(a), bh, i(b)),
            Cls::F);
        break;
      }
      case Op::VFmaM:
        set(d,
            fmt::format("{0}_fmadd_ps({1}, {0}_loadu_ps((const float*){2}), {3})", p, f(a),
                        addr(in.mem), f(d)),
            Cls::F);
        break;
      case Op::VFmaB:
        set(d,
            fmt::format("{0}_fmadd_ps({1}, {0}_set1_ps(*(const float*){2}), {3})", p, f(a),
                        addr(in.mem), f(d)),
            Cls::F);
        break;
      case Op::VPermilF:
        set(d, fmt::format("{}_permute_ps({}, 0x{:02X})", p, f(a), in.imm), Cls::F);
        break;
      case Op::VMovShdup:
        set(d, fmt::format("{}_movehdup_ps({})", p, f(a)), Cls::F);
        break;
      case Op::VSubF:
        set(d, fmt::format("{}_sub_ps({}, {})", p, f(a), f(b)), Cls::F);
        break;
      case Op::VMaxF:
        set(d, fmt::format("{}_max_ps({}, {})", p, f(a), f(b)), Cls::F);
        break;
      case Op::VMinF:
        set(d, fmt::format("{}_min_ps({}, {})", p, f(a), f(b)), Cls::F);
        break;
      case Op::VDivF:
        set(d, fmt::format("{}_div_ps({}, {})", p, f(a), f(b)), Cls::F);
        break;
      case Op::VCvtTF32I32:
        set(d, fmt::format("{}_cvttps_epi32({})", p, f(a)), Cls::I);
        break;
      case Op::VBcastSS:
        set(d, fmt::format("{}_broadcastss_ps({})", p, f(a)), Cls::F);
        break;
      case Op::VLoadMz:
        if (ty(c).kind == Kind::Mask)
          set(d,
              fmt::format("{}_maskz_loadu_ps(({}){}, (const float*){})", p,
                          w == 512 ? "__mmask16" : "__mmask8", name(c), addr(in.mem)),
              Cls::F);
        else
          set(d, fmt::format("_mm256_maskload_ps((const float*){}, {})", addr(in.mem), i(c)),
              Cls::F);
        break;
      case Op::VCvtSsSd:
        set(d, fmt::format("_mm_castpd_ps(_mm_cvtss_sd(_mm_castps_pd({0}), {0}))", f(a)), Cls::F);
        break;
      case Op::VCvtSdSs:
        set(d, fmt::format("_mm_cvtsd_ss({0}, _mm_castps_pd({0}))", f(a)), Cls::F);
        break;
      case Op::VAddSD:
        set(d,
            fmt::format("_mm_castpd_ps(_mm_add_sd(_mm_castps_pd({}), _mm_castps_pd({})))", f(a),
                        f(b)),
            Cls::F);
        break;
      case Op::VCvtI64Sd:
        set(d, fmt::format("_mm_castpd_ps(_mm_cvtsi64_sd(_mm_setzero_pd(), {}))", name(a)), Cls::F);
        break;
      case Op::VSqrtSS:
        set(d, fmt::format("_mm_sqrt_ss({})", f(a)), Cls::F);
        break;
      case Op::VDivSD:
        set(d,
            fmt::format("_mm_castpd_ps(_mm_div_sd(_mm_castps_pd({}), _mm_castps_pd({})))", f(a),
                        f(b)),
            Cls::F);
        break;
      case Op::VAddSS:
        set(d, fmt::format("_mm_add_ss({}, {})", f(a), f(b)), Cls::F);
        break;
      case Op::VMulSS:
        set(d, fmt::format("_mm_mul_ss({}, {})", f(a), f(b)), Cls::F);
        break;
      case Op::VFmaSS:  // lane 0 = fma(a, b, d); lanes 1-3 stay d's (as vfmadd231ss)
        set(d, fmt::format("_mm_move_ss({0}, _mm_fmadd_ss({1}, {2}, {0}))", f(d), f(a), f(b)),
            Cls::F);
        break;
      case Op::KImm:
        line(fmt::format("{} = (__mmask64)0x{:X}ull;", name(d), uint64_t(in.imm)));
        break;
      case Op::KFirstN:
        line(fmt::format("{} = (__mmask64)((1ull << {}) - 1);", name(d), name(a)));
        break;
      case Op::KFromBytes:
        line(fmt::format("{} = _mm512_movepi8_mask({});", name(d), i(a)));
        break;
      case Op::KToI64:
        line(fmt::format("{} = (int64_t){};", name(d), name(a)));
        break;
      case Op::KLoad32:
        line(fmt::format("{} = (__mmask64)*(const uint32_t*){};", name(d), addr(in.mem)));
        break;
      case Op::KUnpackDQ:
        line(fmt::format("{} = _mm512_kunpackd({}, {});", name(d), name(a), name(b)));
        break;
      case Op::VStoreMk: {
        const int ab = ty(a).bits;
        line(fmt::format("{}_mask_storeu_ps((float*){}, ({}){}, {});", P(ab), addr(in.mem),
                         ab == 512 ? "__mmask16" : "__mmask8", name(c), f(a)));
        break;
      }
      case Op::VCvtF32I32R:
        set(d, fmt::format("{}_cvtps_epi32({})", p, f(a)), Cls::I);
        break;
      case Op::VCvtF32F16:
        set(d, fmt::format("{}_cvtps_ph({}, _MM_FROUND_TO_NEAREST_INT)", P(ty(a).bits), f(a)),
            Cls::I);
        break;
      case Op::VPackSsDw:
        set(d, fmt::format("{}_packs_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VPackSsWb:
        set(d, fmt::format("{}_packs_epi16({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VStoreU16:
        line(fmt::format("*(uint16_t*){} = (uint16_t)_mm_extract_epi16({}, {});", addr(in.mem),
                         i(a), in.imm));
        break;
      case Op::VCmpF: {
        const int ab = ty(a).bits;
        if (ty(d).kind == Kind::Mask)
          line(fmt::format("{} = (__mmask64){}_cmp_ps_mask({}, {}, 0x{:02X});", name(d), P(ab),
                           f(a), f(b), in.imm));
        else
          set(d, fmt::format("{}_cmp_ps({}, {}, 0x{:02X})", P(ab), f(a), f(b), in.imm), Cls::F);
        break;
      }
      case Op::VSelect:  // d = c ? a : b
        if (ty(c).kind == Kind::Mask)
          set(d,
              fmt::format("{}_mask_blend_ps(({}){}, {}, {})", p,
                          w == 512 ? "__mmask16" : "__mmask8", name(c), f(b), f(a)),
              Cls::F);
        else
          set(d, fmt::format("{}_blendv_ps({}, {}, {})", p, f(b), f(a), f(c)), Cls::F);
        break;
      case Op::KAnd:
        line(fmt::format("{} = {} & {};", name(d), name(a), name(b)));
        break;
      case Op::KOr:
        line(fmt::format("{} = {} | {};", name(d), name(a), name(b)));
        break;
      case Op::VMinI32:
        set(d, fmt::format("{}_min_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VMaxI32:
        set(d, fmt::format("{}_max_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VXor:
        set(d, fmt::format("{}_xor_{}({}, {})", p, SI(w), i(a), i(b)), Cls::I);
        break;
      case Op::VPackUsDw:
        set(d, fmt::format("{}_packus_epi32({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VZxWD:
        set(d, fmt::format("{}_cvtepu16_epi32({})", p, i(a)), Cls::I);
        break;
      case Op::MxcsrFlush:
        line(fmt::format("{0} = (int64_t)_mm_getcsr();", name(d)));
        line(fmt::format("_mm_setcsr((unsigned){} | 0x8040u);  /* DAZ | FTZ */", name(d)));
        break;
      case Op::MxcsrSet:
        line(fmt::format("_mm_setcsr((unsigned){});", name(a)));
        break;
      case Op::LoadI32:
        line(fmt::format("{} = (int64_t)*(const int32_t*){};", name(d), addr(in.mem)));
        break;
      case Op::StoreI32:
        line(fmt::format("*(int32_t*){} = (int32_t){};", addr(in.mem), name(a)));
        break;
      case Op::VCvtPsPd:
        set(d, fmt::format("{0}_castpd_ps({0}_cvtps_pd({1}))", p, f(a)), Cls::F);
        break;
      case Op::VCvtPdPs: {
        const std::string pa = P(ty(a).bits);
        set(d, fmt::format("{0}_cvtpd_ps({0}_castps_pd({1}))", pa, f(a)), Cls::F);
        break;
      }
      case Op::VFmaPd:
        set(d,
            fmt::format("{0}_castpd_ps({0}_fmadd_pd({0}_castps_pd({1}), {0}_castps_pd({2}), "
                        "{0}_castps_pd({3})))",
                        p, f(a), f(b), f(d)),
            Cls::F);
        break;
      case Op::VSubPd:
      case Op::VAddPd:
      case Op::VMulPd:
        set(d,
            fmt::format("{0}_castpd_ps({0}_{1}_pd({0}_castps_pd({2}), {0}_castps_pd({3})))", p,
                        in.op == Op::VSubPd   ? "sub"
                        : in.op == Op::VAddPd ? "add"
                                              : "mul",
                        f(a), f(b)),
            Cls::F);
        break;
      case Op::VAddI64:
        set(d, fmt::format("{}_add_epi64({}, {})", p, i(a), i(b)), Cls::I);
        break;
      case Op::VSllI64:
        set(d, fmt::format("{}_slli_epi64({}, {})", p, i(a), in.imm), Cls::I);
        break;
      case Op::VGatherI64:
        if (w == 512)
          set(d, fmt::format("_mm512_i64gather_epi64({}, (const void*){}, 8)", i(a), addr(in.mem)),
              Cls::I);
        else
          set(d,
              fmt::format("_mm256_i64gather_epi64((const long long*){}, {}, 8)", addr(in.mem),
                          i(a)),
              Cls::I);
        break;
      case Op::VMovMskF:
        line(fmt::format("{} = (int64_t){}_movemask_ps({});", name(d), P(ty(a).bits), f(a)));
        break;
    }
  }

  const Module& m_;
  const Func& f_;
  bool entry_;
  std::string out_;
  int depth_ = 1;
  std::map<uint32_t, V> views_;
};

}  // namespace

std::string render_c(const Module& m) {
  std::string s = fmt::format("/* {}\n", m.name);
  for (size_t p = 0, q; p < m.comment.size(); p = q + 1) {
    q = m.comment.find('\n', p);
    if (q == std::string::npos) q = m.comment.size();
    s += " * " + m.comment.substr(p, q - p) + "\n";
  }
  s += " */\n";
  for (const Helper& h : m.helpers) {
    std::string args;
    for (size_t i = 0; i < h.params.size(); ++i)
      args += (i ? ", " : "") + std::string(h.params[i] == Kind::Ptr ? "uint8_t*" : "int64_t");
    s += fmt::format("extern void {}({});\n", h.name, args);
  }
  for (size_t i = m.funcs.size(); i-- > 1;) s += FuncRender(m, m.funcs[i], false).render() + "\n";
  s += FuncRender(m, m.funcs[0], true).render();
  return s;
}

std::string c_isa_flags(const std::vector<std::string>& isa, std::vector<std::string>* unknown) {
  static const std::map<std::string, std::string> kFlags = {
      {"sse2", "-msse2"},
      {"avx", "-mavx"},
      {"avx2", "-mavx2"},
      {"fma", "-mfma"},
      {"f16c", "-mf16c"},
      {"bmi2", "-mbmi2"},
      {"avx512f", "-mavx512f"},
      {"avx512bw", "-mavx512bw"},
      {"avx512vl", "-mavx512vl"},
      {"avx512dq", "-mavx512dq"},
      {"avx512vnni", "-mavx512vnni"},
      {"avx512bf16", "-mavx512bf16"},
      {"avxvnni", "-mavxvnni"},
      {"avx512fp16", "-mavx512fp16"},
      {"amx_tile", "-mamx-tile"},
      {"amx_int8", "-mamx-int8"},
      {"amx_bf16", "-mamx-bf16"},
  };
  std::string s;
  for (const std::string& f : isa) {
    auto it = kFlags.find(f);
    if (it == kFlags.end()) {
      if (unknown) unknown->push_back(f);
      continue;
    }
    if (s.find(it->second) == std::string::npos) s += (s.empty() ? "" : " ") + it->second;
  }
  return s;
}

}  // namespace cke::jit::kir
