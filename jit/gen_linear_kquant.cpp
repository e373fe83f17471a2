// Generated linear kernels for Q2_K, Q3_K, Q4_K and Q5_K weights in ggml's plain vec_dot
// arithmetic (contracts linear.q{2,3,4,5}_K.ggml: ggml_vec_dot_q*_K_q8_K's lanes,
// kernels/ref/linear_dot_k.cpp), AVX-512 VNNI and AVX2, written once in KIR.
//
// The four share ggml's lane structure (as q6_K, gen_linear_q6_K.cpp): per super-block of 256
// and per output, 8 int32 lanes; lane l of 32-element chunk c gets the exact dot of elements
// 32c+4l..+3 times the scale of their sub-block (sub-blocks of 32: q4_K, q5_K, one scale per
// chunk; of 16: q2_K, q3_K, lanes 0-3 and 4-7 of a chunk have their own), summed over the 8
// chunks; then acc = fma(fl(d_a * d_w), float(isum), acc) per super-block and hsum8 at the
// end. The formats differ in the quant bits, the scale packing and the min term:
//   q2_K: 2-bit quants; min lanes m[2l]*bsum[2l] + m[2l+1]*bsum[2l+1] go into the same acc
//         first, acc = fma(-d_a * dmin_w, float(min lanes), acc).
//   q3_K: 2 low bits plus the hmask bit, q = u - 4 (u in 0..7): the dot is formed as
//         sum(u*a) - sum(4*a), both exact, per lane; signed 6-bit scales.
//   q4_K: nibbles; the min term in a 4-lane accumulator, lane l = m[2l]*bsum32(2l) +
//         m[2l+1]*bsum32(2l+1), fma(-d_a * dmin_w, ., accm); result hsum8(acc) + hsum4(accm).
//   q5_K: nibbles plus the qh bit; the min term a scalar, summs = fma(-d_a * dmin_w,
//         float(sum_j m_j * bsum32(j)), summs); result hsum8(acc) + summs.
// Integer parts: quants as unsigned bytes against the Q8_K int8 activations, vpmaddubsw pair
// sums (|2 * 31 * 128| < 32768: no saturation) times the scale in both words of the lane's
// dword (vpdpwssd / vpmaddwd): exact int32, whatever the order. -d_a is d_a with its sign
// bit flipped (an integer add of 0x80000000), as ggml negates.
//
// AVX-512 VNNI: a zmm holds two chunks (lanes 0-7 and 8-15); a row's block is unpacked once
// for up to 4 tokens (tile 1 x 1..4). AVX2: one chunk per ymm, one token per tile.
#include "jit/gen_linear_kquant.h"

#include <fmt/format.h>

#include <cstddef>
#include <stdexcept>

#include "jit/gen_tile.h"
#include "kernels/formats/blocks.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int kABlock = int(sizeof(block_q8_K));  // 292
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
static_assert(offsetof(block_q8_K, d) == 0);

// How a format packs its sub-block scales.
enum class Scales : uint8_t {
  K4,  // q4_K / q5_K: 8 6-bit scales and 8 6-bit mins in 12 bytes (ggml's utmp unpacking)
  Q3,  // 16 6-bit scales in 12 bytes, minus 32
  Q2,  // 16 bytes: scale low nibble, min high nibble
};
// Where the min term goes.
enum class Mins : uint8_t { None, IntoAcc, Scalar, Lanes4 };

struct KFormat {
  const char* gen;
  const char* contract;
  int block;                    // bytes of a weight block
  int d, dmin, scales, qs, qh;  // byte offsets in the block; -1: none
  int bits;                     // low bits per quant in qs (2 or 4)
  Scales packing;
  Mins mins;
  int hbit;      // the bit of a quant byte the qh / hmask bit lands on, or -1
  bool offset4;  // q3_K: q = u - 4
};

bool sub16(const KFormat& f) {
  return f.packing != Scales::K4;
}

