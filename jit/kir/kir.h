// KIR: the kernel description every generator writes, once, and two sinks render —
// machine code (kir_asmjit.cpp, asmjit's x86::Compiler, at load) and C with <immintrin.h>
// intrinsics (kir_c.cpp, for --emit-c). One description, two renderings: the C that
// --emit-c writes computes the same bits as the machine code the JIT runs.
//
// Why that holds: every operation here is defined lane by lane (integer ops, IEEE-754
// single ops in round-to-nearest, FMA with one rounding, fp16<->f32 conversions); each sink
// renders it with an instruction or intrinsic of exactly that definition, and the C is
// compiled with -ffp-contract=off and without -ffast-math, so the compiler may move
// instructions but not change a rounding. Registers are virtual (the sinks allocate).
//
// A KIR module is a list of functions; function 0 is the entry (a kernel with the ABI of
// its map's call_abi), the others are inner functions it calls. Values are typed: i64,
// pointer, vector (width 128/256/512 bits; float or integer class, which only decides the
// C type — the bits are the bits), or an AVX-512 mask. Control flow is structured (for,
// if, return), so the C reads as loops, not as gotos.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cke::jit::kir {

// F32 is a parameter kind only: a float argument (SysV: in an xmm register), which the
// function sees as a 128-bit float vector whose lane 0 holds it.
enum class Kind : uint8_t { I64, Ptr, Vec, Mask, F32 };
enum class Cls : uint8_t { F, I };  // float (__m512) or integer (__m512i) C type

struct Type {
  Kind kind = Kind::I64;
  uint16_t bits = 64;  // Vec: 128, 256 or 512
  Cls cls = Cls::I;
};

// A value of a function (index into Func::values).
struct V {
  uint32_t id = UINT32_MAX;
  bool valid() const { return id != UINT32_MAX; }
};

// A memory operand: base + index * scale + disp (index optional, an i64 value).
struct Mem {
  V base;
  V index;
  uint8_t scale = 1;
  int32_t disp = 0;
};

enum class Cmp : uint8_t { LT, LE, GT, GE, EQ, NE };

