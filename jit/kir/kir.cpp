#include "jit/kir/kir.h"

#include <stdexcept>

namespace cke::jit::kir {

const Helper* Module::helper(const std::string& name) const {
  for (const Helper& h : helpers)
    if (h.name == name) return &h;
  return nullptr;
}

bool Module::uses(std::string_view feature) const {
  for (const std::string& f : isa)
    if (f == feature) return true;
  return false;
}

Builder::Builder(Module& m, std::string name, std::vector<Kind> params) : m_(m) {
  index_ = int(m.funcs.size());
  Func fn;
  fn.name = std::move(name);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] == Kind::F32 && index_ != 0)
      throw std::logic_error("kir: only the entry takes float arguments");
    Type t = params[i] == Kind::F32 ? Type{Kind::Vec, 128, Cls::F} : Type{params[i], 64, Cls::I};
    fn.params.push_back(t);
    fn.values.push_back({t, std::string("a").append(std::to_string(i)), false});
  }
  m.funcs.push_back(std::move(fn));
}

Func& Builder::f() {
  return m_.funcs[size_t(index_)];
}

V Builder::new_value(Type t, const std::string& name, bool view) {
  Func& fn = f();
  fn.values.push_back({t, name, view});
  return V{uint32_t(fn.values.size() - 1)};
}

const Type& Builder::type(V v) const {
  const Func& fn = m_.funcs[size_t(index_)];
  if (v.id >= fn.values.size()) throw std::logic_error("kir: unknown value in " + fn.name);
  return fn.values[v.id].type;
}

void Builder::need(V v, Kind k, const char* what) const {
  if (type(v).kind != k)
    throw std::logic_error(std::string("kir: ") + what + ": operand of the wrong kind in " +
                           m_.funcs[size_t(index_)].name);
}

void Builder::need_vec(V v, int bits, const char* what) const {
  need(v, Kind::Vec, what);
  if (bits && type(v).bits != bits)
    throw std::logic_error(std::string("kir: ") + what + ": vector of " +
                           std::to_string(type(v).bits) + " bits, want " + std::to_string(bits));
}

void Builder::need_writable(V v) const {
  if (m_.funcs[size_t(index_)].values[v.id].view)
    throw std::logic_error("kir: a view is read-only");
}

void Builder::need_mem(const Mem& m) const {
  need(m.base, Kind::Ptr, "memory base");
  if (m.index.valid()) need(m.index, Kind::I64, "memory index");
  if (m.scale != 1 && m.scale != 2 && m.scale != 4 && m.scale != 8)
    throw std::logic_error("kir: memory scale must be 1, 2, 4 or 8");
}

Inst& Builder::emit(Op op, V d, V a, V b, V c) {
  if (d.valid()) need_writable(d);
  Inst i;
  i.op = op;
  i.d = d;
  i.a = a;
  i.b = b;
  i.c = c;
  f().code.push_back(std::move(i));
  return f().code.back();
}

V Builder::i64(const std::string& name) {
  return new_value({Kind::I64, 64, Cls::I}, name);
}
V Builder::ptr(const std::string& name) {
  return new_value({Kind::Ptr, 64, Cls::I}, name);
}
V Builder::vec(int bits, Cls cls, const std::string& name) {
  if (bits != 128 && bits != 256 && bits != 512) throw std::logic_error("kir: vector width");
  return new_value({Kind::Vec, uint16_t(bits), cls}, name);
}
V Builder::mask(const std::string& name) {
  return new_value({Kind::Mask, 64, Cls::I}, name);
}