static_assert(sizeof(block_q2_K) == 84 && offsetof(block_q2_K, qs) == 16 &&
              offsetof(block_q2_K, d) == 80 && offsetof(block_q2_K, dmin) == 82);
static_assert(sizeof(block_q3_K) == 110 && offsetof(block_q3_K, qs) == 32 &&
              offsetof(block_q3_K, scales) == 96 && offsetof(block_q3_K, d) == 108);
static_assert(sizeof(block_q4_K) == 144 && offsetof(block_q4_K, scales) == 4 &&
              offsetof(block_q4_K, qs) == 16);
static_assert(sizeof(block_q5_K) == 176 && offsetof(block_q5_K, scales) == 4 &&
              offsetof(block_q5_K, qh) == 16 && offsetof(block_q5_K, qs) == 48);

constexpr KFormat kQ2K{"q2_K",     "linear.q2_K.ggml", 84, 80,   82, 0, 16, -1, 2,
                       Scales::Q2, Mins::IntoAcc,      -1, false};
constexpr KFormat kQ3K{"q3_K", "linear.q3_K.ggml", 110,        108, -1,  96, 32, 0,
                       2,      Scales::Q3,         Mins::None, 2,   true};
constexpr KFormat kQ4K{"q4_K", "linear.q4_K.ggml", 144,          0,  2,    4, 16, -1,
                       4,      Scales::K4,         Mins::Lanes4, -1, false};
constexpr KFormat kQ5K{"q5_K", "linear.q5_K.ggml", 176,          0, 2,    4, 48, 16,
                       4,      Scales::K4,         Mins::Scalar, 4, false};

// One tile: 1 row x `tokens` tokens.
class KTile {
 public:
  KTile(kir::Module& m, const std::string& name, const KFormat& f, bool avx512, int tokens)
      : b_(open_tile(m, name)), a_(begin_tile(b_)), f_(f), avx512_(avx512), tokens_(tokens) {
    if (tokens < 1 || tokens > (avx512 ? 4 : 1))
      throw std::logic_error("kir: K-quant tile token count out of range");
  }
  int build();

 private:
  V vec(int bits, Cls c, const char* n) { return b_.vec(bits, c, n); }
  V splat(int bits, const char* n, uint32_t v) {
    V x = vec(bits, Cls::I, n);
    b_.vsplat32(x, v);
    return x;
  }
  Mem at(int disp) const { return Mem{a_.w, off_, 1, disp}; }
  int cps() const { return 8 / f_.bits; }  // chunks per 32 bytes of qs
  int src(int c) const { return f_.qs + 32 * (c / cps()); }
  int rsh(int c) const { return f_.bits * (c % cps()); }

  void heads();
  void scale_vectors(V S, V M);
  V shift_hbit(V h, int c, int bits);
  V pair_quants(int k);
  V chunk_quants(int c);
  V chunk_scale(int c);
  V neg_mul(V da, V dminw, int bits);
  void finish(int t, V isum8);
  void store();

  Builder b_;
  TileArgs a_;
  const KFormat& f_;
  bool avx512_;
  int tokens_;
  TokenRows tr_;
  V off_;
  // Constants.
  V lomask_, hmask_, four_, sign_, upper_, frame_;
  V idx_[4];
  // Per block.
  V dw_, dminw_, s32_, scl_[2], mins_, hb_, base_[4];
  // Per token.
  V acc_[4], extra_[4];
};