enum class Op : uint8_t {
  // scalars (i64 / ptr)
  MovI,    // d = imm
  Mov,     // d = a
  Add,     // d = a + b
  Sub,     // d = a - b
  Mul,     // d = a * b
  Div,     // d = a / b (signed, truncating; b > 0)
  AddI,    // d = a + imm
  MulI,    // d = a * imm
  SarI,    // d = a >> imm (arithmetic)
  AndI,    // d = a & imm
  Min,     // d = min(a, b) (signed)
  PtrAdd,  // d(ptr) = a(ptr) + b(i64) * imm
  Stack,   // d(ptr) = a frame buffer of imm bytes, 16-byte aligned
  Align,   // d(ptr) = a(ptr) rounded up to a multiple of imm (a power of two)
  // structured control flow
  For,     // for (d = a; d < b; d += c) {     (c an i64 value)
  EndFor,  // }
  If,      // if (a cmp b) {
  IfI,     // if (a cmp imm) {
  EndIf,   // }
  Ret,     // return;
  Call,    // callee(args...): an inner function (callee >= 0) or a C helper (sym)
  // vectors: data movement
  VZero,       // d = 0
  VSplat32,    // every dword of d = imm
  VLoad,       // d = mem (full width, unaligned)
  VStore,      // mem = a
  VLoadSS,     // d = [mem f32, 0, 0, 0]
  VStoreSS,    // mem f32 = lane 0 of a
  VBcastF32,   // every f32 lane of d = mem
  VBcastI16,   // every 16-bit lane of d = mem
  VBcast128,   // every 128-bit block of d = mem
  VBcast256,   // both 256-bit halves of d (512) = mem
  VInsertU16,  // d = a with 16-bit lane imm = mem (128-bit)
  VInsert,     // d = a with block imm (of b's width) = b
  VExtract,    // d = block imm (of d's width) of a
  VView,       // d = the low bits(d) of a, read-only alias (class may differ)
  VCopy,       // d = a
  VPrefetch,   // a hint to load mem's cache line into L2 (prefetcht1): no value, never faults
  // vectors: integer arithmetic (lane sizes in the name)
  VAnd,       // d = a & b
  VSubI8,     // d = a - b (wrapping bytes)
  VAddI32,    // d = a + b
  VAddI16,    // d = a + b (wrapping, per 16 bits)
  VSubI16,    // d = a - b (wrapping, per 16 bits)
  VAbsI8,     // d = |a| (-128 stays 0x80)
  VMinI8,     // d = min(a, b) per signed byte
  VSignI8,    // d = vpsignb(a, b): a negated where b < 0, zeroed where b == 0 (<= 256 bits)
  VSrlI16,    // d = a >> imm (logical, per 16 bits)
  VSrlI16Mk,  // d = k ? a >> imm : a   (per 16-bit lane; mask k = c)
  VSubI8Mk,   // d = k ? a - b : d      (per byte; mask k = c; d is read)
  VMaddUbsW,  // d = vpmaddubsw(a unsigned, b signed) -> saturated i16 pair sums
  VMaddWd,    // d = vpmaddwd(a, b) -> i32 pair sums
  VOr,        // d = a | b
  VTernLog,   // d = vpternlogd(a, b, c, imm): bit i of d = bit (4 a_i + 2 b_i + c_i) of imm, for
              // every bit i (AVX-512 only)
  VSubI32,    // d = a - b (wrapping)
  VMulLoI32,  // d = low 32 bits of a * b per dword
  VSllI16,    // d = a << imm (per 16 bits)
  VSllI32,    // d = a << imm (per 32 bits)
  VSrlI32,    // d = a >> imm (logical, per 32 bits)
  VSraI32,    // d = a >> imm (arithmetic, per 32 bits)
  VPermD,     // d[i] = a[b[i]] (dwords; b holds lane indices) (256 or 512 bits)
  VSxBD,      // d = the low int8 lanes of a (128 bits) sign-extended to int32 (d: 256/512)
  VSxBW,      // d = int8 lanes of a (half d's bits) sign-extended to int16 (d: 256 or 512)
  VConst32,   // d = the dwords in `consts` (lane 0 first)
  VHaddI32,   // d = vphaddd(a, b) (<= 256 bits)
  VShufB,     // d = vpshufb(a, b): per 128-bit block, byte i = b[i] < 0 ? 0 : a[b[i] & 15]
  VDpBusd,    // d += vpdpbusd(a unsigned, b signed) (4-byte groups into i32; d is read)
  VDpWssd,    // d += vpdpwssd(a, b) (i16 pairs into i32, wrapping; d is read)
  VDpBusdB,   // d += vpdpbusd(a unsigned, the 4 signed bytes at mem in every dword lane): per
              // dword i, d[i] += sum_k u8(a[4i+k]) * s8(mem[k]), wrapping; d is read (AVX-512:
              // the dword broadcast is the instruction's memory operand, {1toN})
  VAddI32B,   // d = a + the int32 at mem in every dword lane (AVX-512: the broadcast is the
              // instruction's memory operand, {1toN}: on Zen 4 a separate vpbroadcastd from
              // memory costs an FP pipe slot, this does not)
  VUnpackLo32,
  VUnpackHi32,
  VUnpackLo64,
  VUnpackHi64,  // per 128-bit block
  VShuf128,     // d = vshuf{f,i}32x4(a, b, imm) (512) / vperm2 style not used
  VCombine128,  // d (256) = [128-bit block (imm & 1) of a, block (imm >> 1 & 1) of b]
  // vectors: float arithmetic (f32 lanes)
  VCvtI32F32,  // d = float(a) (round to nearest even)
  VCvtF16F32,  // d = f32 of the low fp16 lanes of a (a has half d's bits, >= 128)
  VAddF,
  VMulF,
  VFma,         // d = fma(a, b, d)        (one rounding; d is read)
  VFmaM,        // d = fma(a, mem, d)
  VFmaB,        // d = fma(a, the f32 at mem in every lane, d) (AVX-512: the broadcast is the
                // instruction's memory operand, {1toN}; no separate broadcast, which on Zen 4
                // costs an FP pipe slot)
  VDpBf16,      // d += vdpbf16ps(a, b): per f32 lane the odd bf16 pair product, then the even
                // one (AVX512-BF16; DAZ/FTZ, RNE; a, b are Cls::I vectors of bf16 pairs)
  VPermilF,     // d = vpermilps(a, imm) (per 128-bit block)
  VMovShdup,    // d = [a1, a1, a3, a3, ...]
  VSubF,        // d = a - b
  VMaxF,        // d = a > b ? a : b per lane (x86 maxps: a NaN in either gives b)
  VMinF,        // d = a < b ? a : b per lane (x86 minps: a NaN in either gives b)
  VDivF,        // d = a / b (correctly rounded)
  VCvtTF32I32,  // d = int32(trunc(a)) (0x80000000 for NaN and out of range)
  VBcastSS,     // every f32 lane of d = lane 0 of a (128 bits)
  VLoadMz,      // d = mem f32 lanes where mask c is set, 0 elsewhere; masked lanes are not
                // read (c: an AVX-512 mask, or a vector whose dword sign bits select)
  VAddSS,
  VMulSS,  // lane 0: d = a op b, lanes 1-3 from a
  VFmaSS,  // lane 0: d = fma(a, b, d), lanes 1-3 from d
  // scalar doubles in the low 64 bits of a 128-bit value; the other bits come from a
  VCvtSsSd,   // d.f64[0] = double(a.f32[0])
  VCvtSdSs,   // d.f32[0] = float(a.f64[0]) (round to nearest)
  VAddSD,     // d.f64[0] = a.f64[0] + b.f64[0]
  VDivSD,     // d.f64[0] = a.f64[0] / b.f64[0]
  VCvtI64Sd,  // d.f64[0] = double(a) (a: i64; round to nearest), the other bits 0
  VSqrtSS,    // lane 0: d = sqrt(a) (correctly rounded), lanes 1-3 from a
  // AVX-512 masks
  KImm,        // d = imm
  KFirstN,     // d = (1 << a) - 1   (a in [0, 16])
  KFromBytes,  // d = the sign bits of a's bytes (vpmovb2m)
  KToI64,      // d (i64) = the bits of mask a
  KLoad32,     // d = the 32 bits at mem (bits 32-63 zero)
  KUnpackDQ,   // d = low 32 bits of b | low 32 bits of a << 32 (kunpckdq)
  VStoreMk,    // mem f32 lanes where mask c is set = a
  // activation quantization (act_quant)
  VCvtF32I32R,  // d = int32(round-to-nearest-even(a)) (0x80000000 for NaN and out of range)
  VCvtF32F16,   // d (integer) = fp16 of a's f32 lanes (RNE; a 128/256/512 -> 4/8/16 halves
                // in d of 128/128/256 bits; the upper halves of a 128-bit a's result are 0)
  VPackSsDw,    // d = vpackssdw(a, b): per 128-bit block, int32 -> int16 saturated, a then b
  VPackSsWb,    // d = vpacksswb(a, b): per 128-bit block, int16 -> int8 saturated, a then b
  VStoreU16,    // mem (16 bits) = 16-bit lane imm of a (128 bits)
  // compare and select (act_quant q8_K, f16/bf16; embed). A "mask" operand is either an
  // AVX-512 mask (one bit per f32 lane) or a vector whose dword lanes are all ones / zero
  // (AVX2; only its sign bits are read)
  VCmpF,      // d = a fcmp b per f32 lane (fcmp in imm, see FCmp): a mask, or a vector of
              // all-ones / zero dwords of a's width
  VSelect,    // d = c ? a : b per 32-bit lane (c: a mask, or a vector's dword sign bits)
  KAnd,       // d = a & b (masks)
  KOr,        // d = a | b (masks)
  VMinI32,    // d = min(a, b) per signed dword
  VMaxI32,    // d = max(a, b) per signed dword
  VXor,       // d = a ^ b
  VPackUsDw,  // d = vpackusdw(a, b): per 128-bit block, int32 -> uint16 saturated, a then b
  VZxWD,      // d = the 16-bit lanes of a (half d's bits) zero-extended to 32 bits
  LoadI32,    // d (i64) = the int32 at mem, sign-extended (embed: a token id)
  StoreI32,   // mem (32 bits) = the low 32 bits of a (i64) (moe_route / moe_group indices)
  // packed doubles (f64 lanes of a float-class vector) and 64-bit integer lanes: libm's
  // expf, which computes in double (gen_libm_expf.h)
  VCvtPsPd,    // d (256/512) = double of each f32 lane of a (half d's bits): exact
  VCvtPdPs,    // d (128/256) = float of each f64 lane of a (twice d's bits), round to nearest
  VFmaPd,      // d = fma(a, b, d) per f64 lane (one rounding; d is read)
  VSubPd,      // d = a - b per f64 lane
  VAddPd,      // d = a + b per f64 lane
  VMulPd,      // d = a * b per f64 lane
  VAddI64,     // d = a + b per 64-bit lane (wrapping)
  VSllI64,     // d = a << imm per 64-bit lane
  VGatherI64,  // d[i] = the 64 bits at mem.base + mem.disp + 8 * a[i] (a: 64-bit lanes)
  VMovMskF,    // d (i64) = the sign bits of a's f32 lanes, lane 0 in bit 0 (a: 128/256 bits)
  // the float environment: vdpbf16ps's DAZ/FTZ for FMAs on a machine without it
  MxcsrFlush,  // d (i64) = MXCSR; then MXCSR |= DAZ | FTZ (0x8040): float ops that follow read
               // denormal inputs as ±0 and flush a tiny result (tininess after rounding) to ±0
  MxcsrSet,    // MXCSR = a (i64: a value MxcsrFlush returned)
};

