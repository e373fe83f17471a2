#include "jit/gen_lanes16.h"

namespace cke::jit::gen {

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
void Lanes16::copy(V16 d, V16 a) {
  for (int h = 0; h < parts; ++h) b.vcopy(d.part[h], a.part[h]);
}

V Lanes16::reduce_add(V16 v) {
  V s8 = b.vec(256, Cls::F, "s8");  // v[i+8] + v[i]
  if (parts == 1) {
    V hi = b.vec(256, Cls::F, "hi8");
    b.vextract(hi, v.part[0], 1);
    b.vadd_f(s8, hi, b.view(v.part[0], 256, Cls::F));
  } else {
    b.vadd_f(s8, v.part[1], v.part[0]);
  }
  return hsum8(b, s8);  // t[i+4] + t[i], then (u0 + u2) + (u1 + u3)
}

V Lanes16::fold4_reduce_add(const V16 acc[4]) {
  V16 r = vec("r"), t = vec("t");
  add(r, acc[0], acc[2]);
  add(t, acc[1], acc[3]);
  add(r, r, t);
  return reduce_add(r);
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

}  // namespace cke::jit::gen