int KTile::build() {
  Builder& b = b_;
  const int W = avx512_ ? 512 : 256;
  tr_ = token_rows(b, a_.a, a_.as, tokens_);
  lomask_ = splat(W, "lomask", f_.bits == 2 ? 0x03030303u : 0x0F0F0F0Fu);
  if (f_.hbit >= 0) hmask_ = splat(W, "hmask", 0x01010101u << f_.hbit);
  if (f_.offset4) four_ = splat(W, "four", 0x04040404u);
  if (f_.mins != Mins::None) sign_ = splat(256, "sign", 0x80000000u);
  if (avx512_) {
    upper_ = b.mask("upper");
    b.kimm(upper_, 0xFFFF0000ull);  // the words of the zmm's upper half
    for (int k = 0; k < 4; ++k) {   // scale lanes of chunks 2k (lanes 0-7), 2k + 1 (8-15)
      std::vector<uint32_t> lanes;
      for (int l = 0; l < 16; ++l)
        lanes.push_back(uint32_t(sub16(f_) ? 4 * k + l / 4 : 2 * k + l / 8));
      idx_[k] = vec(512, Cls::I, "scale_idx");
      b.vconst32(idx_[k], lanes);
    }
  } else if (sub16(f_)) {
    for (int k = 0; k < 4; ++k) {  // chunk c (c % 4 = k): lanes 0-3 scale 2k, 4-7 2k + 1
      const uint32_t i0 = uint32_t(2 * k);
      idx_[k] = vec(256, Cls::I, "scale_idx");
      b.vconst32(idx_[k], {i0, i0, i0, i0, i0 + 1, i0 + 1, i0 + 1, i0 + 1});
    }
  } else {  // the 8 scales (each in both words of a dword), broadcast from the frame
    frame_ = b.ptr("frame");
    b.ptr_align(frame_, b.stack(64, "frame_raw"), 32);
  }
  for (int t = 0; t < tokens_; ++t) {
    acc_[t] = vec(256, Cls::F, "acc");
    b.vzero(acc_[t]);
    if (f_.mins == Mins::Scalar || f_.mins == Mins::Lanes4) {
      extra_[t] = vec(128, Cls::F, f_.mins == Mins::Scalar ? "summs" : "accm");
      b.vzero(extra_[t]);
    }
  }
  off_ = b.i64("off");
  V end = b.i64("end");
  b.muli(end, a_.n, f_.block);
  const RowPrefetch pf = row_prefetch(b, a_, 1);
  b.for_(off_, b.imm(0, "zero"), end, b.imm(f_.block, "block_bytes"));
  prefetch_rows(b, {a_.w}, off_, f_.block, pf);
  heads();
  if (avx512_) {
    for (V& v : base_) v = V{};
    V q[4], s[4];
    for (int k = 0; k < 4; ++k) {
      q[k] = pair_quants(k);
      s[k] = vec(512, Cls::I, "s");
      b.vperm_d(s[k], s32_, idx_[k]);
    }
    for (int t = 0; t < tokens_; ++t) {
      V isum = vec(512, Cls::I, "isum"), cor;
      b.vzero(isum);
      if (f_.offset4) {
        cor = vec(512, Cls::I, "cor");
        b.vzero(cor);
      }
      for (int k = 0; k < 4; ++k) {
        V act = vec(512, Cls::I, "act"), p = vec(512, Cls::I, "p16");
        b.vload(act, tr_.at(t, kAQs + 64 * k));
        b.vmaddubs_w(p, q[k], act);
        b.vdpwssd(isum, p, s[k]);
        if (f_.offset4) {  // sum(4 * a) of the lane's elements, times the same scale
          V n = vec(512, Cls::I, "n16");
          b.vmaddubs_w(n, four_, act);
          b.vdpwssd(cor, n, s[k]);
        }
      }
      if (f_.offset4) b.vsub_i32(isum, isum, cor);
      V hi8 = vec(256, Cls::I, "hi8"), i8 = vec(256, Cls::I, "isum8");
      b.vextract(hi8, isum, 1);
      b.vadd_i32(i8, b.view(isum, 256, Cls::I), hi8);  // lane l of both chunks of a pair
      finish(t, i8);
    }
  } else {
    V isum = vec(256, Cls::I, "isum"), cor;
    b.vzero(isum);
    if (f_.offset4) {
      cor = vec(256, Cls::I, "cor");
      b.vzero(cor);
    }
    for (int c = 0; c < 8; ++c) {
      V q = chunk_quants(c), s = chunk_scale(c);
      V act = vec(256, Cls::I, "act"), p = vec(256, Cls::I, "dot");
      b.vload(act, tr_.at(0, kAQs + 32 * c));
      b.vmaddubs_w(p, q, act);
      b.vmadd_wd(p, p, s);
      b.vadd_i32(isum, isum, p);
      if (f_.offset4) {
        V n = vec(256, Cls::I, "n");
        b.vmaddubs_w(n, four_, act);
        b.vmadd_wd(n, n, s);
        b.vadd_i32(cor, cor, n);
      }
    }
    if (f_.offset4) b.vsub_i32(isum, isum, cor);
    finish(0, isum);
  }
  b.addi(tr_.base, tr_.base, kABlock);
  b.end_for();
  store();
  return b.index();
}