// Float compare predicates of VCmpF (the vcmpps immediates): ordered and quiet, except NEQ
// (true when either is NaN) and UNORD (true iff either is NaN).
enum class FCmp : uint8_t { EQ, LT, LE, GT, GE, NEQ, UNORD, ORD };
int fcmp_imm(FCmp p);  // the vcmpps / _mm*_cmp_ps immediate

struct Inst {
  Op op = Op::Ret;
  V d, a, b, c;
  int64_t imm = 0;
  Cmp cmp = Cmp::LT;
  Mem mem;
  int callee = -1;               // Call: inner function index, or -1 for a C helper
  std::string sym;               // Call to a C helper: its name
  std::vector<V> args;           // Call
  std::vector<uint32_t> consts;  // VConst32
};

struct Value {
  Type type;
  std::string name;   // for the C source and asmjit's annotations
  bool view = false;  // VView results are read-only
};

struct Func {
  std::string name;
  std::vector<Type> params;  // values 0 .. params.size() - 1
  std::vector<Value> values;
  std::vector<Inst> code;
};

// A C helper a kernel may call: its name (the C symbol) and, for the machine code, its
// address. Signature: void(i64 or pointer arguments...).
struct Helper {
  std::string name;
  const void* address;
  std::vector<Kind> params;
};

