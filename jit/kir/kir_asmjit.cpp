#include "jit/kir/kir_asmjit.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "jit/code_module.h"

namespace cke::jit::kir {
namespace {

using namespace asmjit;
using namespace asmjit::x86;

struct Reg {
  Gp gp;
  Vec v;
  KReg k;
};

// Lowers one function (its callees already lowered: their entry labels in `labels`).
class FuncLowering {
 public:
  FuncLowering(const Module& m, const Func& f, Compiler& cc, bool avx512,
               const std::vector<Label>& labels)
      : m_(m), f_(f), cc_(cc), avx512_(avx512), labels_(labels) {}

  Label lower() {
    FuncSignatureBuilder sig;
    sig.setRet(TypeId::kVoid);
    for (const Type& t : f_.params)
      sig.addArg(t.kind == Kind::Ptr   ? TypeId::kIntPtr
                 : t.kind == Kind::Vec ? TypeId::kFloat32  // a float argument (Kind::F32)
                                       : TypeId::kInt64);
    FuncNode* fn = cc_.addFunc(sig);
    fn->frame().setAvxEnabled();
    fn->frame().setAvxCleanup();
    if (avx512_) fn->frame().setAvx512Enabled();
    regs_.resize(f_.values.size());
    for (size_t i = 0; i < f_.values.size(); ++i) declare(i);
    for (size_t i = 0; i < f_.params.size(); ++i) {
      if (f_.params[i].kind == Kind::Vec)
        fn->setArg(uint32_t(i), regs_[i].v);
      else
        fn->setArg(uint32_t(i), regs_[i].gp);
    }
    for (const Inst& in : f_.code)
      if (in.op == Op::VDpBf16 && !ones_.isValid()) {
        // asmjit's instruction table marks vdpbf16ps's destination write-only, so its register
        // allocator would drop the accumulator's old value; merge-masking with all lanes on
        // makes the destination read-write for the allocator and changes nothing else.
        ones_ = cc_.newKw("ones");
        Gp t = cc_.newInt32("ones_bits");
        cc_.mov(t, 0xFFFF);
        cc_.kmovw(ones_, t);
      }
    for (const Inst& in : f_.code) lower(in);
    cc_.endFunc();
    return fn->label();
  }

 private:
  void declare(size_t i) {
    const Value& v = f_.values[i];
    const char* n = v.name.c_str();
    switch (v.type.kind) {
      case Kind::I64:
        regs_[i].gp = cc_.newInt64(n);
        break;
      case Kind::Ptr:
        regs_[i].gp = cc_.newIntPtr(n);
        break;
      case Kind::Mask:
        regs_[i].k = cc_.newKq(n);
        break;
      case Kind::F32:  // a parameter kind only (its value is a Vec)
        break;
      case Kind::Vec:
        if (v.view) break;  // bound when its VView is lowered
        if (v.type.bits == 128)
          regs_[i].v = v.type.cls == Cls::F ? Vec(cc_.newXmmPs(n)) : Vec(cc_.newXmm(n));
        else if (v.type.bits == 256)
          regs_[i].v = v.type.cls == Cls::F ? Vec(cc_.newYmmPs(n)) : Vec(cc_.newYmm(n));
        else
          regs_[i].v = v.type.cls == Cls::F ? Vec(cc_.newZmmPs(n)) : Vec(cc_.newZmm(n));
        break;
    }
  }

  const Gp& g(V v) const { return regs_[v.id].gp; }
  const Vec& x(V v) const { return regs_[v.id].v; }
  const KReg& k(V v) const { return regs_[v.id].k; }
  int bits(V v) const { return f_.values[v.id].type.bits; }

  static Vec as_width(const Vec& r, int bits) {
    return bits == 128 ? Vec(r.xmm()) : bits == 256 ? Vec(r.ymm()) : Vec(r.zmm());
  }