// d_w (and dmin_w) as f32 lanes, the scales as dwords holding the scale in both words
// (the vpmaddwd / vpdpwssd multiplier of a lane's two pair sums), the min multipliers.
void KTile::heads() {
  Builder& b = b_;
  V dh = vec(128, Cls::I, "dh");
  dw_ = vec(256, Cls::F, "dw");
  b.vbcast_i16(dh, at(f_.d));
  b.vcvt_f16_f32(dw_, dh);
  if (f_.dmin >= 0) {
    V mh = vec(128, Cls::I, "dminh");
    dminw_ = vec(256, Cls::F, "dminw");
    b.vbcast_i16(mh, at(f_.dmin));
    b.vcvt_f16_f32(dminw_, mh);
  }
  V S = vec(128, Cls::I, "sc_bytes"), M;  // 16 scale bytes; q2_K: M = its 16 mins
  switch (f_.packing) {
    case Scales::K4: {
      // ggml's utmp: sc 0-3 = u0 & 0x3f, sc 4-7 = (u2 & 0x0f) | ((u0 >> 6) & 3) << 4,
      // m 0-3 = u1 & 0x3f, m 4-7 = ((u2 >> 4) & 0x0f) | ((u1 >> 6) & 3) << 4, each dword
      // broadcast (reads exactly the 12 bytes). (x >> 6 & 3) << 4 = (x >> 2) & 0x30 per byte.
      V u[3];
      for (int i = 0; i < 3; ++i) {
        u[i] = vec(128, Cls::I, "u");
        b.vbcast_f32(u[i], at(f_.scales + 4 * i));
      }
      V k3f = splat(128, "k3f", 0x3F3F3F3Fu), k0f = splat(128, "k0f", 0x0F0F0F0Fu),
        k30 = splat(128, "k30", 0x30303030u);
      V sa = vec(128, Cls::I, "sc03"), sb = vec(128, Cls::I, "sc47"), ma = vec(128, Cls::I, "m03"),
        mb = vec(128, Cls::I, "m47"), t = vec(128, Cls::I, "t");
      b.vand(sa, u[0], k3f);
      b.vsrl_i16(t, u[0], 2);
      b.vand(t, t, k30);
      b.vand(sb, u[2], k0f);
      b.vor(sb, sb, t);
      b.vand(ma, u[1], k3f);
      b.vsrl_i16(t, u[1], 2);
      b.vand(t, t, k30);
      b.vsrl_i16(mb, u[2], 4);
      b.vand(mb, mb, k0f);
      b.vor(mb, mb, t);
      V x = vec(128, Cls::I, "sc"), y = vec(128, Cls::I, "mn");
      b.vunpack_lo32(x, sa, sb);
      b.vunpack_lo32(y, ma, mb);
      b.vunpack_lo64(S, x, y);  // bytes: sc 0-7, m 0-7
      break;
    }
    case Scales::Q3: {
      // s4[0..3] = [a0 & 0xf, a1 & 0xf, a0 >> 4 & 0xf, a1 >> 4 & 0xf]
      //          | [a2 << 4, a2 << 2, a2, a2 >> 2] & 0x30, then minus 32 bytewise.
      V a[3];
      for (int i = 0; i < 3; ++i) {
        a[i] = vec(128, Cls::I, "aux");
        b.vbcast_f32(a[i], at(f_.scales + 4 * i));
      }
      V k0f = splat(128, "k0f", 0x0F0F0F0Fu), k30 = splat(128, "k30", 0x30303030u),
        k20 = splat(128, "k20", 0x20202020u);
      V x01 = vec(128, Cls::I, "x01"), lo = vec(128, Cls::I, "lo4"), hi = vec(128, Cls::I, "hi4"),
        L = vec(128, Cls::I, "L");
      b.vunpack_lo32(x01, a[0], a[1]);
      b.vand(lo, x01, k0f);
      b.vsrl_i16(hi, x01, 4);
      b.vand(hi, hi, k0f);
      b.vunpack_lo64(L, lo, hi);
      V s4 = vec(128, Cls::I, "a2s4"), s2 = vec(128, Cls::I, "a2s2"), r2 = vec(128, Cls::I, "a2r2"),
        P = vec(128, Cls::I, "P"), Q = vec(128, Cls::I, "Q"), H = vec(128, Cls::I, "H");
      b.vsll_i16(s4, a[2], 4);
      b.vsll_i16(s2, a[2], 2);
      b.vsrl_i16(r2, a[2], 2);
      b.vunpack_lo32(P, s4, s2);
      b.vunpack_lo32(Q, a[2], r2);
      b.vunpack_lo64(H, P, Q);
      b.vand(H, H, k30);
      b.vor(S, L, H);
      b.vsub_i8(S, S, k20);
      break;
    }
    case Scales::Q2: {
      V x = vec(128, Cls::I, "scales"), k0f = splat(128, "k0f", 0x0F0F0F0Fu);
      M = vec(128, Cls::I, "mins");
      b.vload(x, at(f_.scales));
      b.vand(S, x, k0f);
      b.vsrl_i16(M, x, 4);
      b.vand(M, M, k0f);
      break;
    }
  }
  scale_vectors(S, M);
  if (f_.hbit >= 0) {  // the high bits: [qh | qh >> 1] (AVX-512: chunk pairs) or qh
    hb_ = vec(avx512_ ? 512 : 256, Cls::I, "qh");
    if (avx512_) {
      b.vbcast256(hb_, at(f_.qh));
      b.vsrl_i16_mk(hb_, upper_, hb_, 1);
    } else {
      b.vload(hb_, at(f_.qh));
    }
  }
}

