// The one-token tile of the q4_K_r16 linear (decode), contract linear.q4_Kx8.ggml's gemv
// granule: per row and super-block, isum = sum_j sc_j * s_j and imin = sum_j m_j * bsum32_j
// over its 8 sub-blocks j, then acc = fma(float(isum), fl(d_w * d_a), acc) and accmin =
// fma(float(imin), fl(dmin_w * d_a), accmin); the row's output is acc - accmin
// (kernels/ref/linear_dot_repack.cpp q4_K_8x8). One int32 lane per row, 16 rows per zmm,
// reading the q4_K_r16 copy (kernels/formats/layouts.h) as the general tile
// (gen_linear_q4_K.cpp) does for 2..8 tokens.
//
// Why a tile of its own. Decode streams the weights from DRAM once per token, and on the
// hosts measured a gemv's speed there follows its instruction count, not only its bytes:
// the general tile (about 424 instructions a super-block, its scales and mins converted to
// f32 and parked in a frame buffer, so that their products are exact f32 FMA chains shared
// by up to 8 tokens) streamed 25-35 GB/s from two cores where the q6_K_r16 gemv streamed
// 38-60 in the same minutes, and 15 % more instructions in it cost 23 % of its DRAM speed.
// With one token nothing is shared, so this tile keeps every sum an integer:
//  - s_j: vpdpbusd of the nibbles (unsigned) by the token's int8 dwords (broadcast memory
//    operands). The high nibble is used in place, q & 0xF0 = 16 * nibble, and the sum's
//    16 * s_j shifted right by 4 (arithmetic: exact, every product is a multiple of 16),
//    one op a sub-block instead of a shift per vector. |16 * s_j| <= 16 * 61440 < 2^20.
//  - isum: vpmulld of s_j by sc_j, added: |isum| <= 8 * 63 * 61440 < 2^25, exact in int32,
//    so vcvtdq2ps(isum) is float(isum), one rounding to nearest even, as the reference's.
//  - imin: vpdpwssd of the rows' (m_2i, m_2i+1) words by the token's (bsum32_2i,
//    bsum32_2i+1) words (|bsum32| <= 32 * 128 = 4096: an int16), exact.
//  - scales: ggml's 6-bit unpacking as 4 dwords of 4 bytes per row (sc 0-3, sc 4-7, m 0-3,
//    m 4-7): the high four take their low nibble from bytes 8-11 and bits 4-5 from bits 6-7
//    of bytes 0-3 (sc) or 4-7 (m), one vpternlogd each; the 32-bit shifts before it move
//    bits across bytes only where the & 63 after it clears them. A byte becomes a dword
//    (vpand, vpshufb or vpsrld) where its product needs it.
// About 280 instructions a super-block; the two float FMAs and the final subtraction are
// the contract's own operations in its order, so the bits are the general tile's.

#include <vector>

#include "jit/gen_linear_q4_K.h"
#include "jit/gen_rows16.h"
#include "jit/gen_tile.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

namespace {
constexpr int kABlock = int(sizeof(block_q8_K));
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
static_assert(offsetof(block_q8_K, d) == 0);
// The copy's super-block (layouts.h): 4 head dwords of the 16 rows, then chunk c's 8 quant
// dwords at kQuants + 512 c.
constexpr int kQuants = 256;

}  // namespace

K4HeadConsts k4_head_consts(Builder& b) {
  const VecOf zmm{b, 512};
  K4HeadConsts c{zmm.splat("nib", 0x0F0F0F0Fu), zmm.splat("m63", 0x3F3F3F3Fu), zmm.i("even_odd")};
  std::vector<uint32_t> eo;
  for (uint32_t l = 0; l < 16; ++l) eo.push_back(l < 8 ? 2 * l : 2 * (l - 8) + 1);
  b.vconst32(c.even_odd, eo);
  return c;
}