  x86::Mem mem(const kir::Mem& m, uint32_t size = 0) const {
    x86::Mem r;
    if (m.index.valid()) {
      const uint32_t shift = m.scale == 8 ? 3 : m.scale == 4 ? 2 : m.scale == 2 ? 1 : 0;
      r = x86::ptr(g(m.base), g(m.index), shift, m.disp);
    } else {
      r = x86::ptr(g(m.base), m.disp);
    }
    if (size) r.setSize(size);
    return r;
  }

  // d = a (op) b for two-operand x86 scalar ops, safe when d aliases b.
  template <class OpFn>
  void scalar2(V d, V a, V b, OpFn op) {
    if (d.id == a.id) {
      op(g(d), g(b));
      return;
    }
    Gp t = cc_.newInt64("t");
    cc_.mov(t, g(a));
    op(t, g(b));
    cc_.mov(g(d), t);
  }

  static CondCode cond(Cmp c) {
    switch (c) {
      case Cmp::LT:
        return CondCode::kL;
      case Cmp::LE:
        return CondCode::kLE;
      case Cmp::GT:
        return CondCode::kG;
      case Cmp::GE:
        return CondCode::kGE;
      case Cmp::EQ:
        return CondCode::kE;
      case Cmp::NE:
        return CondCode::kNE;
    }
    return CondCode::kE;
  }

  struct Block {
    bool is_for;
    Label top, end;
    V var, limit, step;
  };

