#include "jit/gen_libm_expf.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace cke::jit::gen {

using kir::Builder;
using kir::Cls;
using kir::FCmp;
using kir::Mem;
using kir::V;

namespace {

// glibc's constants (e_expf.c with EXP2F_TABLE_BITS 5, read off libm.so.6): N/ln2, the
// rounding shift and the cubic's coefficients.
constexpr uint64_t kInvLn2N = 0x40471547652b82feull;  // 0x1.71547652b82fep+5
constexpr uint64_t kShift = 0x4338000000000000ull;    // 0x1.8p+52
constexpr uint64_t kC0 = 0x3ebc6af84b912394ull;       // 0x1.c6af84b912394p-20
constexpr uint64_t kC1 = 0x3f2ebfce50fac4f3ull;       // 0x1.ebfce50fac4f3p-13
constexpr uint64_t kC2 = 0x3f962e42ff0c52d6ull;       // 0x1.62e42ff0c52d6p-6
constexpr uint64_t kOne = 0x3ff0000000000000ull;
// The f32 bounds of its special cases and the "may underflow" result.
constexpr uint32_t kOver = 0x42b17217u;      // 0x1.62e42ep6f: above, +inf
constexpr uint32_t kUnder = 0xc2cff1b4u;     // -0x1.9fe368p6f: below, 0
constexpr uint32_t kMayUnder = 0xc2ce8ecfu;  // -0x1.9d1d9ep6f: below, 0x1p-149
constexpr uint32_t kTiny = 0x00000001u;      // 0x1p-149

// T[i] = bits(2^(i/32)) - (i << 47): 2^(i/32) to the nearest double (long double's exp2l
// has 11 bits to spare; the comparison with libm in the test holds the table to it).
uint64_t table_entry(int i) {
  const double v = static_cast<double>(std::exp2l(static_cast<long double>(i) / 32));
  return std::bit_cast<uint64_t>(v) - (uint64_t(i) << 47);
}

// A vector of `bits` whose 64-bit lanes are all v.
V splat64(Builder& b, int bits, uint64_t v, const char* name) {
  std::vector<uint32_t> lanes;
  for (int i = 0; i < bits / 64; ++i) {
    lanes.push_back(uint32_t(v));
    lanes.push_back(uint32_t(v >> 32));
  }
  V x = b.vec(bits, Cls::F, name);
  b.vconst32(x, lanes);
  return x;
}

}  // namespace

LibmExpConsts libm_exp_consts(Lanes16& L) {
  Builder& b = L.b;
  const int w = L.width();  // one half of 16 lanes per part, as doubles: a full vector
  LibmExpConsts c;
  c.inv_ln2_n = splat64(b, w, kInvLn2N, "inv_ln2_n");
  c.shift = splat64(b, w, kShift, "shift");
  c.c0 = splat64(b, w, kC0, "c0");
  c.c1 = splat64(b, w, kC1, "c1");
  c.c2 = splat64(b, w, kC2, "c2");
  c.one = splat64(b, w, kOne, "one_d");
  c.sign = splat64(b, w, 0x8000000000000000ull, "sign_d");
  c.low5 = splat64(b, w, 31, "low5");
  c.table = b.stack(32 * 8, "exp2_table");
  for (int i = 0; i < 32; i += w / 64) {
    std::vector<uint32_t> lanes;
    for (int k = 0; k < w / 64; ++k) {
      const uint64_t t = table_entry(i + k);
      lanes.push_back(uint32_t(t));
      lanes.push_back(uint32_t(t >> 32));
    }
    V x = b.vec(w, Cls::I, "exp2_entries");
    b.vconst32(x, lanes);
    b.vstore(Mem{c.table, {}, 1, 8 * i}, x);
  }
  c.over = L.splat(kOver, "exp_over");
  c.under = L.splat(kUnder, "exp_under");
  c.may_under = L.splat(kMayUnder, "exp_may_under");
  c.inf = L.splat(0x7f800000u, "inf");
  c.tiny = L.splat(kTiny, "exp_tiny");
  c.zero = L.splat(0, "zero");
  return c;
}