V Builder::imm(int64_t value, const std::string& name) {
  V d = i64(name);
  movi(d, value);
  return d;
}
void Builder::movi(V d, int64_t imm) {
  need(d, Kind::I64, "movi");
  emit(Op::MovI, d).imm = imm;
}
void Builder::mov(V d, V a) {
  if (type(d).kind != type(a).kind || type(d).kind == Kind::Vec || type(d).kind == Kind::Mask)
    throw std::logic_error("kir: mov of different or non-scalar kinds");
  emit(Op::Mov, d, a);
}
#define KIR_BIN(fn, OP)             \
  void Builder::fn(V d, V a, V b) { \
    need(d, Kind::I64, #fn);        \
    need(a, Kind::I64, #fn);        \
    need(b, Kind::I64, #fn);        \
    emit(Op::OP, d, a, b);          \
  }
KIR_BIN(add, Add)
KIR_BIN(sub, Sub)
KIR_BIN(mul, Mul)
KIR_BIN(div, Div)
KIR_BIN(min, Min)
#undef KIR_BIN
#define KIR_BINI(fn, OP)                    \
  void Builder::fn(V d, V a, int64_t imm) { \
    need(d, Kind::I64, #fn);                \
    need(a, Kind::I64, #fn);                \
    emit(Op::OP, d, a).imm = imm;           \
  }
KIR_BINI(muli, MulI)
KIR_BINI(sari, SarI)
KIR_BINI(andi, AndI)
#undef KIR_BINI

// addi also moves a pointer by a constant number of bytes.
void Builder::addi(V d, V a, int64_t imm) {
  if (type(d).kind != type(a).kind || (type(d).kind != Kind::I64 && type(d).kind != Kind::Ptr))
    throw std::logic_error("kir: addi of different or non-scalar kinds");
  emit(Op::AddI, d, a).imm = imm;
}

void Builder::ptr_add(V d, V base, V index, int64_t scale) {
  need(d, Kind::Ptr, "ptr_add");
  need(base, Kind::Ptr, "ptr_add");
  need(index, Kind::I64, "ptr_add");
  emit(Op::PtrAdd, d, base, index).imm = scale;
}
V Builder::stack(int64_t bytes, const std::string& name) {
  V d = ptr(name);
  emit(Op::Stack, d).imm = bytes;
  return d;
}
void Builder::ptr_align(V d, V a, int64_t align) {
  need(d, Kind::Ptr, "ptr_align");
  need(a, Kind::Ptr, "ptr_align");
  if (align < 1 || (align & (align - 1)) != 0 || align > 4096)
    throw std::logic_error("kir: ptr_align to a power of two up to 4096");
  emit(Op::Align, d, a).imm = align;
}

void Builder::for_(V var, V begin, V end, V step) {
  need(var, Kind::I64, "for");
  need(begin, Kind::I64, "for");
  need(end, Kind::I64, "for");
  need(step, Kind::I64, "for");
  emit(Op::For, var, begin, end, step);
  ++open_;
}
void Builder::end_for() {
  if (open_-- <= 0) throw std::logic_error("kir: end_for without for");
  emit(Op::EndFor);
}
void Builder::if_(V a, Cmp c, V b) {
  need(a, Kind::I64, "if");
  need(b, Kind::I64, "if");
  emit(Op::If, {}, a, b).cmp = c;
  ++open_;
}
void Builder::if_(V a, Cmp c, int64_t imm) {
  need(a, Kind::I64, "if");
  Inst& i = emit(Op::IfI, {}, a);
  i.cmp = c;
  i.imm = imm;
  ++open_;
}
void Builder::end_if() {
  if (open_-- <= 0) throw std::logic_error("kir: end_if without if");
  emit(Op::EndIf);
}
void Builder::ret() {
  emit(Op::Ret);
}
void Builder::call(int callee, std::vector<V> args) {
  if (callee <= index_ || callee >= int(m_.funcs.size()))
    throw std::logic_error(
        "kir: a call must target an inner function built before it, with a higher index");
  const Func& g = m_.funcs[size_t(callee)];
  if (g.params.size() != args.size()) throw std::logic_error("kir: call arity of " + g.name);
  for (size_t i = 0; i < args.size(); ++i) need(args[i], g.params[i].kind, "call argument");
  Inst& i = emit(Op::Call);
  i.callee = callee;
  i.args = std::move(args);
}
void Builder::call(const std::string& helper, std::vector<V> args) {
  const Helper* h = m_.helper(helper);
  if (!h) throw std::logic_error("kir: unknown C helper " + helper);
  if (h->params.size() != args.size()) throw std::logic_error("kir: call arity of " + helper);
  for (size_t i = 0; i < args.size(); ++i) need(args[i], h->params[i], "helper argument");
  Inst& i = emit(Op::Call);
  i.sym = helper;
  i.args = std::move(args);
}

void Builder::vzero(V d) {
  need_vec(d, 0, "vzero");
  emit(Op::VZero, d);
}
void Builder::vsplat32(V d, uint32_t imm) {
  need_vec(d, 0, "vsplat32");
  emit(Op::VSplat32, d).imm = imm;
}
#define KIR_VMEM(fn, OP, BITS)   \
  void Builder::fn(V d, Mem m) { \
    need_vec(d, BITS, #fn);      \
    need_mem(m);                 \
    emit(Op::OP, d).mem = m;     \
  }
KIR_VMEM(vload, VLoad, 0)
KIR_VMEM(vload_ss, VLoadSS, 128)
KIR_VMEM(vbcast_f32, VBcastF32, 0)
KIR_VMEM(vbcast_i16, VBcastI16, 0)
#undef KIR_VMEM
void Builder::vbcast128(V d, Mem m) {
  need_vec(d, 0, "vbcast128");
  if (type(d).bits < 256) throw std::logic_error("kir: vbcast128 into 128 bits");
  need_mem(m);
  emit(Op::VBcast128, d).mem = m;
}
void Builder::vbcast256(V d, Mem m) {
  need_vec(d, 512, "vbcast256");
  need_mem(m);
  emit(Op::VBcast256, d).mem = m;
}
void Builder::vstore(Mem m, V a) {
  need_vec(a, 0, "vstore");
  need_mem(m);
  emit(Op::VStore, {}, a).mem = m;
}
void Builder::vstore_ss(Mem m, V a) {
  need_vec(a, 128, "vstore_ss");
  need_mem(m);
  emit(Op::VStoreSS, {}, a).mem = m;
}
void Builder::vinsert_u16(V d, V a, Mem m, int lane) {
  need_vec(d, 128, "vinsert_u16");
  need_vec(a, 128, "vinsert_u16");
  need_mem(m);
  if (lane < 0 || lane > 7) throw std::logic_error("kir: vinsert_u16 lane");
  Inst& i = emit(Op::VInsertU16, d, a);
  i.mem = m;
  i.imm = lane;
}
void Builder::vinsert(V d, V a, V b, int block) {
  need_vec(d, 0, "vinsert");
  need_vec(a, type(d).bits, "vinsert");
  need_vec(b, 0, "vinsert");
  const int bb = type(b).bits, db = type(d).bits;
  if (bb >= db || block < 0 || block >= db / bb) throw std::logic_error("kir: vinsert block");
  emit(Op::VInsert, d, a, b).imm = block;
}
void Builder::vextract(V d, V a, int block) {
  need_vec(d, 0, "vextract");
  need_vec(a, 0, "vextract");
  const int db = type(d).bits, ab = type(a).bits;
  if (db >= ab || block < 0 || block >= ab / db) throw std::logic_error("kir: vextract block");
  emit(Op::VExtract, d, a).imm = block;
}
V Builder::view(V a, int bits, Cls cls) {
  need_vec(a, 0, "view");
  if (bits > type(a).bits) throw std::logic_error("kir: a view is not wider than its value");
  V d = new_value({Kind::Vec, uint16_t(bits), cls}, f().values[a.id].name + "_v", true);
  Inst i;
  i.op = Op::VView;
  i.d = d;
  i.a = a;
  f().code.push_back(std::move(i));
  return d;
}
void Builder::vcopy(V d, V a) {
  need_vec(d, 0, "vcopy");
  need_vec(a, type(d).bits, "vcopy");
  emit(Op::VCopy, d, a);
}
void Builder::vprefetch(Mem m) {
  need_mem(m);
  emit(Op::VPrefetch).mem = m;
}

#define KIR_V2(fn, OP)              \
  void Builder::fn(V d, V a, V b) { \
    need_vec(d, 0, #fn);            \
    need_vec(a, type(d).bits, #fn); \
    need_vec(b, type(d).bits, #fn); \
    emit(Op::OP, d, a, b);          \
  }
KIR_V2(vand, VAnd)
KIR_V2(vsub_i8, VSubI8)
KIR_V2(vadd_i32, VAddI32)
KIR_V2(vadd_i16, VAddI16)
KIR_V2(vsub_i16, VSubI16)
KIR_V2(vsign_i8, VSignI8)
KIR_V2(vmaddubs_w, VMaddUbsW)
KIR_V2(vmadd_wd, VMaddWd)
KIR_V2(vor, VOr)
KIR_V2(vsub_i32, VSubI32)
KIR_V2(vmullo_i32, VMulLoI32)
KIR_V2(vhadd_i32, VHaddI32)
KIR_V2(vshuf_b, VShufB)
KIR_V2(vdpbusd, VDpBusd)
KIR_V2(vdpwssd, VDpWssd)
KIR_V2(vmin_i8, VMinI8)
KIR_V2(vunpack_lo32, VUnpackLo32)
KIR_V2(vunpack_hi32, VUnpackHi32)
KIR_V2(vunpack_lo64, VUnpackLo64)
KIR_V2(vunpack_hi64, VUnpackHi64)
KIR_V2(vadd_f, VAddF)
KIR_V2(vmul_f, VMulF)
KIR_V2(vfma, VFma)
KIR_V2(vdpbf16, VDpBf16)
KIR_V2(vadd_ss, VAddSS)
KIR_V2(vmul_ss, VMulSS)
KIR_V2(vfma_ss, VFmaSS)
KIR_V2(vsub_f, VSubF)
KIR_V2(vmax_f, VMaxF)
KIR_V2(vmin_f, VMinF)
KIR_V2(vdiv_f, VDivF)
#undef KIR_V2
#define KIR_V2(fn, OP)              \
  void Builder::fn(V d, V a, V b) { \
    need_vec(d, 128, #fn);          \
    need_vec(a, 128, #fn);          \
    need_vec(b, 128, #fn);          \
    emit(Op::OP, d, a, b);          \
  }
KIR_V2(vadd_sd, VAddSD)
KIR_V2(vdiv_sd, VDivSD)
#undef KIR_V2
#define KIR_V1(fn, OP)              \
  void Builder::fn(V d, V a) {      \
    need_vec(d, 0, #fn);            \
    need_vec(a, type(d).bits, #fn); \
    emit(Op::OP, d, a);             \
  }
KIR_V1(vabs_i8, VAbsI8)
KIR_V1(vcvt_i32_f32, VCvtI32F32)
KIR_V1(vmovshdup, VMovShdup)
KIR_V1(vcvtt_f32_i32, VCvtTF32I32)
#undef KIR_V1
#define KIR_V1(fn, OP)         \
  void Builder::fn(V d, V a) { \
    need_vec(d, 128, #fn);     \
    need_vec(a, 128, #fn);     \
    emit(Op::OP, d, a);        \
  }
KIR_V1(vcvt_ss_sd, VCvtSsSd)
KIR_V1(vcvt_sd_ss, VCvtSdSs)
KIR_V1(vsqrt_ss, VSqrtSS)
#undef KIR_V1

void Builder::vternlog(V d, V a, V b, V c, int imm) {
  need_vec(d, 0, "vternlog");
  need_vec(a, type(d).bits, "vternlog");
  need_vec(b, type(d).bits, "vternlog");
  need_vec(c, type(d).bits, "vternlog");
  if (imm < 0 || imm > 255) throw std::logic_error("kir: vternlog's table is 8 bits");
  emit(Op::VTernLog, d, a, b, c).imm = imm;
}
void Builder::vsrl_i16(V d, V a, int imm) {
  need_vec(d, 0, "vsrl_i16");
  need_vec(a, type(d).bits, "vsrl_i16");
  emit(Op::VSrlI16, d, a).imm = imm;
}
void Builder::vsll_i16(V d, V a, int imm) {
  need_vec(d, 0, "vsll_i16");
  need_vec(a, type(d).bits, "vsll_i16");
  emit(Op::VSllI16, d, a).imm = imm;
}
void Builder::vsll_i32(V d, V a, int imm) {
  need_vec(d, 0, "vsll_i32");
  need_vec(a, type(d).bits, "vsll_i32");
  emit(Op::VSllI32, d, a).imm = imm;
}
void Builder::vsrl_i32(V d, V a, int imm) {
  need_vec(d, 0, "vsrl_i32");
  need_vec(a, type(d).bits, "vsrl_i32");
  emit(Op::VSrlI32, d, a).imm = imm;
}
void Builder::vsra_i32(V d, V a, int imm) {
  need_vec(d, 0, "vsra_i32");
  need_vec(a, type(d).bits, "vsra_i32");
  emit(Op::VSraI32, d, a).imm = imm;
}
void Builder::vperm_d(V d, V a, V idx) {
  need_vec(d, 0, "vperm_d");
  if (type(d).bits < 256) throw std::logic_error("kir: vperm_d needs 256 or 512 bits");
  need_vec(a, type(d).bits, "vperm_d");
  need_vec(idx, type(d).bits, "vperm_d");
  emit(Op::VPermD, d, a, idx);
}
void Builder::vsx_bd(V d, V a) {
  need_vec(d, 0, "vsx_bd");
  if (type(d).bits < 256) throw std::logic_error("kir: vsx_bd widens into 256 or 512 bits");
  need_vec(a, 128, "vsx_bd");
  emit(Op::VSxBD, d, a);
}
void Builder::vsx_bw(V d, V a) {
  need_vec(d, 0, "vsx_bw");
  if (type(d).bits < 256) throw std::logic_error("kir: vsx_bw widens into 256 or 512 bits");
  need_vec(a, type(d).bits / 2, "vsx_bw");
  emit(Op::VSxBW, d, a);
}
void Builder::vconst32(V d, std::vector<uint32_t> lanes) {
  need_vec(d, 0, "vconst32");
  if (lanes.size() != size_t(type(d).bits / 32))
    throw std::logic_error("kir: vconst32 needs one dword per lane");
  emit(Op::VConst32, d).consts = std::move(lanes);
}
void Builder::vsrl_i16_mk(V d, V k, V a, int imm) {
  need_vec(d, 512, "vsrl_i16_mk");
  need_vec(a, 512, "vsrl_i16_mk");
  need(k, Kind::Mask, "vsrl_i16_mk");
  emit(Op::VSrlI16Mk, d, a, {}, k).imm = imm;
}
void Builder::vsub_i8_mk(V d, V k, V a, V b) {
  need_vec(d, 512, "vsub_i8_mk");
  need_vec(a, 512, "vsub_i8_mk");
  need_vec(b, 512, "vsub_i8_mk");
  need(k, Kind::Mask, "vsub_i8_mk");
  emit(Op::VSubI8Mk, d, a, b, k);
}
void Builder::vshuf128(V d, V a, V b, int imm) {
  need_vec(d, 512, "vshuf128");
  need_vec(a, 512, "vshuf128");
  need_vec(b, 512, "vshuf128");
  emit(Op::VShuf128, d, a, b).imm = imm;
}
void Builder::vcombine128(V d, V a, V b, int imm) {
  need_vec(d, 256, "vcombine128");
  need_vec(a, 256, "vcombine128");
  need_vec(b, 256, "vcombine128");
  if (imm < 0 || imm > 3) throw std::logic_error("kir: vcombine128 selects with 2 bits");
  emit(Op::VCombine128, d, a, b).imm = imm;
}
void Builder::vcvt_f16_f32(V d, V a) {
  need_vec(d, 0, "vcvt_f16_f32");
  need_vec(a, type(d).bits == 512 ? 256 : 128, "vcvt_f16_f32");
  emit(Op::VCvtF16F32, d, a);
}
void Builder::vfma_m(V d, V a, Mem m) {
  need_vec(d, 0, "vfma_m");
  need_vec(a, type(d).bits, "vfma_m");
  need_mem(m);
  emit(Op::VFmaM, d, a).mem = m;
}
// The ops whose second operand is one element at m broadcast to every lane (an EVEX {1toN}
// memory operand): 256 or 512 bits.
void Builder::bcast_mem_op(Op op, const char* what, V d, V a, Mem m) {
  need_vec(d, 0, what);
  if (type(d).bits < 256)
    throw std::logic_error(std::string("kir: ") + what + " takes 256 or 512 bits");
  need_vec(a, type(d).bits, what);
  need_mem(m);
  emit(op, d, a).mem = m;
}
void Builder::vfma_b(V d, V a, Mem m) {
  bcast_mem_op(Op::VFmaB, "vfma_b", d, a, m);
}
void Builder::vdpbusd_b(V d, V a, Mem m) {
  bcast_mem_op(Op::VDpBusdB, "vdpbusd_b", d, a, m);
}
void Builder::vadd_i32_b(V d, V a, Mem m) {
  bcast_mem_op(Op::VAddI32B, "vadd_i32_b", d, a, m);
}
void Builder::vpermil_f(V d, V a, int imm) {
  need_vec(d, 0, "vpermil_f");
  need_vec(a, type(d).bits, "vpermil_f");
  emit(Op::VPermilF, d, a).imm = imm;
}
void Builder::vbcast_ss(V d, V a) {
  need_vec(d, 0, "vbcast_ss");
  need_vec(a, 128, "vbcast_ss");
  emit(Op::VBcastSS, d, a);
}
void Builder::vload_mz(V d, Mem m, V mask) {
  need_vec(d, 0, "vload_mz");
  need_mem(m);
  if (type(mask).kind == Kind::Vec) {
    if (type(d).bits != 256 || type(mask).bits != 256)
      throw std::logic_error("kir: vload_mz with a vector mask is 256 bits (vmaskmovps)");
  } else {
    need(mask, Kind::Mask, "vload_mz");
    if (type(d).bits == 128) throw std::logic_error("kir: vload_mz with a k mask: 256 or 512");
  }
  emit(Op::VLoadMz, d, {}, {}, mask).mem = m;
}
void Builder::kimm(V d, uint64_t imm) {
  need(d, Kind::Mask, "kimm");
  emit(Op::KImm, d).imm = int64_t(imm);
}
void Builder::kfirst_n(V d, V n) {
  need(d, Kind::Mask, "kfirst_n");
  need(n, Kind::I64, "kfirst_n");
  emit(Op::KFirstN, d, n);
}
void Builder::vcvt_i64_sd(V d, V a) {
  need_vec(d, 128, "vcvt_i64_sd");
  need(a, Kind::I64, "vcvt_i64_sd");
  emit(Op::VCvtI64Sd, d, a);
}
void Builder::kto_i64(V d, V k) {
  need(d, Kind::I64, "kto_i64");
  need(k, Kind::Mask, "kto_i64");
  emit(Op::KToI64, d, k);
}
void Builder::kload32(V d, Mem m) {
  need(d, Kind::Mask, "kload32");
  need_mem(m);
  emit(Op::KLoad32, d).mem = m;
}
void Builder::kunpack_dq(V d, V hi, V lo) {
  need(d, Kind::Mask, "kunpack_dq");
  need(hi, Kind::Mask, "kunpack_dq");
  need(lo, Kind::Mask, "kunpack_dq");
  emit(Op::KUnpackDQ, d, hi, lo);
}
void Builder::kfrom_bytes(V d, V a) {
  need(d, Kind::Mask, "kfrom_bytes");
  need_vec(a, 512, "kfrom_bytes");
  emit(Op::KFromBytes, d, a);
}
void Builder::vstore_mk(Mem m, V a, V k) {
  need_vec(a, 0, "vstore_mk");
  need(k, Kind::Mask, "vstore_mk");
  need_mem(m);
  emit(Op::VStoreMk, {}, a, {}, k).mem = m;
}
void Builder::vcvt_f32_i32_rn(V d, V a) {
  need_vec(d, 0, "vcvt_f32_i32_rn");
  need_vec(a, type(d).bits, "vcvt_f32_i32_rn");
  emit(Op::VCvtF32I32R, d, a);
}
void Builder::vcvt_f32_f16(V d, V a) {
  need_vec(a, 0, "vcvt_f32_f16");
  need_vec(d, type(a).bits == 512 ? 256 : 128, "vcvt_f32_f16");
  emit(Op::VCvtF32F16, d, a);
}
void Builder::vpackss_dw(V d, V a, V b) {
  need_vec(d, 0, "vpackss_dw");
  need_vec(a, type(d).bits, "vpackss_dw");
  need_vec(b, type(d).bits, "vpackss_dw");
  emit(Op::VPackSsDw, d, a, b);
}
void Builder::vpackss_wb(V d, V a, V b) {
  need_vec(d, 0, "vpackss_wb");
  need_vec(a, type(d).bits, "vpackss_wb");
  need_vec(b, type(d).bits, "vpackss_wb");
  emit(Op::VPackSsWb, d, a, b);
}
void Builder::vstore_u16(Mem m, V a, int lane) {
  need_vec(a, 128, "vstore_u16");
  need_mem(m);
  if (lane < 0 || lane > 7) throw std::logic_error("kir: vstore_u16 lane");
  Inst& in = emit(Op::VStoreU16, {}, a);
  in.mem = m;
  in.imm = lane;
}

int fcmp_imm(FCmp p) {
  switch (p) {
    case FCmp::EQ:
      return 0x00;  // _CMP_EQ_OQ
    case FCmp::LT:
      return 0x11;  // _CMP_LT_OQ
    case FCmp::LE:
      return 0x12;  // _CMP_LE_OQ
    case FCmp::GT:
      return 0x1E;  // _CMP_GT_OQ
    case FCmp::GE:
      return 0x1D;  // _CMP_GE_OQ
    case FCmp::NEQ:
      return 0x04;  // _CMP_NEQ_UQ
    case FCmp::UNORD:
      return 0x03;  // _CMP_UNORD_Q
    case FCmp::ORD:
      return 0x07;  // _CMP_ORD_Q
  }
  return 0;
}

// A mask operand: an AVX-512 mask, or a vector of `bits` (its dword sign bits select).
static bool is_mask_or_vec(const Type& t, int bits) {
  return t.kind == Kind::Mask || (t.kind == Kind::Vec && t.bits == bits);
}

void Builder::vcmp_f(V d, V a, V b, FCmp p) {
  need_vec(a, 0, "vcmp_f");
  need_vec(b, type(a).bits, "vcmp_f");
  if (!is_mask_or_vec(type(d), type(a).bits))
    throw std::logic_error("kir: vcmp_f writes a mask or a vector of its operands' width");
  if (type(d).kind == Kind::Vec && type(a).bits == 512)
    throw std::logic_error("kir: a 512-bit vcmp_f writes a mask");
  emit(Op::VCmpF, d, a, b).imm = fcmp_imm(p);
}
void Builder::vselect(V d, V c, V a, V b) {
  need_vec(d, 0, "vselect");
  need_vec(a, type(d).bits, "vselect");
  need_vec(b, type(d).bits, "vselect");
  if (!is_mask_or_vec(type(c), type(d).bits))
    throw std::logic_error("kir: vselect selects by a mask or a vector of d's width");
  if (type(c).kind == Kind::Vec && type(d).bits == 512)
    throw std::logic_error("kir: a 512-bit vselect selects by a mask");
  emit(Op::VSelect, d, a, b, c);
}
void Builder::kand(V d, V a, V b) {
  need(d, Kind::Mask, "kand");
  need(a, Kind::Mask, "kand");
  need(b, Kind::Mask, "kand");
  emit(Op::KAnd, d, a, b);
}
void Builder::kor(V d, V a, V b) {
  need(d, Kind::Mask, "kor");
  need(a, Kind::Mask, "kor");
  need(b, Kind::Mask, "kor");
  emit(Op::KOr, d, a, b);
}
#define KIR_V2X(fn, OP)             \
  void Builder::fn(V d, V a, V b) { \
    need_vec(d, 0, #fn);            \
    need_vec(a, type(d).bits, #fn); \
    need_vec(b, type(d).bits, #fn); \
    emit(Op::OP, d, a, b);          \
  }
KIR_V2X(vmin_i32, VMinI32)
KIR_V2X(vmax_i32, VMaxI32)
KIR_V2X(vxor, VXor)
KIR_V2X(vpackus_dw, VPackUsDw)
KIR_V2X(vfma_pd, VFmaPd)
KIR_V2X(vsub_pd, VSubPd)
KIR_V2X(vadd_pd, VAddPd)
KIR_V2X(vmul_pd, VMulPd)
KIR_V2X(vadd_i64, VAddI64)
#undef KIR_V2X
void Builder::vzx_wd(V d, V a) {
  need_vec(d, 0, "vzx_wd");
  if (type(d).bits < 256) throw std::logic_error("kir: vzx_wd widens into 256 or 512 bits");
  need_vec(a, type(d).bits / 2, "vzx_wd");
  emit(Op::VZxWD, d, a);
}

void Builder::mxcsr_flush(V d) {
  need(d, Kind::I64, "mxcsr_flush");
  emit(Op::MxcsrFlush, d);
}
void Builder::mxcsr_set(V a) {
  need(a, Kind::I64, "mxcsr_set");
  emit(Op::MxcsrSet, {}, a);
}

void Builder::load_i32(V d, Mem m) {
  need(d, Kind::I64, "load_i32");
  need_mem(m);
  emit(Op::LoadI32, d).mem = m;
}

void Builder::store_i32(Mem m, V a) {
  need(a, Kind::I64, "store_i32");
  need_mem(m);
  emit(Op::StoreI32, {}, a).mem = m;
}

void Builder::vcvt_ps_pd(V d, V a) {
  need_vec(d, 0, "vcvt_ps_pd");
  if (type(d).bits < 256) throw std::logic_error("kir: vcvt_ps_pd widens into 256 or 512 bits");
  need_vec(a, type(d).bits / 2, "vcvt_ps_pd");
  emit(Op::VCvtPsPd, d, a);
}
void Builder::vcvt_pd_ps(V d, V a) {
  need_vec(d, 0, "vcvt_pd_ps");
  if (type(d).bits > 256) throw std::logic_error("kir: vcvt_pd_ps narrows into 128 or 256 bits");
  need_vec(a, type(d).bits * 2, "vcvt_pd_ps");
  emit(Op::VCvtPdPs, d, a);
}
void Builder::vsll_i64(V d, V a, int imm) {
  need_vec(d, 0, "vsll_i64");
  need_vec(a, type(d).bits, "vsll_i64");
  if (imm < 0 || imm > 63) throw std::logic_error("kir: vsll_i64 shifts by 0..63");
  emit(Op::VSllI64, d, a).imm = imm;
}
void Builder::vgather_i64(V d, Mem table, V idx) {
  need_vec(d, 0, "vgather_i64");
  if (type(d).bits < 256) throw std::logic_error("kir: vgather_i64 takes 256 or 512 bits");
  need_vec(idx, type(d).bits, "vgather_i64");
  need_mem(table);
  if (table.index.valid()) throw std::logic_error("kir: vgather_i64's table is base + disp");
  emit(Op::VGatherI64, d, idx).mem = table;
}
void Builder::vmovmsk_f(V d, V a) {
  need(d, Kind::I64, "vmovmsk_f");
  need_vec(a, 0, "vmovmsk_f");
  if (type(a).bits > 256) throw std::logic_error("kir: vmovmsk_f reads 128 or 256 bits");
  emit(Op::VMovMskF, d, a);
}

std::string validate(const Module& m) {
  if (m.funcs.empty()) return m.name + ": no functions";
  for (const Func& f : m.funcs) {
    std::vector<Op> open;  // For or If (IfI counts as If)
    for (const Inst& i : f.code) {
      if (i.op == Op::For || i.op == Op::If || i.op == Op::IfI)
        open.push_back(i.op == Op::For ? Op::For : Op::If);
      if (i.op == Op::EndFor || i.op == Op::EndIf) {
        const Op want = i.op == Op::EndFor ? Op::For : Op::If;
        if (open.empty() || open.back() != want)
          return f.name + ": " + (i.op == Op::EndFor ? "end_for" : "end_if") +
                 " does not close the innermost block";
        open.pop_back();
      }
    }
    if (!open.empty()) return f.name + ": a for/if block is not closed";
  }
  return "";
}

}  // namespace cke::jit::kir