  void lower(const Inst& in) {
    const V d = in.d, a = in.a, b = in.b, c = in.c;
    switch (in.op) {
      case Op::MovI:
        cc_.mov(g(d), in.imm);
        break;
      case Op::Mov:
        cc_.mov(g(d), g(a));
        break;
      case Op::Add:
        if (d.id == b.id && d.id != a.id)
          cc_.add(g(d), g(a));
        else
          scalar2(d, a, b, [&](const Gp& x, const Gp& y) { cc_.add(x, y); });
        break;
      case Op::Sub:
        scalar2(d, a, b, [&](const Gp& x, const Gp& y) { cc_.sub(x, y); });
        break;
      case Op::Mul:
        scalar2(d, a, b, [&](const Gp& x, const Gp& y) { cc_.imul(x, y); });
        break;
      case Op::Div: {
        Gp lo = cc_.newInt64("lo"), hi = cc_.newInt64("hi");
        cc_.mov(lo, g(a));
        cc_.cqo(hi, lo);
        cc_.idiv(hi, lo, g(b));
        cc_.mov(g(d), lo);
        break;
      }
      case Op::AddI:
        if (d.id != a.id) cc_.mov(g(d), g(a));
        if (in.imm == int64_t(int32_t(in.imm))) {
          cc_.add(g(d), in.imm);
        } else {
          Gp t = cc_.newInt64("t");
          cc_.mov(t, in.imm);
          cc_.add(g(d), t);
        }
        break;
      case Op::MulI:
        if (in.imm == int64_t(int32_t(in.imm))) {
          cc_.imul(g(d), g(a), in.imm);
        } else {
          Gp t = cc_.newInt64("t");
          cc_.mov(t, in.imm);
          if (d.id != a.id) cc_.mov(g(d), g(a));
          cc_.imul(g(d), t);
        }
        break;
      case Op::SarI:
        if (d.id != a.id) cc_.mov(g(d), g(a));
        cc_.sar(g(d), in.imm);
        break;
      case Op::AndI:
        if (d.id != a.id) cc_.mov(g(d), g(a));
        cc_.and_(g(d), in.imm);
        break;
      case Op::Min:
        scalar2(d, a, b, [&](const Gp& x, const Gp& y) {
          cc_.cmp(x, y);
          cc_.cmovg(x, y);
        });
        break;
      case Op::PtrAdd: {
        const int64_t s = in.imm;
        if (s == 1 || s == 2 || s == 4 || s == 8) {
          cc_.lea(g(d), x86::ptr(g(a), g(b), s == 8 ? 3 : s == 4 ? 2 : s == 2 ? 1 : 0));
        } else {
          Gp t = cc_.newInt64("t");
          cc_.imul(t, g(b), s);
          cc_.lea(g(d), x86::ptr(g(a), t));
        }
        break;
      }
      case Op::Stack: {
        x86::Mem s = cc_.newStack(uint32_t(in.imm), 16);  // 16: no dynamic frame realignment
        cc_.lea(g(d), s);
        break;
      }
      case Op::Align:
        if (d.id != a.id) cc_.mov(g(d), g(a));
        cc_.add(g(d), in.imm - 1);
        cc_.and_(g(d), -in.imm);
        break;
      case Op::For: {
        Block bl{true, cc_.newLabel(), cc_.newLabel(), d, b, c};
        cc_.mov(g(d), g(a));
        cc_.cmp(g(d), g(b));
        cc_.jge(bl.end);
        cc_.bind(bl.top);
        blocks_.push_back(bl);
        break;
      }
      case Op::EndFor: {
        Block bl = blocks_.back();
        blocks_.pop_back();
        cc_.add(g(bl.var), g(bl.step));
        cc_.cmp(g(bl.var), g(bl.limit));
        cc_.jl(bl.top);
        cc_.bind(bl.end);
        break;
      }
      case Op::If:
      case Op::IfI: {
        Block bl{false, {}, cc_.newLabel(), {}, {}, {}};
        if (in.op == Op::If)
          cc_.cmp(g(a), g(b));
        else
          cc_.cmp(g(a), in.imm);
        cc_.j(x86::negateCond(cond(in.cmp)), bl.end);
        blocks_.push_back(bl);
        break;
      }
      case Op::EndIf:
        cc_.bind(blocks_.back().end);
        blocks_.pop_back();
        break;
      case Op::Ret:
        cc_.ret();
        break;
      case Op::Call: {
        FuncSignatureBuilder sig;
        sig.setRet(TypeId::kVoid);
        for (V v : in.args)
          sig.addArg(f_.values[v.id].type.kind == Kind::Ptr ? TypeId::kIntPtr : TypeId::kInt64);
        InvokeNode* node = nullptr;
        if (in.callee >= 0) {
          cc_.invoke(&node, labels_[size_t(in.callee)], sig);
        } else {
          // Through a register: the module's code stays instructions only (no address table).
          Gp target = cc_.newIntPtr("helper");
          cc_.mov(target, uint64_t(uintptr_t(m_.helper(in.sym)->address)));
          cc_.invoke(&node, target, sig);
        }
        if (node)
          for (size_t i = 0; i < in.args.size(); ++i) node->setArg(uint32_t(i), g(in.args[i]));
        break;
      }
      case Op::VZero:
        if (avx512_)
          cc_.vpxord(x(d), x(d), x(d));
        else
          cc_.vpxor(x(d), x(d), x(d));
        break;
      case Op::VSplat32: {
        Gp t = cc_.newUInt32("imm");
        cc_.mov(t, uint32_t(in.imm));
        if (avx512_) {
          cc_.vpbroadcastd(x(d), t);
        } else {
          cc_.vmovd(x(d).xmm(), t);
          cc_.vpbroadcastd(x(d), x(d).xmm());
        }
        break;
      }
      case Op::VLoad:
        cc_.vmovups(x(d), mem(in.mem));
        break;
      case Op::VStore:
        cc_.vmovups(mem(in.mem), x(a));
        break;
      case Op::VLoadSS:
        cc_.vmovss(x(d).xmm(), mem(in.mem, 4));
        break;
      case Op::VStoreSS:
        cc_.vmovss(mem(in.mem, 4), x(a).xmm());
        break;
      case Op::VBcastF32:
        cc_.vbroadcastss(x(d), mem(in.mem, 4));
        break;
      case Op::VBcastI16:
        cc_.vpbroadcastw(x(d), mem(in.mem, 2));
        break;
      case Op::VBcast128:
        if (avx512_)
          cc_.vbroadcasti32x4(x(d), mem(in.mem, 16));
        else
          cc_.vbroadcasti128(x(d), mem(in.mem, 16));
        break;
      case Op::VBcast256:
        cc_.vbroadcasti64x4(x(d), mem(in.mem, 32));
        break;
      case Op::VInsertU16:
        cc_.vpinsrw(x(d).xmm(), x(a).xmm(), mem(in.mem, 2), in.imm);
        break;
      case Op::VInsert:
        if (bits(b) == 256)
          cc_.vinserti64x4(x(d), x(a), x(b).ymm(), in.imm);
        else if (bits(d) == 512 || avx512_)
          cc_.vinserti32x4(x(d), x(a), x(b).xmm(), in.imm);
        else
          cc_.vinserti128(x(d), x(a), x(b).xmm(), in.imm);
        break;
      case Op::VExtract:
        if (bits(d) == 256)
          cc_.vextracti64x4(x(d).ymm(), x(a), in.imm);
        else if (bits(a) == 512 || avx512_)
          cc_.vextracti32x4(x(d).xmm(), x(a), in.imm);
        else
          cc_.vextracti128(x(d).xmm(), x(a), in.imm);
        break;
      case Op::VView:
        regs_[d.id].v = as_width(x(a), bits(d));
        break;
      case Op::VCopy:
        cc_.vmovaps(x(d), x(a));
        break;
      case Op::VPrefetch:
        cc_.prefetcht1(mem(in.mem, 1));
        break;
      case Op::VAnd:
        if (avx512_)
          cc_.vpandd(x(d), x(a), x(b));
        else
          cc_.vpand(x(d), x(a), x(b));
        break;
      case Op::VSubI8:
        cc_.vpsubb(x(d), x(a), x(b));
        break;
      case Op::VAddI32:
        cc_.vpaddd(x(d), x(a), x(b));
        break;
      case Op::VAddI16:
        cc_.vpaddw(x(d), x(a), x(b));
        break;
      case Op::VSubI16:
        cc_.vpsubw(x(d), x(a), x(b));
        break;
      case Op::VAbsI8:
        cc_.vpabsb(x(d), x(a));
        break;
      case Op::VMinI8:
        cc_.vpminsb(x(d), x(a), x(b));
        break;
      case Op::VSignI8:
        cc_.vpsignb(x(d), x(a), x(b));
        break;
      case Op::VSrlI16:
        cc_.vpsrlw(x(d), x(a), in.imm);
        break;
      case Op::VSrlI16Mk:
        if (d.id != a.id) cc_.vmovaps(x(d), x(a));
        cc_.k(k(c)).vpsrlw(x(d), x(d), in.imm);
        break;
      case Op::VSubI8Mk:
        cc_.k(k(c)).vpsubb(x(d), x(a), x(b));
        break;
      case Op::VMaddUbsW:
        cc_.vpmaddubsw(x(d), x(a), x(b));
        break;
      case Op::VMaddWd:
        cc_.vpmaddwd(x(d), x(a), x(b));
        break;
      case Op::VOr:
        if (avx512_)
          cc_.vpord(x(d), x(a), x(b));
        else
          cc_.vpor(x(d), x(a), x(b));
        break;
      case Op::VTernLog: {
        // vpternlogd overwrites its first source: through a temporary when d is b or c.
        Vec t = d.id == a.id || (d.id != b.id && d.id != c.id)
                    ? x(d)
                    : as_width(cc_.newZmm("tern"), bits(d));
        if (t.id() != x(a).id()) cc_.vmovdqa32(t, x(a));
        cc_.vpternlogd(t, x(b), x(c), in.imm);
        if (t.id() != x(d).id()) cc_.vmovdqa32(x(d), t);
        break;
      }
      case Op::VSubI32:
        cc_.vpsubd(x(d), x(a), x(b));
        break;
      case Op::VMulLoI32:
        cc_.vpmulld(x(d), x(a), x(b));
        break;
      case Op::VSllI16:
        cc_.vpsllw(x(d), x(a), in.imm);
        break;
      case Op::VSllI32:
        cc_.vpslld(x(d), x(a), in.imm);
        break;
      case Op::VSrlI32:
        cc_.vpsrld(x(d), x(a), in.imm);
        break;
      case Op::VSraI32:
        cc_.vpsrad(x(d), x(a), in.imm);
        break;
      case Op::VPermD:
        cc_.vpermd(x(d), x(b), x(a));  // vpermd dst, idx, src
        break;
      case Op::VSxBD:
        cc_.vpmovsxbd(x(d), x(a).xmm());
        break;
      case Op::VSxBW:
        cc_.vpmovsxbw(x(d), bits(d) == 512 ? Vec(x(a).ymm()) : Vec(x(a).xmm()));
        break;
      case Op::VConst32: {
        // Through a frame slot: the module's code stays instructions only.
        const uint32_t bytes = uint32_t(in.consts.size() * 4);
        x86::Mem slot = cc_.newStack(bytes, 16);  // 16: no dynamic frame realignment
        Gp t = cc_.newUInt32("lane");
        for (size_t l = 0; l < in.consts.size(); ++l) {
          x86::Mem m = slot;
          m.addOffset(int64_t(4 * l));
          m.setSize(4);
          cc_.mov(t, in.consts[l]);
          cc_.mov(m, t);
        }
        slot.setSize(bytes);
        cc_.vmovups(x(d), slot);
        break;
      }
      case Op::VHaddI32:
        cc_.vphaddd(x(d), x(a), x(b));
        break;
      case Op::VShufB:
        cc_.vpshufb(x(d), x(a), x(b));
        break;
      case Op::VDpBusd:
        // Without AVX-512 the code is for AVX-VNNI: asmjit prefers the EVEX form of the
        // VNNI ops (AVX512_VNNI + VL), which such a host lacks; {vex} asks for AVX_VNNI's.
        if (avx512_)
          cc_.vpdpbusd(x(d), x(a), x(b));
        else
          cc_.vex().vpdpbusd(x(d), x(a), x(b));
        break;
      case Op::VDpBusdB:
        if (!avx512_) throw std::logic_error("kir: vdpbusd_b needs AVX-512 (EVEX broadcast)");
        cc_.vpdpbusd(x(d), x(a), bits(d) == 512 ? mem(in.mem)._1to16() : mem(in.mem)._1to8());
        break;
      case Op::VAddI32B:
        if (!avx512_) throw std::logic_error("kir: vadd_i32_b needs AVX-512 (EVEX broadcast)");
        cc_.vpaddd(x(d), x(a), bits(d) == 512 ? mem(in.mem)._1to16() : mem(in.mem)._1to8());
        break;
      case Op::VDpWssd:
        if (avx512_)
          cc_.vpdpwssd(x(d), x(a), x(b));
        else
          cc_.vex().vpdpwssd(x(d), x(a), x(b));
        break;
      case Op::VUnpackLo32:
        cc_.vpunpckldq(x(d), x(a), x(b));
        break;
      case Op::VUnpackHi32:
        cc_.vpunpckhdq(x(d), x(a), x(b));
        break;
      case Op::VUnpackLo64:
        cc_.vpunpcklqdq(x(d), x(a), x(b));
        break;
      case Op::VUnpackHi64:
        cc_.vpunpckhqdq(x(d), x(a), x(b));
        break;
      case Op::VCombine128:
        if (avx512_)  // registers 16-31 need the EVEX form
          cc_.vshufi64x2(x(d), x(a), x(b), in.imm);
        else
          cc_.vperm2i128(x(d), x(a), x(b), (in.imm & 1) | ((2 | (in.imm >> 1 & 1)) << 4));
        break;
      case Op::VShuf128:
        cc_.vshufi32x4(x(d), x(a), x(b), in.imm);
        break;
      case Op::VCvtI32F32:
        cc_.vcvtdq2ps(x(d), x(a));
        break;
      case Op::VCvtF16F32:
        cc_.vcvtph2ps(x(d), bits(d) == 512 ? Vec(x(a).ymm()) : Vec(x(a).xmm()));
        break;
      case Op::VAddF:
        cc_.vaddps(x(d), x(a), x(b));
        break;
      case Op::VMulF:
        cc_.vmulps(x(d), x(a), x(b));
        break;
      case Op::VFma:
        cc_.vfmadd231ps(x(d), x(a), x(b));
        break;
      case Op::VFmaM:
        cc_.vfmadd231ps(x(d), x(a), mem(in.mem));
        break;
      case Op::VFmaB:
        if (!avx512_) throw std::logic_error("kir: vfma_b needs AVX-512 (EVEX broadcast)");
        cc_.vfmadd231ps(x(d), x(a), bits(d) == 512 ? mem(in.mem)._1to16() : mem(in.mem)._1to8());
        break;
      case Op::VDpBf16:
        cc_.k(ones_).vdpbf16ps(x(d), x(a), x(b));  // see ones_
        break;
      case Op::VPermilF:
        cc_.vpermilps(x(d), x(a), in.imm);
        break;
      case Op::VMovShdup:
        cc_.vmovshdup(x(d), x(a));
        break;
      case Op::VSubF:
        cc_.vsubps(x(d), x(a), x(b));
        break;
      case Op::VMaxF:
        cc_.vmaxps(x(d), x(a), x(b));
        break;
      case Op::VMinF:
        cc_.vminps(x(d), x(a), x(b));
        break;
      case Op::VDivF:
        cc_.vdivps(x(d), x(a), x(b));
        break;
      case Op::VCvtTF32I32:
        cc_.vcvttps2dq(x(d), x(a));
        break;
      case Op::VBcastSS:
        cc_.vbroadcastss(x(d), x(a).xmm());
        break;
      case Op::VLoadMz:
        if (f_.values[c.id].type.kind == Kind::Mask)
          cc_.k(k(c)).z().vmovups(x(d), mem(in.mem));
        else
          cc_.vmaskmovps(x(d), x(c), mem(in.mem));
        break;
      case Op::VCvtSsSd:
        cc_.vcvtss2sd(x(d).xmm(), x(a).xmm(), x(a).xmm());
        break;
      case Op::VCvtSdSs:
        cc_.vcvtsd2ss(x(d).xmm(), x(a).xmm(), x(a).xmm());
        break;
      case Op::VAddSD:
        cc_.vaddsd(x(d).xmm(), x(a).xmm(), x(b).xmm());
        break;
      case Op::VDivSD:
        cc_.vdivsd(x(d).xmm(), x(a).xmm(), x(b).xmm());
        break;
      case Op::VCvtI64Sd:
        if (avx512_)  // registers 16-31 have no VEX encoding
          cc_.vpxord(x(d).xmm(), x(d).xmm(), x(d).xmm());
        else
          cc_.vpxor(x(d).xmm(), x(d).xmm(), x(d).xmm());
        cc_.vcvtsi2sd(x(d).xmm(), x(d).xmm(), g(a));
        break;
      case Op::VSqrtSS:
        cc_.vsqrtss(x(d).xmm(), x(a).xmm(), x(a).xmm());
        break;
      case Op::VAddSS:
        cc_.vaddss(x(d).xmm(), x(a).xmm(), x(b).xmm());
        break;
      case Op::VMulSS:
        cc_.vmulss(x(d).xmm(), x(a).xmm(), x(b).xmm());
        break;
      case Op::VFmaSS:
        cc_.vfmadd231ss(x(d).xmm(), x(a).xmm(), x(b).xmm());
        break;
      case Op::KImm: {
        Gp t = cc_.newUInt64("kimm");
        cc_.mov(t, uint64_t(in.imm));
        cc_.kmovq(k(d), t);
        break;
      }
      case Op::KFirstN: {
        Gp t = cc_.newUInt64("kbits"), n = cc_.newUInt64("kn");
        cc_.mov(n, g(a));
        cc_.mov(t, 1);
        cc_.shl(t, n.r8());
        cc_.dec(t);
        cc_.kmovq(k(d), t);
        break;
      }
      case Op::KFromBytes:
        cc_.vpmovb2m(k(d), x(a));
        break;
      case Op::KToI64:
        cc_.kmovq(g(d), k(a));
        break;
      case Op::KLoad32:
        cc_.kmovd(k(d), mem(in.mem, 4));
        break;
      case Op::KUnpackDQ:
        cc_.kunpckdq(k(d), k(a), k(b));
        break;
      case Op::VStoreMk:
        cc_.k(k(c)).vmovups(mem(in.mem), x(a));
        break;
      case Op::VCvtF32I32R:  // MXCSR's rounding: round to nearest even (the ABI default)
        cc_.vcvtps2dq(x(d), x(a));
        break;
      case Op::VCvtF32F16:
        cc_.vcvtps2ph(bits(a) == 512 ? Vec(x(d).ymm()) : Vec(x(d).xmm()), x(a), 0);
        break;
      case Op::VPackSsDw:
        cc_.vpackssdw(x(d), x(a), x(b));
        break;
      case Op::VPackSsWb:
        cc_.vpacksswb(x(d), x(a), x(b));
        break;
      case Op::VStoreU16:
        cc_.vpextrw(mem(in.mem, 2), x(a).xmm(), in.imm);
        break;
      case Op::VCmpF:
        if (f_.values[d.id].type.kind == Kind::Mask) {
          cc_.vcmpps(k(d), x(a), x(b), in.imm);
        } else if (!avx512_) {
          cc_.vcmpps(x(d), x(a), x(b), in.imm);
        } else {  // registers 16-31 have no VEX vcmpps: through a mask, set lanes all ones
          KReg t = cc_.newKq("cmp");
          cc_.vcmpps(t, x(a), x(b), in.imm);
          cc_.vpxord(x(d), x(d), x(d));
          cc_.k(t).vpternlogd(x(d), x(d), x(d), 0xFF);
        }
        break;
      case Op::VSelect:  // d = c ? a : b
        if (f_.values[c.id].type.kind == Kind::Mask) {
          cc_.k(k(c)).vblendmps(x(d), x(b), x(a));
        } else if (!avx512_) {
          cc_.vblendvps(x(d), x(b), x(a), x(c));
        } else {  // vblendvps is VEX only: the sign bits into a mask
          KReg t = cc_.newKq("sel");
          Vec z = as_width(cc_.newZmm("zero"), bits(d));
          cc_.vpxord(z, z, z);
          cc_.vpcmpgtd(t, z, x(c));
          cc_.k(t).vblendmps(x(d), x(b), x(a));
        }
        break;
      case Op::KAnd:
        cc_.kandq(k(d), k(a), k(b));
        break;
      case Op::KOr:
        cc_.korq(k(d), k(a), k(b));
        break;
      case Op::VMinI32:
        cc_.vpminsd(x(d), x(a), x(b));
        break;
      case Op::VMaxI32:
        cc_.vpmaxsd(x(d), x(a), x(b));
        break;
      case Op::VXor:
        if (avx512_)
          cc_.vpxord(x(d), x(a), x(b));
        else
          cc_.vpxor(x(d), x(a), x(b));
        break;
      case Op::VPackUsDw:
        cc_.vpackusdw(x(d), x(a), x(b));
        break;
      case Op::VZxWD:
        cc_.vpmovzxwd(x(d), bits(d) == 512 ? Vec(x(a).ymm()) : Vec(x(a).xmm()));
        break;
      case Op::MxcsrFlush: {
        x86::Mem s = cc_.newStack(4, 4);
        cc_.stmxcsr(s);
        cc_.mov(g(d).r32(), s);  // zero-extends into the i64
        Gp t = cc_.newUInt32("csr");
        cc_.mov(t, g(d).r32());
        cc_.or_(t, 0x8040);
        cc_.mov(s, t);
        cc_.ldmxcsr(s);
        break;
      }
      case Op::MxcsrSet: {
        x86::Mem s = cc_.newStack(4, 4);
        cc_.mov(s, g(a).r32());
        cc_.ldmxcsr(s);
        break;
      }
      case Op::LoadI32:
        cc_.movsxd(g(d), mem(in.mem, 4));
        break;
      case Op::StoreI32:
        cc_.mov(mem(in.mem, 4), g(a).r32());
        break;
      case Op::VCvtPsPd:
        cc_.vcvtps2pd(x(d), bits(d) == 512 ? Vec(x(a).ymm()) : Vec(x(a).xmm()));
        break;
      case Op::VCvtPdPs:
        cc_.vcvtpd2ps(bits(d) == 256 ? Vec(x(d).ymm()) : Vec(x(d).xmm()), x(a));
        break;
      case Op::VFmaPd:
        cc_.vfmadd231pd(x(d), x(a), x(b));
        break;
      case Op::VSubPd:
        cc_.vsubpd(x(d), x(a), x(b));
        break;
      case Op::VAddPd:
        cc_.vaddpd(x(d), x(a), x(b));
        break;
      case Op::VMulPd:
        cc_.vmulpd(x(d), x(a), x(b));
        break;
      case Op::VAddI64:
        cc_.vpaddq(x(d), x(a), x(b));
        break;
      case Op::VSllI64:
        cc_.vpsllq(x(d), x(a), in.imm);
        break;
      case Op::VGatherI64: {
        // The gather writes its destination under a mask it clears, and the destination may
        // be neither the index nor the mask (else #UD): a fresh register, zeroed first so
        // that it is live together with the index at the gather (one register would fault,
        // which tests/jit/test_libm_expf.cpp would see at both levels).
        const x86::Mem t = x86::ptr(g(in.mem.base), x(a), 3, in.mem.disp);
        Vec r = as_width(cc_.newZmm("gather"), bits(d));
        if (avx512_) {
          KReg all = cc_.newKw("all");
          cc_.kxnorw(all, all, all);
          cc_.vpxord(r, r, r);
          cc_.k(all).vpgatherqq(r, t);
        } else {
          Vec all = as_width(cc_.newYmm("all"), bits(d));
          cc_.vpcmpeqq(all, all, all);
          cc_.vpxor(r, r, r);
          cc_.vpgatherqq(r, t, all);
        }
        if (avx512_)
          cc_.vmovdqa64(x(d), r);
        else
          cc_.vmovdqa(x(d), r);
        break;
      }
      case Op::VMovMskF:
        cc_.vmovmskps(g(d).r32(), x(a));
        break;
    }
  }

  const Module& m_;
  const Func& f_;
  Compiler& cc_;
  bool avx512_;
  const std::vector<Label>& labels_;
  std::vector<Reg> regs_;
  KReg ones_;  // all 16 lanes on, for vdpbf16ps (set up in lower())
  std::vector<Block> blocks_;
};

}  // namespace

std::unique_ptr<KernelModule> lower_to_machine_code(const Module& m, std::string* err) {
  if (std::string e = validate(m); !e.empty()) {
    *err = "kir: " + e;
    return nullptr;
  }
  const bool avx512 = m.uses("avx512f");
  ModuleBuilder mb(m.name);
  // Callees first (an entry calls functions with a higher index), so every call targets
  // a function whose label exists.
  std::vector<Label> labels(m.funcs.size());
  try {
    for (size_t i = m.funcs.size(); i-- > 0;)
      labels[i] = FuncLowering(m, m.funcs[i], mb.cc(), avx512, labels).lower();
  } catch (const std::exception& e) {
    *err = m.name + ": " + e.what();
    return nullptr;
  }
  if (!mb.finish(err)) return nullptr;
  return mb.make_module(labels[0]);
}

}  // namespace cke::jit::kir
