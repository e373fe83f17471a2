// embed generators (gen_embed.h): one entry for every table type, one block converter per
// type, on 16-lane vectors (one zmm, or a ymm pair).
#include "jit/gen_embed.h"

#include <fmt/format.h>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

enum class T : uint8_t {
  F32,
  F16,
  BF16,
  Q8_0,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K
};

struct Format {
  T type;
  const char* name;
  int block;  // elements per step (a block; 16 for the float types)
  int bytes;  // bytes per step
  const char* how;
};

const Format& format(T t) {
  static const Format kTable[] = {
      {T::F32, "f32", 16, 64, "copied"},
      {T::F16, "f16", 16, 32, "vcvtph2ps"},
      {T::BF16, "bf16", 16, 32, "<< 16"},
      {T::Q8_0, "q8_0", 32, 34, "float(q) * d"},
      {T::Q4_0, "q4_0", 32, 18, "float(q - 8) * d"},
      {T::Q4_1, "q4_1", 32, 20, "float(q) * d + m"},
      {T::Q5_0, "q5_0", 32, 22, "float(q - 16) * d"},
      {T::Q5_1, "q5_1", 32, 24, "float(q) * d + m"},
      {T::Q2_K, "q2_K", 256, 84, "fl(fl(d * (sc & 15)) * float(q)) - fl(dmin * (sc >> 4))"},
      {T::Q3_K, "q3_K", 256, 110, "fl(d * float(sc - 32)) * float(q - (hbit ? 0 : 4))"},
      {T::Q4_K, "q4_K", 256, 144, "fl(d * sc) * float(q) - fl(dmin * m)"},
      {T::Q5_K, "q5_K", 256, 176, "fl(d * sc) * float(q) - fl(dmin * m)"},
      {T::Q6_K, "q6_K", 256, 210, "fl(d * sc) * float(q - 32)"},
  };
  return kTable[static_cast<int>(t)];
}

// 16-lane integer helpers beside Lanes16's float ops.
struct E16 {
  Lanes16& L;
  Builder& b;
  explicit E16(Lanes16& lanes) : L(lanes), b(lanes.b) {}