namespace {

// y = expf's double path on the f64 lanes of xd (a full vector), as float lanes (half).
void double_path(Builder& b, const LibmExpConsts& c, V out, V xd) {
  const int w = b.type(xd).bits;
  auto vec = [&](const char* n, Cls cls = Cls::F) { return b.vec(w, cls, n); };
  V kds = vec("kds"), kd = vec("kd"), r = vec("r"), k = vec("k_low", Cls::I), s = vec("s", Cls::I),
    hi = vec("k_hi", Cls::I), z = vec("z"), r2 = vec("r2"), y = vec("y");
  b.vcopy(kds, c.shift);
  b.vfma_pd(kds, c.inv_ln2_n, xd);  // N/ln2 * xd + shift, one rounding
  b.vsub_pd(kd, kds, c.shift);
  b.vxor(r, kd, c.sign);          // -kd (exact)
  b.vfma_pd(r, c.inv_ln2_n, xd);  // N/ln2 * xd - kd, one rounding
  b.vand(k, kds, c.low5);
  b.vgather_i64(s, Mem{c.table, {}, 1, 0}, k);
  b.vsll_i64(hi, kds, 47);
  b.vadd_i64(s, s, hi);  // 2^(k/32), as bits
  b.vcopy(z, c.c1);
  b.vfma_pd(z, r, c.c0);  // r * C0 + C1
  b.vmul_pd(r2, r, r);
  b.vcopy(y, c.one);
  b.vfma_pd(y, r, c.c2);  // r * C2 + 1
  b.vfma_pd(y, z, r2);    // z * r2 + y
  b.vmul_pd(y, y, b.view(s, w, Cls::F));
  b.vcvt_pd_ps(out, y);
}

}  // namespace

void libm_expf16(Lanes16& L, const LibmExpConsts& c, V16 d, V16 x) {
  Builder& b = L.b;
  const int w = L.width(), hw = w / 2;
  V16 y = L.vec("expf");
  for (int p = 0; p < L.parts; ++p) {
    // Each half of the part (hw bits of f32 lanes) widened to doubles (w bits).
    V lo = b.view(x.part[p], hw, Cls::F), hi = b.vec(hw, Cls::F, "x_hi");
    b.vextract(hi, x.part[p], 1);
    V ylo = b.vec(hw, Cls::F, "y_lo"), yhi = b.vec(hw, Cls::F, "y_hi");
    V xd = b.vec(w, Cls::F, "xd");
    b.vcvt_ps_pd(xd, lo);
    double_path(b, c, ylo, xd);
    b.vcvt_ps_pd(xd, hi);
    double_path(b, c, yhi, xd);
    b.vinsert(y.part[p], x.part[p], ylo, 0);
    b.vinsert(y.part[p], y.part[p], yhi, 1);
  }
  // The special cases, from the lowest bound up, then NaN.
  const bool mask = L.parts == 1;
  for (int p = 0; p < L.parts; ++p) {
    auto where = [&](V a, V bnd, FCmp pred) {
      V m = mask ? b.mask("exp_case") : b.vec(w, Cls::F, "exp_case");
      b.vcmp_f(m, a, bnd, pred);
      return m;
    };
    V xp = x.part[p], yp = y.part[p];
    b.vselect(yp, where(xp, c.may_under.part[0], FCmp::LT), c.tiny.part[0], yp);
    b.vselect(yp, where(xp, c.under.part[0], FCmp::LT), c.zero.part[0], yp);
    b.vselect(yp, where(xp, c.over.part[0], FCmp::GT), c.inf.part[0], yp);
    V nan = b.vec(w, Cls::F, "x_plus_x");
    b.vadd_f(nan, xp, xp);
    b.vselect(yp, where(xp, xp, FCmp::UNORD), nan, yp);
    b.vcopy(d.part[p], yp);
  }
}

}  // namespace cke::jit::gen