// Dwords of 16 (AVX2: 2 x 8) scale bytes, each scale in both words (sign-extended).
void KTile::scale_vectors(V S, V M) {
  Builder& b = b_;
  const bool neg = f_.packing == Scales::Q3;  // signed scales
  auto dup = [&](V v) {
    V hi = vec(b.type(v).bits, Cls::I, "sc_hi");
    b.vsll_i32(hi, v, 16);
    if (neg) b.vsrl_i32(v, hi, 16);
    b.vor(v, v, hi);
  };
  if (avx512_) {
    s32_ = vec(512, Cls::I, "s32");
    b.vsx_bd(s32_, S);
    dup(s32_);
    if (f_.packing == Scales::K4) {  // the mins: dwords 8-15
      mins_ = vec(256, Cls::I, "mins32");
      b.vextract(mins_, s32_, 1);
    }
  } else {
    V Sh = vec(128, Cls::I, "sc_bytes_hi");
    b.vunpack_hi64(Sh, S, S);  // bytes 8-15 in the low half (no read past the block)
    scl_[0] = vec(256, Cls::I, "scl0");
    scl_[1] = vec(256, Cls::I, "scl1");
    b.vsx_bd(scl_[0], S);
    b.vsx_bd(scl_[1], Sh);
    dup(scl_[0]);
    dup(scl_[1]);
    if (f_.packing == Scales::K4) {
      b.vstore(Mem{frame_, {}, 1, 0}, scl_[0]);
      mins_ = scl_[1];
    }
  }
  if (f_.packing == Scales::Q2) {  // int16 mins for vpmaddwd with the bsums
    mins_ = vec(256, Cls::I, "mins16");
    b.vsx_bw(mins_, M);
  }
}