K4Head16 unpack_k4_head16(Builder& b, const V h[4], const K4HeadConsts& c) {
  const VecOf zmm{b, 512};
  K4Head16 r;
  // d_w, dmin_w: the fp16 pairs of each half of the rows as f32 [d, dmin, ...], split by
  // vpermd into [d | dmin] per half, the halves joined.
  {
    V hh = b.vec(256, Cls::I, "head0_hi"), f0 = zmm.f("f0"), f1 = zmm.f("f1"), p0 = zmm.f("p0"),
      p1 = zmm.f("p1");
    r.dw = zmm.f("dw");
    r.dminw = zmm.f("dminw");
    b.vextract(hh, h[0], 1);
    b.vcvt_f16_f32(f0, b.view(h[0], 256, Cls::I));
    b.vcvt_f16_f32(f1, hh);
    b.vperm_d(p0, f0, c.even_odd);
    b.vperm_d(p1, f1, c.even_odd);
    b.vshuf128(r.dw, p0, p1, 0x44);
    b.vshuf128(r.dminw, p0, p1, 0xEE);
  }
  // Scales and mins, 6 bits in each byte: sc[k] = byte k of sc_lo (k < 4) or of sc_hi.
  r.sc_lo = zmm.i("sc_lo");
  r.sc_hi = zmm.i("sc_hi");
  r.mn_lo = zmm.i("mn_lo");
  r.mn_hi = zmm.i("mn_hi");
  V t = zmm.i("t"), u = zmm.i("u");
  b.vsrl_i32(t, h[1], 2);
  b.vternlog(r.sc_hi, h[3], t, c.nib, 0xE4);  // nib ? bytes 8-11 : bytes 0-3 >> 2
  b.vsrl_i32(t, h[3], 4);
  b.vsrl_i32(u, h[2], 2);
  b.vternlog(r.mn_hi, t, u, c.nib, 0xE4);  // nib ? bytes 8-11 >> 4 : bytes 4-7 >> 2
  b.vand(r.sc_lo, h[1], c.m63);
  b.vand(r.sc_hi, r.sc_hi, c.m63);
  b.vand(r.mn_lo, h[2], c.m63);
  b.vand(r.mn_hi, r.mn_hi, c.m63);
  return r;
}