  V16 ivec(const std::string& name) {
    V16 v;
    for (int h = 0; h < L.parts; ++h) v.part[h] = b.vec(L.width(), Cls::I, name);
    return v;
  }
  // A constant with one value per lane (read-only).
  V16 lanes(const std::vector<uint32_t>& v, const std::string& name) {
    V16 c;
    const int n = L.width() / 32;
    for (int h = 0; h < L.parts; ++h) {
      c.part[h] = b.vec(L.width(), Cls::I, name);
      b.vconst32(c.part[h], std::vector<uint32_t>(v.begin() + n * h, v.begin() + n * (h + 1)));
    }
    return c;
  }
  V16 splat(uint32_t v, const std::string& name) { return L.splat(v, name.c_str()); }
  // The 16 int8 at m, sign-extended to int32.
  V16 bytes(Mem m, const std::string& name) {
    V t = b.vec(128, Cls::I, name + "_b");
    b.vload(t, m);
    return bytes_of(t, name);
  }
  // The 16 int8 of t, sign-extended to int32.
  V16 bytes_of(V t, const std::string& name) {
    V16 d = ivec(name);
    b.vsx_bd(d.part[0], t);
    if (L.parts == 2) {
      V hi = b.vec(128, Cls::I, name + "_h");
      b.vunpack_hi64(hi, t, t);
      b.vsx_bd(d.part[1], hi);
    }
    return d;
  }
  // Every lane = the f32 of the fp16 at m (vcvtph2ps, read-only).
  V16 half(Mem m, const std::string& name) {
    V16 d;
    V t = b.vec(L.width() / 2, Cls::I, name + "_h");
    b.vbcast_i16(t, m);
    d.part[0] = d.part[1] = b.vec(L.width(), Cls::F, name);
    b.vcvt_f16_f32(d.part[0], t);
    return d;
  }
  // Every lane = the f32 at m (read-only).
  V16 bcast(Mem m, const std::string& name) {
    V16 d;
    d.part[0] = d.part[1] = b.vec(L.width(), Cls::F, name);
    b.vbcast_f32(d.part[0], m);
    return d;
  }
  // The 32-bit pattern at m in every lane (read-only).
  V16 bcast_u32(Mem m, const std::string& name) {
    V16 d;
    d.part[0] = d.part[1] = b.vec(L.width(), Cls::I, name);
    b.vbcast_f32(d.part[0], m);
    return d;
  }
  template <class Fn>
  void each(Fn fn) {
    for (int h = 0; h < L.parts; ++h) fn(h);
  }
  void and_(V16 d, V16 a, V16 c) {
    each([&](int h) { b.vand(d.part[h], a.part[h], c.part[h]); });
  }
  void or_(V16 d, V16 a, V16 c) {
    each([&](int h) { b.vor(d.part[h], a.part[h], c.part[h]); });
  }
  void sub(V16 d, V16 a, V16 c) {
    each([&](int h) { b.vsub_i32(d.part[h], a.part[h], c.part[h]); });
  }
  void mullo(V16 d, V16 a, V16 c) {
    each([&](int h) { b.vmullo_i32(d.part[h], a.part[h], c.part[h]); });
  }
  void srl(V16 d, V16 a, int n) {
    each([&](int h) { b.vsrl_i32(d.part[h], a.part[h], n); });
  }
  void sll(V16 d, V16 a, int n) {
    each([&](int h) { b.vsll_i32(d.part[h], a.part[h], n); });
  }
  V16 cvt(V16 a, const std::string& name) {
    V16 d = L.vec(name.c_str());
    each([&](int h) { b.vcvt_i32_f32(d.part[h], a.part[h]); });
    return d;
  }
};

Mem at(V base, int32_t disp) {
  return Mem{base, {}, 1, disp};
}

// The constants and the frame buffer a format's block converter needs (made once).
struct Ctx {
  E16& e;
  V16 c3, c15, c16, c32, c8, c1;
  V16 qh_lo, qh_hi;    // q5_0 / q5_1: 1 << (31 - j) for element j (0-15) and j + 16
  V16 c4;              // q3_K
  V16 mul_lo, mul_hi;  // q3_K: per-lane multipliers that move a scale's bits to the top
  V sel_lo, sel_hi;    // q3_K: vpshufb indexes gathering each sub-block's scale bytes
  V stk;               // q2_K..q6_K: the block's scale products (q2_K: 16 d * sc, then 16 dmin * m)
  V lo4;               // q4_K / q5_K: the sign bit in lanes 0-3 of 8 (a vselect mask)
  V k255, k63, k15;    // q4_K / q5_K: 256-bit constants of the scale unpacking
};