// The high bit of chunk c (bit c of the qh byte) moved to bit hbit, masked.
V KTile::shift_hbit(V h, int c, int bits) {
  Builder& b = b_;
  V x = vec(bits, Cls::I, "hbits");
  const int sh = c - f_.hbit;
  if (sh > 0)
    b.vsrl_i16(x, h, sh);
  else if (sh < 0)
    b.vsll_i16(x, h, -sh);
  b.vand(x, sh ? x : h, hmask_);
  return x;
}

// AVX-512: quants of chunks 2k (lanes 0-7) and 2k + 1 (8-15) as unsigned bytes.
V KTile::pair_quants(int k) {
  Builder& b = b_;
  const int c0 = 2 * k, si = (src(c0) - f_.qs) / 32;
  if (!base_[si].valid()) {  // [qs | qs >> bits]: the pair's upper chunk one field higher
    base_[si] = vec(512, Cls::I, "qs");
    b.vbcast256(base_[si], at(src(c0)));
    b.vsrl_i16_mk(base_[si], upper_, base_[si], f_.bits);
  }
  V q = vec(512, Cls::I, "q");
  if (rsh(c0) > 0) b.vsrl_i16(q, base_[si], rsh(c0));
  b.vand(q, rsh(c0) > 0 ? q : base_[si], lomask_);
  if (f_.hbit >= 0) b.vor(q, q, shift_hbit(hb_, c0, 512));
  return q;
}

// AVX2: quants of chunk c as unsigned bytes.
V KTile::chunk_quants(int c) {
  Builder& b = b_;
  V q = vec(256, Cls::I, "q");
  b.vload(q, at(src(c)));
  if (rsh(c) > 0) b.vsrl_i16(q, q, rsh(c));
  b.vand(q, q, lomask_);
  if (f_.hbit >= 0) b.vor(q, q, shift_hbit(hb_, c, 256));
  return q;
}

V KTile::chunk_scale(int c) {
  Builder& b = b_;
  V s = vec(256, Cls::I, "s");
  if (sub16(f_))
    b.vperm_d(s, scl_[c / 4], idx_[c % 4]);
  else
    b.vbcast_f32(s, Mem{frame_, {}, 1, 4 * c});
  return s;
}

// (-d_a) * dmin_w on `bits` lanes (-d_a: the sign bit flipped).
V KTile::neg_mul(V da, V dminw, int bits) {
  Builder& b = b_;
  V n = vec(bits, Cls::F, "neg_da"), r = vec(bits, Cls::F, "dmin");
  b.vadd_i32(n, b.view(da, bits, Cls::I), b.view(sign_, bits, Cls::I));
  b.vmul_f(r, n, b.view(dminw, bits, Cls::F));
  return r;
}

// The end of a super-block for token t: its min term and acc = fma(fl(d_a * d_w),
// float(isum8), acc).
void KTile::finish(int t, V isum8) {
  Builder& b = b_;
  V da = vec(256, Cls::F, "da");
  b.vbcast_f32(da, tr_.at(t, 0));
  V bs;
  if (f_.mins != Mins::None) {
    bs = vec(256, Cls::I, "bsums");
    b.vload(bs, tr_.at(t, kABsums));
  }
  if (f_.mins == Mins::IntoAcc) {  // q2_K: lane l = m[2l]*bsum[2l] + m[2l+1]*bsum[2l+1]
    V prod = vec(256, Cls::I, "prod"), fp = vec(256, Cls::F, "fprod");
    b.vmadd_wd(prod, bs, mins_);
    b.vcvt_i32_f32(fp, prod);
    b.vfma(acc_[t], neg_mul(da, dminw_, 256), fp);
  }
  V d = vec(256, Cls::F, "d"), fs = vec(256, Cls::F, "fsum");
  b.vmul_f(d, da, dw_);
  b.vcvt_i32_f32(fs, isum8);
  b.vfma(acc_[t], d, fs);
  if (f_.mins == Mins::Scalar || f_.mins == Mins::Lanes4) {
    // Lane j = m_j * (bsums[2j] + bsums[2j + 1]) (exact).
    V m8 = vec(256, Cls::I, "m8"), hi = vec(128, Cls::I, "m8_hi"), m4 = vec(128, Cls::I, "m4");
    b.vmadd_wd(m8, bs, mins_);
    b.vextract(hi, m8, 1);
    if (f_.mins == Mins::Lanes4) {
      b.vhadd_i32(m4, b.view(m8, 128, Cls::I), hi);  // lane l: lanes 2l + 2l + 1
    } else {
      b.vadd_i32(m4, b.view(m8, 128, Cls::I), hi);
      for (int imm : {0x4E, 0xB1}) {  // lanes 2,3 onto 0,1, then 1 onto 0 (single-uop shuffles)
        V x = vec(128, Cls::F, "m_sh");
        b.vpermil_f(x, b.view(m4, 128, Cls::F), imm);
        b.vadd_i32(m4, m4, b.view(x, 128, Cls::I));
      }  // lane 0: the exact sum
    }
    V f = vec(128, Cls::F, "fmins");
    b.vcvt_i32_f32(f, m4);
    V dmin = neg_mul(da, dminw_, 128);
    if (f_.mins == Mins::Scalar)
      b.vfma_ss(extra_[t], dmin, f);
    else
      b.vfma(extra_[t], dmin, f);
  }
}