int emit_q4_K_r16_gemv1(kir::Module& m, const std::string& name) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf zmm{b, 512};
  auto table = [&](const char* n, const std::vector<uint32_t>& lanes) {
    V x = zmm.i(n);
    b.vconst32(x, lanes);
    return x;
  };
  const K4HeadConsts hc = k4_head_consts(b);
  const V nib = hc.nib, hib = zmm.splat("hib", 0xF0F0F0F0u), low8 = zmm.splat("low8", 0xFFu);
  const V byte1 = table("byte1", dword_shuffle({1, -1, -1, -1}, 4)),
          byte2 = table("byte2", dword_shuffle({2, -1, -1, -1}, 4)),
          pair01 = table("pair01", dword_shuffle({0, -1, 1, -1}, 4)),
          pair23 = table("pair23", dword_shuffle({2, -1, 3, -1}, 4));
  V ones16 = b.vec(256, Cls::I, "ones16");
  b.vsplat32(ones16, 0x00010001u);
  // The token's bsum32 pairs as int16 words (vpackssdw order: pairs 0, 1 at bytes 0, 4;
  // pairs 2, 3 at 16, 20).
  V frame = b.ptr("frame");
  b.ptr_align(frame, b.stack(128, "frame_raw"), 64);
  const int pair_at[4] = {0, 4, 16, 20};

  V acc = zmm.f("acc"), accmin = zmm.f("accmin");
  b.vzero(acc);
  b.vzero(accmin);
  V ap = b.ptr("ap"), wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.mov(ap, a.a);
  b.muli(end, a.n, kQ4KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ4KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this super-block of the group
  auto act = [&](int32_t disp) { return Mem{ap, {}, 1, disp}; };
  // Every line prefetched kStreamPrefetchAhead on, next to its load (gen_tile.h).
  auto load_w = [&](V v, int32_t disp) {
    if (stream_prefetch(1)) b.vprefetch(Mem{wb, {}, 1, disp + kStreamPrefetchAhead});
    b.vload(v, Mem{wb, {}, 1, disp});
  };

  // Heads: lane r of h[k] = dword k of row r's block head (0: d | dmin << 16).
  V h[4];
  for (int k = 0; k < 4; ++k) {
    h[k] = zmm.i("head");
    load_w(h[k], 64 * k);
  }
  // fl(d_w * d_a), fl(dmin_w * d_a); the scales and mins.
  const K4Head16 hd = unpack_k4_head16(b, h, hc);
  const V sc_lo = hd.sc_lo, sc_hi = hd.sc_hi, mn_lo = hd.mn_lo, mn_hi = hd.mn_hi;
  V d = zmm.f("d"), dmin = zmm.f("dmin");
  {
    V da = zmm.f("da");
    b.vbcast_f32(da, act(0));
    b.vmul_f(d, hd.dw, da);
    b.vmul_f(dmin, hd.dminw, da);
  }
  // imin, and accmin's FMA.
  {
    V bs = b.vec(256, Cls::I, "bsums"), b32 = b.vec(256, Cls::I, "bsum32"),
      bp = b.vec(256, Cls::I, "bsum_pairs");
    b.vload(bs, act(kABsums));
    b.vmadd_wd(b32, bs, ones16);  // bsum32_j = bsums[2j] + bsums[2j+1]
    b.vpackss_dw(bp, b32, b32);   // exact: |bsum32_j| <= 4096
    b.vstore(Mem{frame, {}, 1, 0}, bp);
    V imin = zmm.i("imin");
    b.vzero(imin);
    for (int i = 0; i < 4; ++i) {
      V mp = zmm.i("mn_pair"), bb = zmm.i("bsum_pair");
      b.vshuf_b(mp, i < 2 ? mn_lo : mn_hi, i % 2 ? pair23 : pair01);
      b.vbcast_f32(bb, Mem{frame, {}, 1, pair_at[i]});
      b.vdpwssd(imin, mp, bb);
    }
    V f = zmm.f("fimin");
    b.vcvt_i32_f32(f, imin);
    b.vfma(accmin, f, dmin);  // accmin = fma(float(imin), fl(dmin_w * d_a), accmin)
  }
  // isum over the 4 chunks (sub-blocks 2c: low nibbles, 2c + 1: high nibbles), and acc's FMA.
  V isum = zmm.i("isum");
  for (int c = 0; c < 4; ++c) {
    V slo = zmm.i("s_lo"), shi = zmm.i("s_hi16");
    b.vzero(slo);
    b.vzero(shi);
    for (int k = 0; k < 8; ++k) {
      V q = zmm.i("q"), lo = zmm.i("lo"), hi = zmm.i("hi");
      load_w(q, kQuants + 512 * c + 64 * k);  // lane r: dword k of row r's chunk c
      b.vand(lo, q, nib);
      b.vand(hi, q, hib);
      b.vdpbusd_b(slo, lo, act(kAQs + 32 * (2 * c) + 4 * k));
      b.vdpbusd_b(shi, hi, act(kAQs + 32 * (2 * c + 1) + 4 * k));
    }
    b.vsra_i32(shi, shi, 4);  // s_{2c+1}
    const V scales = c < 2 ? sc_lo : sc_hi;
    for (int h2 = 0; h2 < 2; ++h2) {
      const int k = (2 * c + h2) % 4;  // byte of sc_j, j = 2c + h2
      V sc = zmm.i("sc"), p = zmm.i("prod");
      if (k == 0) b.vand(sc, scales, low8);
      if (k == 1) b.vshuf_b(sc, scales, byte1);
      if (k == 2) b.vshuf_b(sc, scales, byte2);
      if (k == 3) b.vsrl_i32(sc, scales, 24);
      b.vmullo_i32(c == 0 && h2 == 0 ? isum : p, h2 ? shi : slo, sc);
      if (c > 0 || h2 > 0) b.vadd_i32(isum, isum, p);
    }
  }
  {
    V f = zmm.f("fisum");
    b.vcvt_i32_f32(f, isum);
    b.vfma(acc, f, d);  // acc = fma(float(isum), fl(d_w * d_a), acc)
  }
  b.addi(ap, ap, kABlock);
  b.end_for();

  V store = b.mask("store"), o = zmm.f("y");
  b.kfirst_n(store, a.nrows);
  b.vsub_f(o, acc, accmin);
  b.vstore_mk(Mem{a.y, {}, 1, 0}, o, store);
  return b.index();
}

}  // namespace cke::jit::gen