Ctx make_ctx(E16& e, T t) {
  Builder& b = e.b;
  Ctx c{e, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  const bool legacy = t == T::Q4_0 || t == T::Q4_1 || t == T::Q5_0 || t == T::Q5_1;
  const bool k4 = t == T::Q4_K || t == T::Q5_K;
  if (legacy || k4 || t == T::Q6_K || t == T::Q2_K) c.c15 = e.splat(15, "c15");
  if (t == T::Q2_K || t == T::Q3_K) {
    c.c3 = e.splat(3, "c3");
    c.stk = b.stack(128, "scales");
  }
  if (t == T::Q3_K) {
    c.c1 = e.splat(1, "c1");
    c.c4 = e.splat(4, "c4");
    c.c32 = e.splat(32, "c32");
    // Sub-block j's scale: low 4 bits = scales[j % 8] >> (j < 8 ? 0 : 4), high 2 bits =
    // scales[8 + j % 4] >> 2 * (j / 4). The 16 bytes loaded end at the block's end (offset
    // 94: scales[m] is byte m + 2), so nothing past the block is read.
    std::vector<uint32_t> lo, hi;
    for (int j = 0; j < 16; ++j) {
      lo.push_back(1u << (j < 8 ? 28 : 24));   // then >> 28: bits 0-3 or 4-7 of the byte
      hi.push_back(1u << (30 - 2 * (j / 4)));  // then >> 30: bits 2(j/4), 2(j/4) + 1
    }
    c.mul_lo = e.lanes(lo, "mul_lo");
    c.mul_hi = e.lanes(hi, "mul_hi");
    auto idx = [&](int base, int mod, const char* name) {
      uint32_t w[4] = {};
      for (int j = 0; j < 16; ++j) w[j / 4] |= uint32_t(base + j % mod) << (8 * (j % 4));
      V v = b.vec(128, Cls::I, name);
      b.vconst32(v, {w[0], w[1], w[2], w[3]});
      return v;
    };
    c.sel_lo = idx(2, 8, "sel_lo");
    c.sel_hi = idx(10, 4, "sel_hi");
  }
  if (t == T::Q4_0) c.c8 = e.splat(8, "c8");
  if (t == T::Q5_0) c.c16 = e.splat(16, "c16");
  if (t == T::Q5_K) c.c1 = e.splat(1, "c1");
  if (t == T::Q6_K) {
    c.c3 = e.splat(3, "c3");
    c.c32 = e.splat(32, "c32");
  }
  if (t == T::Q5_0 || t == T::Q5_1) {
    std::vector<uint32_t> lo, hi;
    for (int j = 0; j < 16; ++j) {
      lo.push_back(1u << (31 - j));
      hi.push_back(1u << (15 - j));
    }
    c.qh_lo = e.lanes(lo, "qh_lo");
    c.qh_hi = e.lanes(hi, "qh_hi");
  }
  if (k4 || t == T::Q6_K) c.stk = b.stack(64, "scales");
  if (k4) {
    auto k = [&](uint32_t v, const char* name) {
      V d = b.vec(256, Cls::I, name);
      b.vsplat32(d, v);
      return d;
    };
    c.k255 = k(255, "k255");
    c.k63 = k(63, "k63");
    c.k15 = k(15, "k15");
    c.lo4 = b.vec(256, Cls::I, "lo4");
    b.vconst32(c.lo4, {~0u, ~0u, ~0u, ~0u, 0, 0, 0, 0});
  }
  return c;
}

// y[0..15] = float(q) * d (+ m when m_add).
void store_scaled(E16& e, V yp, int32_t disp, V16 q, V16 d, const V16* m_add) {
  V16 f = e.cvt(q, "f");
  e.L.mul(f, f, d);
  if (m_add) e.L.add(f, f, *m_add);
  e.L.store(at(yp, disp), f);
}

// q4_K / q5_K: the 8 sub-block scales d * sc and mins dmin * m into the frame buffer
// (floats 0-7 and 8-15), from the 12 packed 6-bit bytes in 8 dword lanes:
//   j < 4: sc = q[j] & 63, m = q[j + 4] & 63;
//   j >= 4: sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4, m = (q[j + 4] >> 4) | (q[j] >> 6) << 4.
void k4_scales(Ctx& c, V bp) {
  Builder& b = c.e.b;
  auto bytes8 = [&](int32_t disp, const char* name) {  // 8 bytes of the block, zero-extended
    V t = b.vec(128, Cls::I, fmt::format("{}_b", name)), d = b.vec(256, Cls::I, name);
    b.vload(t, at(bp, disp));
    b.vsx_bd(d, t);
    b.vand(d, d, c.k255);
    return d;
  };
  V A = bytes8(4, "sa"), B = bytes8(8, "sb"), C = bytes8(0, "sc");  // q[j], q[j + 4], q[j - 4]
  V lo = b.vec(256, Cls::I, "slo"), hi = b.vec(256, Cls::I, "shi"), t = b.vec(256, Cls::I, "st");
  V sc = b.vec(256, Cls::I, "scv"), mn = b.vec(256, Cls::I, "mnv");
  b.vand(lo, A, c.k63);
  b.vand(hi, B, c.k15);
  b.vsrl_i32(t, C, 6);
  b.vsll_i32(t, t, 4);
  b.vor(hi, hi, t);
  b.vselect(sc, c.lo4, lo, hi);
  b.vand(lo, B, c.k63);
  b.vsrl_i32(hi, B, 4);
  b.vsrl_i32(t, A, 6);
  b.vsll_i32(t, t, 4);
  b.vor(hi, hi, t);
  b.vselect(mn, c.lo4, lo, hi);
  V d = b.vec(256, Cls::F, "d8"), dmin = b.vec(256, Cls::F, "dmin8");
  V h = b.vec(128, Cls::I, "dh");
  b.vbcast_i16(h, at(bp, 0));
  b.vcvt_f16_f32(d, h);
  b.vbcast_i16(h, at(bp, 2));
  b.vcvt_f16_f32(dmin, h);
  V f = b.vec(256, Cls::F, "scf");
  b.vcvt_i32_f32(f, sc);
  b.vmul_f(f, d, f);  // d * sc
  b.vstore(at(c.stk, 0), f);
  b.vcvt_i32_f32(f, mn);
  b.vmul_f(f, dmin, f);  // dmin * m
  b.vstore(at(c.stk, 32), f);
}

// One block (format(t).block elements) at bp to y at yp.
void emit_block(Ctx& c, T t, V bp, V yp) {
  E16& e = c.e;
  Lanes16& L = e.L;
  Builder& b = e.b;
  switch (t) {
    case T::F32: {
      V16 v = L.vec("v");
      L.load(v, at(bp, 0));
      L.store(at(yp, 0), v);
      break;
    }
    case T::F16:
    case T::BF16: {
      V16 v = e.ivec("v");
      const int src = L.width() / 2;  // bits of halves per part
      for (int h = 0; h < L.parts; ++h) {
        V s = b.vec(src, Cls::I, "h");
        b.vload(s, at(bp, src / 8 * h));
        if (t == T::F16) {
          b.vcvt_f16_f32(v.part[h], s);
        } else {
          b.vzx_wd(v.part[h], s);
          b.vsll_i32(v.part[h], v.part[h], 16);
        }
      }
      L.store(at(yp, 0), v);
      break;
    }
    case T::Q8_0: {
      V16 d = e.half(at(bp, 0), "d");
      for (int g = 0; g < 2; ++g)
        store_scaled(e, yp, 64 * g, e.bytes(at(bp, 2 + 16 * g), "q"), d, nullptr);
      break;
    }
    case T::Q4_0:
    case T::Q4_1:
    case T::Q5_0:
    case T::Q5_1: {
      const bool five = t == T::Q5_0 || t == T::Q5_1, min = t == T::Q4_1 || t == T::Q5_1;
      V16 d = e.half(at(bp, 0), "d"), m;
      if (min) m = e.half(at(bp, 2), "m");
      const int32_t qh_off = min ? 4 : 2, qs_off = qh_off + (five ? 4 : 0);
      V16 q = e.bytes(at(bp, qs_off), "q"), lo = e.ivec("lo"), hi = e.ivec("hi");
      e.and_(lo, q, c.c15);
      e.srl(hi, q, 4);
      e.and_(hi, hi, c.c15);
      if (five) {  // bit j of qh: qh * 2^(31 - j), its sign bit
        V16 qh = e.bcast_u32(at(bp, qh_off), "qh"), x = e.ivec("x");
        e.mullo(x, qh, c.qh_lo);
        e.srl(x, x, 31);
        e.sll(x, x, 4);
        e.or_(lo, lo, x);
        e.mullo(x, qh, c.qh_hi);
        e.srl(x, x, 31);
        e.sll(x, x, 4);
        e.or_(hi, hi, x);
      }
      if (!min) {
        e.sub(lo, lo, five ? c.c16 : c.c8);
        e.sub(hi, hi, five ? c.c16 : c.c8);
      }
      store_scaled(e, yp, 0, lo, d, min ? &m : nullptr);
      store_scaled(e, yp, 64, hi, d, min ? &m : nullptr);
      break;
    }
    case T::Q2_K: {
      // Scales: 16 bytes, sub-block j's d * (sc & 15) to floats 0-15, dmin * (sc >> 4) to
      // 16-31. Element l of sub-block j (j = 8n + 2s + h): (qs[32n + 16h + l] >> 2s) & 3.
      V16 d = e.half(at(bp, 80), "d"), dmin = e.half(at(bp, 82), "dmin");
      V16 sc = e.bytes(at(bp, 0), "sc"), x = e.ivec("x");
      e.and_(x, sc, c.c15);
      V16 f = e.cvt(x, "scf");
      L.mul(f, d, f);
      L.store(at(c.stk, 0), f);
      e.srl(x, sc, 4);
      e.and_(x, x, c.c15);
      f = e.cvt(x, "mf");
      L.mul(f, dmin, f);
      L.store(at(c.stk, 64), f);
      for (int n = 0; n < 2; ++n)
        for (int h = 0; h < 2; ++h) {
          V16 Q = e.bytes(at(bp, 16 + 32 * n + 16 * h), "Q");
          for (int s2 = 0; s2 < 4; ++s2) {
            const int j = 8 * n + 2 * s2 + h;
            V16 q = e.ivec("q");
            e.srl(q, Q, 2 * s2);
            e.and_(q, q, c.c3);
            V16 y = e.cvt(q, "y");
            L.mul(y, e.bcast(at(c.stk, 4 * j), "dl"), y);
            L.sub(y, y, e.bcast(at(c.stk, 64 + 4 * j), "ml"));
            L.store(at(yp, 64 * j), y);
          }
        }
      break;
    }
    case T::Q3_K: {
      // Scales: sc_j = (lo | hi << 4) - 32 (see Ctx), d * sc_j to floats 0-15. Element l of
      // sub-block j = 8n + 2s + h: q = (qs[32n + 16h + l] >> 2s) & 3, minus 4 unless bit
      // 4n + s of hmask[16h + l] is set.
      V16 d = e.half(at(bp, 108), "d");
      V raw = b.vec(128, Cls::I, "sraw"), g = b.vec(128, Cls::I, "sg");
      b.vload(raw, at(bp, 94));
      b.vshuf_b(g, raw, c.sel_lo);
      V16 lo = e.bytes_of(g, "slo");
      e.mullo(lo, lo, c.mul_lo);
      e.srl(lo, lo, 28);
      b.vshuf_b(g, raw, c.sel_hi);
      V16 hi = e.bytes_of(g, "shi");
      e.mullo(hi, hi, c.mul_hi);
      e.srl(hi, hi, 30);
      e.sll(hi, hi, 4);
      e.or_(lo, lo, hi);
      e.sub(lo, lo, c.c32);
      V16 f = e.cvt(lo, "scf");
      L.mul(f, d, f);
      L.store(at(c.stk, 0), f);
      for (int h = 0; h < 2; ++h) {
        V16 H = e.bytes(at(bp, 16 * h), "H");
        for (int n = 0; n < 2; ++n) {
          V16 Q = e.bytes(at(bp, 32 + 32 * n + 16 * h), "Q");
          for (int s2 = 0; s2 < 4; ++s2) {
            const int j = 8 * n + 2 * s2 + h;
            V16 q = e.ivec("q"), x = e.ivec("x");
            e.srl(q, Q, 2 * s2);
            e.and_(q, q, c.c3);
            e.srl(x, H, 4 * n + s2);
            e.and_(x, x, c.c1);
            e.sll(x, x, 2);
            e.or_(q, q, x);
            e.sub(q, q, c.c4);
            V16 y = e.cvt(q, "y");
            L.mul(y, e.bcast(at(c.stk, 4 * j), "dl"), y);
            L.store(at(yp, 64 * j), y);
          }
        }
      }
      break;
    }
    case T::Q4_K:
    case T::Q5_K: {
      k4_scales(c, bp);
      const bool five = t == T::Q5_K;
      const int32_t qs = five ? 48 : 16;
      V16 H[2];
      if (five)
        for (int g = 0; g < 2; ++g) H[g] = e.bytes(at(bp, 16 + 16 * g), fmt::format("qh{}", g));
      for (int j = 0; j < 4; ++j) {
        V16 d1 = e.bcast(at(c.stk, 4 * (2 * j)), "d1"),
            m1 = e.bcast(at(c.stk, 32 + 4 * (2 * j)), "m1");
        V16 d2 = e.bcast(at(c.stk, 4 * (2 * j + 1)), "d2");
        V16 m2 = e.bcast(at(c.stk, 32 + 4 * (2 * j + 1)), "m2");
        for (int g = 0; g < 2; ++g) {
          V16 q = e.bytes(at(bp, qs + 32 * j + 16 * g), "q"), lo = e.ivec("lo"), hi = e.ivec("hi");
          e.and_(lo, q, c.c15);
          e.srl(hi, q, 4);
          e.and_(hi, hi, c.c15);
          if (five) {  // + 16 where qh bit 2j (low nibbles) / 2j + 1 (high) is set
            V16 x = e.ivec("x");
            e.srl(x, H[g], 2 * j);
            e.and_(x, x, c.c1);
            e.sll(x, x, 4);
            e.or_(lo, lo, x);
            e.srl(x, H[g], 2 * j + 1);
            e.and_(x, x, c.c1);
            e.sll(x, x, 4);
            e.or_(hi, hi, x);
          }
          for (int half = 0; half < 2; ++half) {
            V16 f = e.cvt(half ? hi : lo, "f");
            L.mul(f, half ? d2 : d1, f);
            L.sub(f, f, half ? m2 : m1);
            L.store(at(yp, 4 * (64 * j + 32 * half + 16 * g)), f);
          }
        }
      }
      break;
    }
    case T::Q6_K: {
      V16 d = e.half(at(bp, 208), "d");
      V16 sc = e.cvt(e.bytes(at(bp, 192), "sc"), "scf");
      L.mul(sc, d, sc);  // d * sc
      L.store(at(c.stk, 0), sc);
      for (int n = 0; n < 2; ++n)
        for (int g = 0; g < 2; ++g) {
          V16 A = e.bytes(at(bp, 64 * n + 16 * g), "A"),
              B = e.bytes(at(bp, 64 * n + 32 + 16 * g), "B");
          V16 H = e.bytes(at(bp, 128 + 32 * n + 16 * g), "H");
          for (int k = 0; k < 4; ++k) {  // q1..q4: y[l + 32k]
            V16 q = e.ivec("q"), x = e.ivec("x");
            if (k % 2 == 0) {
              e.srl(q, A, k == 0 ? 0 : 4);
            } else {
              e.srl(q, B, k == 1 ? 0 : 4);
            }
            e.and_(q, q, c.c15);
            e.srl(x, H, 2 * k);
            e.and_(x, x, c.c3);
            e.sll(x, x, 4);
            e.or_(q, q, x);
            e.sub(q, q, c.c32);
            V16 s = e.bcast(at(c.stk, 4 * (8 * n + g + 2 * k)), "s");
            V16 f = e.cvt(q, "f");
            L.mul(f, s, f);
            L.store(at(yp, 4 * (128 * n + 32 * k + 16 * g)), f);
          }
        }
      break;
    }
  }
}

bool build(T t, Isa isa, const GeneratorParams& params, kir::Module* m, std::string* err) {
  const Format& f = format(t);
  const std::string generator = fmt::format("embed_{}__{}", f.name, isa_suffix(isa));
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}: contract embed.{}.ggml (ggml's dequantize_row / to_float: {},\n"
      "no FMA; a negative token id gives zeros)",
      generator, f.name, f.how);
  Builder b(*m, m->name, {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64});
  const V tokens = b.arg(0), table = b.arg(1), y = b.arg(2), E = b.arg(3), Tn = b.arg(4);
  ret_if(b, E, Cmp::LE, 0);
  V rem = b.i64("erem");
  b.andi(rem, E, f.block - 1);
  ret_if(b, rem, Cmp::NE, 0);  // outside the shapes the map admits: nothing written
  Lanes16 L(b, isa);
  E16 e(L);
  Ctx c = make_ctx(e, t);
  V16 zero = L.zero("zero");
  V nb = b.i64("nb"), rb = b.i64("row_bytes"), yb = b.i64("y_bytes");
  b.sari(nb, E, __builtin_ctz(unsigned(f.block)));
  b.muli(rb, nb, f.bytes);
  b.muli(yb, E, 4);
  V tk = b.i64("t"), tok = b.i64("tok"), off = b.i64("off"), blk = b.i64("blk");
  V yrow = b.ptr("yrow"), row = b.ptr("row"), bp = b.ptr("bp"), yp = b.ptr("yp");
  b.for_(tk, b.imm(0, "zero_t"), Tn, b.imm(1, "one"));
  {
    b.load_i32(tok, Mem{tokens, tk, 4, 0});
    b.mul(off, tk, yb);
    b.ptr_add(yrow, y, off, 1);
    b.if_(tok, Cmp::LT, 0);  // no row: zeros
    {
      b.for_(off, b.imm(0, "zero_o"), yb, b.imm(64, "sixty4"));
      L.store(Mem{yrow, off, 1, 0}, zero);
      b.end_for();
    }
    b.end_if();
    b.if_(tok, Cmp::GE, 0);
    {
      b.mul(off, tok, rb);
      b.ptr_add(row, table, off, 1);
      b.for_(blk, b.imm(0, "zero_b"), nb, b.imm(1, "one_b"));
      b.ptr_add(bp, row, blk, f.bytes);
      b.ptr_add(yp, yrow, blk, 4 * f.block);
      emit_block(c, t, bp, yp);
      b.end_for();
    }
    b.end_if();
  }
  b.end_for();
  return true;
}

}  // namespace

#define CKE_EMBED_DEFINE(t, T_)                                                               \
  bool build_embed_##t##_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) { \
    return build(T::T_, Isa::Avx512, p, m, err);                                              \
  }                                                                                           \
  bool build_embed_##t##_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {   \
    return build(T::T_, Isa::Avx2, p, m, err);                                                \
  }
CKE_EMBED_DEFINE(f32, F32)
CKE_EMBED_DEFINE(f16, F16)
CKE_EMBED_DEFINE(bf16, BF16)
CKE_EMBED_DEFINE(q8_0, Q8_0)
CKE_EMBED_DEFINE(q4_0, Q4_0)
CKE_EMBED_DEFINE(q4_1, Q4_1)
CKE_EMBED_DEFINE(q5_0, Q5_0)
CKE_EMBED_DEFINE(q5_1, Q5_1)
CKE_EMBED_DEFINE(q2_K, Q2_K)
CKE_EMBED_DEFINE(q3_K, Q3_K)
CKE_EMBED_DEFINE(q4_K, Q4_K)
CKE_EMBED_DEFINE(q5_K, Q5_K)
CKE_EMBED_DEFINE(q6_K, Q6_K)
#undef CKE_EMBED_DEFINE

}  // namespace cke::jit::gen