// y = hsum8(acc) (+ summs, or + hsum4(accm)) per token.
void KTile::store() {
  Builder& b = b_;
  V yt = b.ptr("yt");
  b.mov(yt, a_.y);
  for (int t = 0; t < tokens_; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a_.ys, 1);
    V h = hsum8(b, acc_[t]);
    if (f_.mins == Mins::Scalar) {
      V o = vec(128, Cls::F, "y");
      b.vadd_ss(o, h, extra_[t]);
      h = o;
    } else if (f_.mins == Mins::Lanes4) {  // (a0 + a2) + (a1 + a3)
      V x = vec(128, Cls::F, "m_hi"), s = vec(128, Cls::F, "m_s"), u = vec(128, Cls::F, "m_u"),
        o = vec(128, Cls::F, "y");
      b.vpermil_f(x, extra_[t], 0xEE);
      b.vadd_f(s, extra_[t], x);
      b.vmovshdup(u, s);
      b.vadd_f(s, s, u);
      b.vadd_ss(o, h, s);
      h = o;
    }
    b.vstore_ss(Mem{yt, {}, 1, 0}, h);
  }
}

bool build_kquant(const KFormat& f, Isa isa, const GeneratorParams& params, kir::Module* m,
                  std::string* err) {
  const bool avx2 = isa == Isa::Avx2;
  const std::string gen = fmt::format("linear_{}__{}", f.gen, isa_suffix(isa));
  int rows = 1, tokens = 1;
  if (!int_params(params, gen, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows != 1 || tokens < 1 || tokens > (avx2 ? 1 : 4)) {
    *err = fmt::format("generator '{}': tile {}x{} is not one it can emit (rows 1, tokens 1..{})",
                       gen, rows, tokens, avx2 ? 1 : 4);
    return false;
  }
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}: ggml_vec_dot_{}_q8_K lanes of contract {}\n"
      "(activations: Q8_K rows from the plan's act_quant step)",
      gen, rows, tokens, f.gen, f.contract);
  Builder e = open_linear_entry(*m, m->name);
  const Grid g = token_grid(m->name, 1, tokens, [&](const std::string& fn, int t) {
    return KTile(*m, fn, f, !avx2, t).build();
  });
  emit_linear_entry(e, g, {kQK_K, f.block, kABlock});
  return true;
}

}  // namespace

bool build_linear_q5_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ5K, Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q5_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ5K, Isa::Avx2, p, m, err);
}
bool build_linear_q3_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ3K, Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q3_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ3K, Isa::Avx2, p, m, err);
}
bool build_linear_q2_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ2K, Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q2_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ2K, Isa::Avx2, p, m, err);
}
bool build_linear_q4_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ4K, Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q4_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_kquant(kQ4K, Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