struct Module {
  std::string name;              // the provider id (= the entry's symbol)
  std::string comment;           // generator, parameters, contract (C header comment)
  std::vector<std::string> isa;  // CPU features the code uses (requires.isa names)
  std::vector<Func> funcs;       // funcs[0] is the entry
  std::vector<Helper> helpers;   // C helpers called by name
  const Helper* helper(const std::string& name) const;
  bool uses(std::string_view feature) const;  // `feature` is in isa
};

// Writes one function. Every emitter method appends one instruction and, where it
// produces a value, returns it. Misuse (a type that does not fit the op) throws
// std::logic_error: generator bugs surface when the generator runs, at compile time.
class Builder {
 public:
  // Starts function `name` in `m` (entry first); param kinds are I64 or Ptr.
  Builder(Module& m, std::string name, std::vector<Kind> params);
  int index() const { return index_; }
  V arg(int i) const { return V{uint32_t(i)}; }

  // declarations
  V i64(const std::string& name);
  V ptr(const std::string& name);
  V vec(int bits, Cls cls, const std::string& name);
  V mask(const std::string& name);
  const Type& type(V v) const;

  // scalars
  V imm(int64_t value, const std::string& name);  // new i64 = value
  void movi(V d, int64_t imm);
  void mov(V d, V a);
  void add(V d, V a, V b);
  void sub(V d, V a, V b);
  void mul(V d, V a, V b);
  void div(V d, V a, V b);
  void addi(V d, V a, int64_t imm);
  void muli(V d, V a, int64_t imm);
  void sari(V d, V a, int64_t imm);
  void andi(V d, V a, int64_t imm);
  void min(V d, V a, V b);
  void ptr_add(V d, V base, V index, int64_t scale);
  V stack(int64_t bytes, const std::string& name);
  void ptr_align(V d, V a, int64_t align);

