#include "jit/gen_lanes16.h"

#include <stdexcept>

namespace cke::jit::gen {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

V16 Lanes16::vec(const char* name) {
  V16 v;
  for (int h = 0; h < parts; ++h) v.part[h] = b.vec(width(), Cls::F, name);
  return v;
}

V16 Lanes16::zero(const char* name) {
  V16 v = vec(name);
  for (int h = 0; h < parts; ++h) b.vzero(v.part[h]);
  return v;
}

V16 Lanes16::splat(uint32_t bits, const char* name) {
  V16 v;
  v.part[0] = v.part[1] = b.vec(width(), Cls::F, name);
  b.vsplat32(v.part[0], bits);
  return v;
}

V16 Lanes16::bcast(V lane0, const char* name) {
  V16 v;
  v.part[0] = v.part[1] = b.vec(width(), Cls::F, name);
  b.vbcast_ss(v.part[0], lane0);
  return v;
}

void Lanes16::load(V16 d, Mem m) {
  for (int h = 0; h < parts; ++h) {
    Mem mh = m;
    mh.disp += 32 * h;
    b.vload(d.part[h], mh);
  }
}

void Lanes16::store(Mem m, V16 a) {
  for (int h = 0; h < parts; ++h) {
    Mem mh = m;
    mh.disp += 32 * h;
    b.vstore(mh, a.part[h]);
  }
}

void Lanes16::fma(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vfma(d.part[h], a.part[h], x.part[h]);
}

void Lanes16::fma_m(V16 d, V16 a, Mem m) {
  for (int h = 0; h < parts; ++h) {
    Mem mh = m;
    mh.disp += 32 * h;
    b.vfma_m(d.part[h], a.part[h], mh);
  }
}

void Lanes16::fma_b(V16 d, V16 a, Mem m) {
  if (parts == 1) {
    b.vfma_b(d.part[0], a.part[0], m);
    return;
  }
  V s = b.vec(width(), Cls::F, "bcast");
  b.vbcast_f32(s, m);
  for (int h = 0; h < parts; ++h) b.vfma(d.part[h], a.part[h], s);
}

void Lanes16::add(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vadd_f(d.part[h], a.part[h], x.part[h]);
}
void Lanes16::sub(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vsub_f(d.part[h], a.part[h], x.part[h]);
}
void Lanes16::mul(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vmul_f(d.part[h], a.part[h], x.part[h]);
}
void Lanes16::max(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vmax_f(d.part[h], a.part[h], x.part[h]);
}
void Lanes16::min(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vmin_f(d.part[h], a.part[h], x.part[h]);
}
void Lanes16::div(V16 d, V16 a, V16 x) {
  for (int h = 0; h < parts; ++h) b.vdiv_f(d.part[h], a.part[h], x.part[h]);
}
void Lanes16::copy(V16 d, V16 a) {
  for (int h = 0; h < parts; ++h) b.vcopy(d.part[h], a.part[h]);
}

V Lanes16::reduce_add(V16 v) {
  return hsum8(b, half_sum(v));  // t[i+4] + t[i], then (u0 + u2) + (u1 + u3)
}

V16 Lanes16::fold4(const V16 acc[4]) {
  V16 r = vec("r"), t = vec("t");
  add(r, acc[0], acc[2]);
  add(t, acc[1], acc[3]);
  add(r, r, t);
  return r;
}

V Lanes16::fold4_reduce_add(const V16 acc[4]) {
  return reduce_add(fold4(acc));
}

namespace {

// The last two stages of the transposed reductions below, on vectors of `bits`: per 128-bit
// block, lanes (0, 1) + (2, 3) of w[0], w[1] and of w[2], w[3] side by side, then lane 0 +
// lane 1 (even first) of those two, side by side.
V last_two_stages(Builder& b, int bits, const V w[4]) {
  auto fv = [&](V x) { return b.view(x, bits, Cls::F); };
  auto iv = [&](V x) { return b.view(x, bits, Cls::I); };
  V z[2];
  for (int k = 0; k < 2; ++k) {
    V lo = b.vec(bits, Cls::I, "lo2"), hi = b.vec(bits, Cls::I, "hi2");
    b.vunpack_lo64(lo, iv(w[2 * k]), iv(w[2 * k + 1]));
    b.vunpack_hi64(hi, iv(w[2 * k]), iv(w[2 * k + 1]));
    z[k] = b.vec(bits, Cls::F, "w2");
    b.vadd_f(z[k], fv(lo), fv(hi));
  }
  V e0 = b.vec(bits, Cls::F, "e0"), e1 = b.vec(bits, Cls::F, "e1");
  b.vpermil_f(e0, z[0], 0xD8);  // (0, 2, 1, 3)
  b.vpermil_f(e1, z[1], 0xD8);
  V lo = b.vec(bits, Cls::I, "lo1"), hi = b.vec(bits, Cls::I, "hi1");
  b.vunpack_lo64(lo, iv(e0), iv(e1));
  b.vunpack_hi64(hi, iv(e0), iv(e1));
  V r = b.vec(bits, Cls::F, "r");
  b.vadd_f(r, fv(lo), fv(hi));
  return r;
}

}  // namespace

// The four stages of reduce_add, each on all vectors at once (a transpose that adds as it
// goes). Lane 4c + l of the result comes out of input slot 4l + c, so vector j goes into
// slot 4(j % 4) + j / 4 and the result is in order without a final permute.
V16 Lanes16::reduce_add16(const V16 v[16]) {
  if (parts != 1) throw std::logic_error("kir: reduce_add16 takes one zmm per 16 lanes");
  auto fv = [&](V x) { return b.view(x, 512, Cls::F); };
  auto iv = [&](V x) { return b.view(x, 512, Cls::I); };
  V s[16];
  for (int j = 0; j < 16; ++j) s[4 * (j % 4) + j / 4] = v[j].part[0];
  // i + 8: [lo256 of a | lo256 of b] + [hi256 of a | hi256 of b], hi first as reduce_add.
  V w[8];
  for (int k = 0; k < 8; ++k) {
    V lo = b.vec(512, Cls::I, "lo8"), hi = b.vec(512, Cls::I, "hi8");
    b.vshuf128(lo, iv(s[2 * k]), iv(s[2 * k + 1]), 0x44);
    b.vshuf128(hi, iv(s[2 * k]), iv(s[2 * k + 1]), 0xEE);
    w[k] = b.vec(512, Cls::F, "w8");
    b.vadd_f(w[k], fv(hi), fv(lo));
  }
  // i + 4: 128-bit blocks 0, 2 against 1, 3 of a pair, lo first as hsum8.
  V u[4];
  for (int k = 0; k < 4; ++k) {
    V lo = b.vec(512, Cls::I, "lo4"), hi = b.vec(512, Cls::I, "hi4");
    b.vshuf128(lo, iv(w[2 * k]), iv(w[2 * k + 1]), 0x88);
    b.vshuf128(hi, iv(w[2 * k]), iv(w[2 * k + 1]), 0xDD);
    u[k] = b.vec(512, Cls::F, "w4");
    b.vadd_f(u[k], fv(lo), fv(hi));
  }
  V16 r;
  r.part[0] = last_two_stages(b, 512, u);
  return r;
}

V Lanes16::half_sum(V16 v) {
  V s8 = b.vec(256, Cls::F, "s8");  // v[i+8] + v[i]
  if (parts == 1) {
    V hi = b.vec(256, Cls::F, "hi8");
    b.vextract(hi, v.part[0], 1);
    b.vadd_f(s8, hi, b.view(v.part[0], 256, Cls::F));
  } else {
    b.vadd_f(s8, v.part[1], v.part[0]);
  }
  return s8;
}

// As reduce_add16 on 256-bit vectors: the first stage (i + 8) is each vector's two parts
// (half_sum); then lane 4b + m of the result comes out of slot 2m + b, so vector j goes
// into slot 2(j % 4) + j / 4: slots 2k and 2k + 1 (the pair of the i + 4 stage) hold
// vectors k and k + 4.
V Lanes16::reduce_add8(const V s8[8]) {
  V w[4];
  for (int k = 0; k < 4; ++k) w[k] = reduce_pair8(s8[k], s8[k + 4]);
  return reduce_finish8(w);
}

// i + 4: [lo128 of a | lo128 of b] + [hi128 of a | hi128 of b], lo first as hsum8.
V Lanes16::reduce_pair8(V a, V c) {
  auto fv = [&](V x) { return b.view(x, 256, Cls::F); };
  auto iv = [&](V x) { return b.view(x, 256, Cls::I); };
  V lo = b.vec(256, Cls::I, "lo4"), hi = b.vec(256, Cls::I, "hi4");
  b.vcombine128(lo, iv(a), iv(c), 0);
  b.vcombine128(hi, iv(a), iv(c), 3);
  V w = b.vec(256, Cls::F, "w4");
  b.vadd_f(w, fv(lo), fv(hi));
  return w;
}

V Lanes16::reduce_finish8(const V w[4]) {
  return last_two_stages(b, 256, w);
}

V Lanes16::reduce_max(V16 v) {
  V m8 = b.vec(256, Cls::F, "m8");
  if (parts == 1) {
    V hi = b.vec(256, Cls::F, "hi8");
    b.vextract(hi, v.part[0], 1);
    b.vmax_f(m8, hi, b.view(v.part[0], 256, Cls::F));
  } else {
    b.vmax_f(m8, v.part[1], v.part[0]);
  }
  V hi4 = b.vec(128, Cls::F, "hi4"), m = b.vec(128, Cls::F, "m4"), t = b.vec(128, Cls::F, "t4");
  b.vextract(hi4, m8, 1);
  b.vmax_f(m, hi4, b.view(m8, 128, Cls::F));
  b.vpermil_f(t, m, 0xEE);
  b.vmax_f(m, m, t);
  b.vmovshdup(t, m);
  b.vmax_f(m, m, t);
  return m;
}

namespace {

uint32_t bits(float f) {
  uint32_t u;
  static_assert(sizeof u == sizeof f);
  __builtin_memcpy(&u, &f, 4);
  return u;
}

// 2^k for integer-valued float lanes k in [-126, 127]: the bits (k + 127) << 23.
void pow2(Lanes16& L, const ExpConsts& c, V16 d, V16 k) {
  Builder& b = L.b;
  for (int h = 0; h < L.parts; ++h) {
    V i = b.vec(L.width(), Cls::I, "k_i");
    b.vcvtt_f32_i32(i, k.part[h]);
    b.vadd_i32(i, i, c.bias);
    b.vsll_i32(i, i, 23);
    b.vcopy(d.part[h], b.view(i, L.width(), Cls::F));
  }
}

}  // namespace

void exp_sub_groups(Lanes16& L, const ExpConsts& c, V src, V dst, V n16, V16 max, V sum) {
  Builder& b = L.b;
  V g = b.i64("g");
  b.for_(g, b.imm(0, "zero"), n16, b.imm(16, "c16"));
  {
    V16 w = L.vec("w"), ex = L.vec("ex");
    L.load(w, Mem{src, g, 4, 0});
    L.sub(w, w, max);
    exp16(L, c, ex, w);
    L.store(Mem{dst, g, 4, 0}, ex);
    V sd = b.vec(128, Cls::F, "sd");
    b.vcvt_ss_sd(sd, L.reduce_add(ex));
    b.vadd_sd(sum, sum, sd);
  }
  b.end_for();
}

V inv_of_sum(Builder& b, V one_d, V sum) {
  V inv = b.vec(128, Cls::F, "inv");
  b.vdiv_sd(inv, one_d, sum);
  b.vcvt_sd_ss(inv, inv);
  return inv;
}

void scale_groups(Lanes16& L, V row, V n16, V inv) {
  Builder& b = L.b;
  const V16 invv = L.bcast(inv, "invv");
  V g = b.i64("g");
  b.for_(g, b.imm(0, "zero"), n16, b.imm(16, "c16"));
  {
    V16 w = L.vec("w");
    L.load(w, Mem{row, g, 4, 0});
    L.mul(w, w, invv);
    L.store(Mem{row, g, 4, 0}, w);
  }
  b.end_for();
}

void copy_floats(Lanes16& L, V src, V dst, V n) {
  kir::Builder& b = L.b;
  V full = b.i64("full"), bytes = b.i64("bytes"), off = b.i64("off"), i = b.i64("i");
  b.andi(full, n, ~int64_t(15));
  b.muli(bytes, full, 4);
  b.for_(off, b.imm(0, "zero"), bytes, b.imm(64, "group_bytes"));
  {
    V16 x = L.vec("x");
    L.load(x, Mem{src, off, 1, 0});
    L.store(Mem{dst, off, 1, 0}, x);
  }
  b.end_for();
  V s = b.vec(128, kir::Cls::F, "s");
  b.for_(i, full, n, b.imm(1, "one"));
  b.vload_ss(s, Mem{src, i, 4, 0});
  b.vstore_ss(Mem{dst, i, 4, 0}, s);
  b.end_for();
}

ExpConsts exp_consts(Lanes16& L) {
  ExpConsts c;
  c.lo = L.splat(bits(-200.0f), "x_lo");
  c.hi = L.splat(bits(200.0f), "x_hi");
  c.log2e = L.splat(bits(0x1.715476p+0f), "log2e");
  c.round = L.splat(bits(0x1.8p23f), "round");
  c.ln2hi_neg = L.splat(bits(-0x1.62e4p-1f), "ln2hi_neg");
  c.ln2lo_neg = L.splat(bits(-0x1.7f7d1cp-20f), "ln2lo_neg");
  c.c4 = L.splat(bits(0x1.0e4020p-7f), "c4");
  c.c3 = L.splat(bits(0x1.573e2ep-5f), "c3");
  c.c2 = L.splat(bits(0x1.555e66p-3f), "c2");
  c.c1 = L.splat(bits(0x1.fffdb6p-2f), "c1");
  c.c0 = L.splat(bits(0x1.ffffecp-1f), "c0");
  c.one = L.splat(bits(1.0f), "one");
  c.m100 = L.splat(bits(-100.0f), "m100");
  c.m126 = L.splat(bits(-126.0f), "m126");
  c.p127 = L.splat(bits(127.0f), "p127");
  c.bias = L.b.vec(L.width(), Cls::I, "bias127");
  L.b.vsplat32(c.bias, 127);
  return c;
}

void exp16(Lanes16& L, const ExpConsts& c, V16 d, V16 x) {
  V16 xc = L.vec("xc"), z = L.vec("z"), n = L.vec("n"), r = L.vec("r"), u = L.vec("u");
  L.max(xc, c.lo, x);  // maxps(lo, x), minps(hi, x): a NaN x stays NaN
  L.min(xc, c.hi, xc);
  L.copy(z, c.round);
  L.fma(z, xc, c.log2e);  // z = fma(x, log2e, 1.5 * 2^23)
  L.sub(n, z, c.round);   // n = round(x * log2e)
  L.copy(r, xc);
  L.fma(r, n, c.ln2hi_neg);  // b = fma(-n, ln2hi, x)
  L.fma(r, n, c.ln2lo_neg);  // b = fma(-n, ln2lo, b)
  L.mul(u, r, r);
  V16 t1 = L.vec("t1"), t2 = L.vec("t2"), j = L.vec("j");
  L.copy(t1, c.c3);
  L.fma(t1, c.c4, r);  // fma(c4, b, c3)
  L.copy(t2, c.c1);
  L.fma(t2, c.c2, r);  // fma(c2, b, c1)
  L.fma(t2, t1, u);    // fma(., u, .)
  L.copy(j, c.one);
  L.fma(j, c.c0, r);  // fma(c0, b, 1)
  L.fma(j, t2, u);    // j
  V16 n1 = L.vec("n1"), n2 = L.vec("n2"), p1 = L.vec("p1"), p2 = L.vec("p2");
  L.max(n1, n, c.m100);
  L.min(n1, n1, c.p127);
  L.sub(n2, n, n1);
  L.max(n2, n2, c.m126);
  L.min(n2, n2, c.p127);
  pow2(L, c, p1, n1);
  pow2(L, c, p2, n2);
  L.mul(d, j, p1);
  L.mul(d, d, p2);
}

void swiglu16(Lanes16& L, const ExpConsts& c, V16 zero, V16 d, V16 g, V16 u) {
  V16 t = L.vec("t"), e = L.vec("e");
  L.sub(t, zero, g);  // 0 - g
  exp16(L, c, e, t);
  L.add(e, c.one, e);  // 1 + exp
  L.div(t, g, e);      // silu
  L.mul(d, t, u);
}

}  // namespace cke::jit::gen