  // control flow
  void for_(V var, V begin, V end, V step);
  void end_for();
  void if_(V a, Cmp c, V b);
  void if_(V a, Cmp c, int64_t imm);
  void end_if();
  void ret();
  void call(int callee, std::vector<V> args);
  void call(const std::string& helper, std::vector<V> args);

  // vectors (see Op for the semantics of each)
  void vzero(V d);
  void vsplat32(V d, uint32_t imm);
  void vload(V d, Mem m);
  void vstore(Mem m, V a);
  void vload_ss(V d, Mem m);
  void vstore_ss(Mem m, V a);
  void vbcast_f32(V d, Mem m);
  void vbcast_i16(V d, Mem m);
  void vbcast128(V d, Mem m);
  void vbcast256(V d, Mem m);
  void vinsert_u16(V d, V a, Mem m, int lane);
  void vinsert(V d, V a, V b, int block);
  void vextract(V d, V a, int block);
  V view(V a, int bits, Cls cls);
  void vcopy(V d, V a);
  void vprefetch(Mem m);
  void vand(V d, V a, V b);
  void vsub_i8(V d, V a, V b);
  void vadd_i32(V d, V a, V b);
  void vadd_i16(V d, V a, V b);
  void vsub_i16(V d, V a, V b);
  void vabs_i8(V d, V a);
  void vmin_i8(V d, V a, V b);
  void vsign_i8(V d, V a, V b);
  void vsrl_i16(V d, V a, int imm);
  void vsrl_i16_mk(V d, V k, V a, int imm);
  void vsub_i8_mk(V d, V k, V a, V b);
  void vmaddubs_w(V d, V a, V b);
  void vmadd_wd(V d, V a, V b);
  void vor(V d, V a, V b);
  void vternlog(V d, V a, V b, V c, int imm);
  void vsub_i32(V d, V a, V b);
  void vmullo_i32(V d, V a, V b);
  void vsll_i16(V d, V a, int imm);
  void vsll_i32(V d, V a, int imm);
  void vsrl_i32(V d, V a, int imm);
  void vsra_i32(V d, V a, int imm);
  void vperm_d(V d, V a, V idx);
  void vsx_bd(V d, V a);
  void vsx_bw(V d, V a);
  void vconst32(V d, std::vector<uint32_t> lanes);
  void vhadd_i32(V d, V a, V b);
  void vshuf_b(V d, V a, V b);
  void vdpbusd(V d, V a, V b);
  void vdpwssd(V d, V a, V b);
  void vdpbusd_b(V d, V a, Mem m);
  void vadd_i32_b(V d, V a, Mem m);
  void vunpack_lo32(V d, V a, V b);
  void vunpack_hi32(V d, V a, V b);
  void vunpack_lo64(V d, V a, V b);
  void vunpack_hi64(V d, V a, V b);
  void vshuf128(V d, V a, V b, int imm);
  void vcombine128(V d, V a, V b, int imm);
  void vcvt_i32_f32(V d, V a);
  void vcvt_f16_f32(V d, V a);
  void vadd_f(V d, V a, V b);
  void vmul_f(V d, V a, V b);
  void vfma(V d, V a, V b);
  void vdpbf16(V d, V a, V b);
  void vfma_m(V d, V a, Mem m);
  void vfma_b(V d, V a, Mem m);
  void vpermil_f(V d, V a, int imm);
  void vmovshdup(V d, V a);
  void vsub_f(V d, V a, V b);
  void vmax_f(V d, V a, V b);
  void vmin_f(V d, V a, V b);
  void vdiv_f(V d, V a, V b);
  void vcvtt_f32_i32(V d, V a);
  void vbcast_ss(V d, V a);
  void vload_mz(V d, Mem m, V mask);
  void vcvt_ss_sd(V d, V a);
  void vcvt_sd_ss(V d, V a);
  void vadd_sd(V d, V a, V b);
  void vdiv_sd(V d, V a, V b);
  void vcvt_i64_sd(V d, V a);
  void vsqrt_ss(V d, V a);
  void vadd_ss(V d, V a, V b);
  void vmul_ss(V d, V a, V b);
  void vfma_ss(V d, V a, V b);
  void kimm(V d, uint64_t imm);
  void kfirst_n(V d, V n);
  void kfrom_bytes(V d, V a);
  void kto_i64(V d, V k);
  void kload32(V d, Mem m);
  void kunpack_dq(V d, V hi, V lo);
  void vstore_mk(Mem m, V a, V k);
  void vcvt_f32_i32_rn(V d, V a);
  void vcvt_f32_f16(V d, V a);
  void vpackss_dw(V d, V a, V b);
  void vpackss_wb(V d, V a, V b);
  void vstore_u16(Mem m, V a, int lane);
  void vcmp_f(V d, V a, V b, FCmp p);
  void vselect(V d, V c, V a, V b);
  void kand(V d, V a, V b);
  void kor(V d, V a, V b);
  void vmin_i32(V d, V a, V b);
  void vmax_i32(V d, V a, V b);
  void vxor(V d, V a, V b);
  void vpackus_dw(V d, V a, V b);
  void vzx_wd(V d, V a);
  void load_i32(V d, Mem m);
  void store_i32(Mem m, V a);
  void vcvt_ps_pd(V d, V a);
  void vcvt_pd_ps(V d, V a);
  void vfma_pd(V d, V a, V b);
  void vsub_pd(V d, V a, V b);
  void vadd_pd(V d, V a, V b);
  void vmul_pd(V d, V a, V b);
  void vadd_i64(V d, V a, V b);
  void vsll_i64(V d, V a, int imm);
  void vgather_i64(V d, Mem table, V idx);
  void vmovmsk_f(V d, V a);
  void mxcsr_flush(V d);
  void mxcsr_set(V a);

 private:
  Func& f();
  V new_value(Type t, const std::string& name, bool view = false);
  Inst& emit(Op op, V d = {}, V a = {}, V b = {}, V c = {});
  void need(V v, Kind k, const char* what) const;
  void need_vec(V v, int bits, const char* what) const;  // bits 0 = any width
  void need_writable(V v) const;
  void need_mem(const Mem& m) const;
  void bcast_mem_op(Op op, const char* what, V d, V a, Mem m);
  Module& m_;
  int index_;
  int open_ = 0;  // open for/if blocks
};

// Checks a finished module (every function's blocks closed, calls resolvable); "" if ok.
std::string validate(const Module& m);

}  // namespace cke::jit::kir
