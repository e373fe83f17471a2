// The q4_K decode (gemv) linear on the weights' q4_K_r16 copy at AVX2 and AVX-VNNI (and,
// with AVX-VNNI, its prefill tile: emit_prefill_tile below),
// contract linear.q4_Kx8.ggml's gemv granule: per row and super-block isum = sum_j sc_j * s_j,
// imin = sum_j m_j * bsum32_j, acc = fma(float(isum), fl(d_w * d_a), acc), accmin =
// fma(float(imin), fl(dmin_w * d_a), accmin); output acc - accmin. The AVX-512 tile of the
// same copy (gen_linear_q4_K_r16_gemv.cpp) explains the integer forms; here a tile is a
// 16-row group as two halves of 8 rows (one ymm each; the copy's 64-byte lines hold rows
// 0-7 in their first 32 bytes), run one after the other so that a half's values fit the 16
// ymm registers, and one token.
//
// Why: the row-major AVX2 tile (gen_linear_q4_K.cpp, 8 rows, transposing each super-block)
// ran 40 GMAC/s on one core from DRAM and L3 alike (AMD EPYC Zen 5 capped to AVX2):
// compute-bound, so Q4_K_M decode at --isa avx2 was 55 tok/s where the AVX-512 plan ran 86.
//
// s_j, AVX2: vpmaddubsw of the nibbles (unsigned) by the token's broadcast int8 dwords, the
// 8 vectors of a sub-block added in int16 lanes (16 products of at most 15 * 128 = 30720: no
// saturation), then vpmaddwd by sc_j in both words of each dword gives sc_j * s_j per row
// in int32 (< 2^22), exact. AVX-VNNI: s_j by vpdpbusd (the high nibble in place, q & 0xF0,
// its sum shifted right by 4), times sc_j by vpmulld. imin: vpmaddwd of the rows' (m_2i,
// m_2i+1) words by the token's (bsum32_2i, bsum32_2i+1) words. The 6-bit scales as in the
// AVX-512 tile, with and/or in place of vpternlogd.

#include <stdexcept>
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

std::vector<uint32_t> words_of(int k) {
  std::vector<uint32_t> c;
  for (uint32_t q = 0; q < 2; ++q) {
    auto b = [&](uint32_t d, uint32_t i) { return 4 * d + uint32_t(k) + i; };
    c.push_back(b(0, 0) | b(0, 1) << 8 | b(1, 0) << 16 | b(1, 1) << 24);
    c.push_back(b(2, 0) | b(2, 1) << 8 | b(3, 0) << 16 | b(3, 1) << 24);
    c.push_back(0x80808080u);
    c.push_back(0x80808080u);
  }
  return c;
}

ScalesMins unpack_scales_mins(Builder& b, const VecOf& ymm, const V hd[4], V nib) {
  ScalesMins o{ymm.i("sc_lo"), ymm.i("sc_hi"), ymm.i("mn_lo"), ymm.i("mn_hi")};
  const V m63 = ymm.splat("m63", 0x3F3F3F3Fu), m30 = ymm.splat("m30", 0x30303030u);
  V t = ymm.i("t");
  b.vand(o.sc_lo, hd[1], m63);
  b.vand(o.mn_lo, hd[2], m63);
  b.vsrl_i32(t, hd[1], 2);
  b.vand(t, t, m30);
  b.vand(o.sc_hi, hd[3], nib);
  b.vor(o.sc_hi, o.sc_hi, t);  // low nibble of bytes 8-11, bits 6-7 of bytes 0-3 at 4-5
  b.vsrl_i32(t, hd[2], 2);
  b.vand(t, t, m30);
  b.vsrl_i32(o.mn_hi, hd[3], 4);
  b.vand(o.mn_hi, o.mn_hi, nib);
  b.vor(o.mn_hi, o.mn_hi, t);  // high nibble of bytes 8-11, bits 6-7 of bytes 4-7 at 4-5
  return o;
}

namespace {

constexpr int kABlock = int(sizeof(block_q8_K));
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
constexpr int kQuants = 256;  // chunk c's 8 quant dwords of the 16 rows at kQuants + 512 c

int emit_tile(kir::Module& m, const std::string& name, bool vnni) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  auto table = [&](const char* n, const std::vector<uint32_t>& lanes) {
    V x = ymm.i(n);
    b.vconst32(x, lanes);
    return x;
  };
  const V nib = ymm.splat("nib", 0x0F0F0F0Fu), ones16 = ymm.splat("ones16", 0x00010001u);
  // Scale byte k as what multiplies s_j: both words (AVX2) or the dword (AVX-VNNI).
  V sc_ctl[4];
  for (int k = 0; k < 4; ++k)
    sc_ctl[k] = vnni ? table("sc_byte", dword_shuffle({k, -1, -1, -1}, 2))
                     : table("sc_words", dword_shuffle({k, -1, k, -1}, 2));
  const V pair01 = table("pair01", dword_shuffle({0, -1, 1, -1}, 2)),
          pair23 = table("pair23", dword_shuffle({2, -1, 3, -1}, 2));
  const V dlo = table("d_words", words_of(0)), dhi = table("dmin_words", words_of(2));
  const V pack = table("pack", {0, 1, 4, 5, 0, 1, 4, 5});  // the blocks' first qwords
  V frame = b.ptr("frame");
  b.ptr_align(frame, b.stack(192, "frame_raw"), 32);
  const int pair_at[4] = {0, 4, 16, 20};  // bsum32 pairs in the frame (vpackssdw order)

  V acc[2] = {ymm.f("acc_lo"), ymm.f("acc_hi")},
    accmin[2] = {ymm.f("accmin_lo"), ymm.f("accmin_hi")};
  for (int h = 0; h < 2; ++h) {
    b.vzero(acc[h]);
    b.vzero(accmin[h]);
  }
  V ap = b.ptr("ap"), wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.mov(ap, a.a);
  b.muli(end, a.n, kQ4KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ4KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);
  auto act = [&](int32_t disp) { return Mem{ap, {}, 1, disp}; };
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  if (stream_prefetch(1))  // the decode tile
    for (int l = 0; l < kQ4KR16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
  V da = ymm.f("da");
  b.vbcast_f32(da, act(0));
  {  // the token's bsum32 pairs as int16 words
    V bs = ymm.i("bsums"), bp = ymm.i("bsum_pairs");
    b.vload(bs, act(kABsums));
    b.vmadd_wd(bs, bs, ones16);  // bsum32_j = bsums[2j] + bsums[2j+1], exact
    b.vpackss_dw(bp, bs, bs);    // |bsum32_j| <= 4096: exact
    b.vstore(Mem{frame, {}, 1, 0}, bp);
  }
  for (int h = 0; h < 2; ++h) {
    V hd[4];
    for (int k = 0; k < 4; ++k) {
      hd[k] = ymm.i("head");  // lane r: dword k of row 8h + r's block head
      b.vload(hd[k], w(64 * k + 32 * h));
    }
    // fl(d_w * d_a), fl(dmin_w * d_a).
    V d = ymm.f("d"), dmin = ymm.f("dmin");
    for (int s = 0; s < 2; ++s) {
      V t = ymm.i("dwords"), f = ymm.f("dw");
      b.vshuf_b(t, hd[0], s ? dhi : dlo);
      b.vperm_d(t, t, pack);
      b.vcvt_f16_f32(f, b.view(t, 128, Cls::I));
      b.vmul_f(s ? dmin : d, f, da);
    }
    const ScalesMins sm = unpack_scales_mins(b, ymm, hd, nib);
    const V sc_lo = sm.sc_lo, sc_hi = sm.sc_hi, mn_lo = sm.mn_lo, mn_hi = sm.mn_hi;
    {  // imin, accmin
      V imin = ymm.i("imin");
      for (int i = 0; i < 4; ++i) {
        V mp = ymm.i("mn_pair"), bb = ymm.i("bsum_pair");
        b.vshuf_b(mp, i < 2 ? mn_lo : mn_hi, i % 2 ? pair23 : pair01);
        b.vbcast_f32(bb, Mem{frame, {}, 1, pair_at[i]});
        if (i == 0) {
          b.vmadd_wd(imin, mp, bb);
        } else {
          b.vmadd_wd(mp, mp, bb);
          b.vadd_i32(imin, imin, mp);
        }
      }
      V f = ymm.f("fimin");
      b.vcvt_i32_f32(f, imin);
      b.vfma(accmin[h], f, dmin);  // accmin = fma(float(imin), fl(dmin_w * d_a), accmin)
    }
    V isum = ymm.i("isum");
    const V hib = vnni ? ymm.splat("hib", 0xF0F0F0F0u) : V{};
    for (int c = 0; c < 4; ++c) {
      V s[2] = {ymm.i("s_lo"), ymm.i("s_hi")};  // sub-blocks 2c, 2c + 1
      if (vnni) {
        b.vzero(s[0]);
        b.vzero(s[1]);
      }
      for (int k = 0; k < 8; ++k) {
        V q = ymm.i("q");
        b.vload(q, w(kQuants + 512 * c + 64 * k + 32 * h));  // lane r: dword k, row 8h + r
        for (int u = 0; u < 2; ++u) {
          V n = ymm.i("nibbles"), ab = ymm.i("a_dword");
          if (u == 0) {
            b.vand(n, q, nib);
          } else if (vnni) {
            b.vand(n, q, hib);  // 16 * the high nibble
          } else {
            b.vsrl_i16(n, q, 4);
            b.vand(n, n, nib);
          }
          b.vbcast_f32(ab, act(kAQs + 32 * (2 * c + u) + 4 * k));
          if (vnni) {
            b.vdpbusd(s[u], n, ab);
          } else if (k == 0) {
            b.vmaddubs_w(s[u], n, ab);
          } else {
            V p = ymm.i("pairs");
            b.vmaddubs_w(p, n, ab);
            b.vadd_i16(s[u], s[u], p);
          }
        }
      }
      if (vnni) b.vsra_i32(s[1], s[1], 4);
      for (int u = 0; u < 2; ++u) {
        const int j = 2 * c + u;
        V sc = ymm.i("sc");
        b.vshuf_b(sc, j < 4 ? sc_lo : sc_hi, sc_ctl[j % 4]);
        V p = j == 0 ? isum : ymm.i("prod");
        if (vnni)
          b.vmullo_i32(p, s[u], sc);
        else
          b.vmadd_wd(p, s[u], sc);  // sc_j * s_j, exact
        if (j > 0) b.vadd_i32(isum, isum, p);
      }
    }
    V f = ymm.f("fisum");
    b.vcvt_i32_f32(f, isum);
    b.vfma(acc[h], f, d);  // acc = fma(float(isum), fl(d_w * d_a), acc)
  }
  b.addi(ap, ap, kABlock);
  b.end_for();

  V o[2] = {ymm.f("y_lo"), ymm.f("y_hi")};
  for (int h = 0; h < 2; ++h) b.vsub_f(o[h], acc[h], accmin[h]);
  store_rows16_avx2(b, a.y, a.nrows, o[0], o[1], Mem{frame, {}, 1, 64});
  return b.index();
}

// The prefill tile (AVX-VNNI; at plain AVX2 the same tile with vpmaddubsw sums measured no
// faster than the x8 8x8 tile on the file's blocks: the map's note): 16 rows x `tokens`
// (1..4) tokens; gemm: the contract's gemm granule
// (one FMA pair per pair of sub-blocks: acc = fma(float(isum_c), fl(d_w * d_a), acc) with
// isum_c = sc_2c s_2c + sc_2c+1 s_2c+1, accmin likewise with imin_c = m_2c bsum32_2c +
// m_2c+1 bsum32_2c+1, c = 0..3 in order), else the gemv's (one pair per super-block: the
// tokens of T % 4). Per half and super-block the scales, mins and their word pairs are made
// once for all tokens and kept in the frame with the tokens' accumulators; a token's live
// registers are its two sub-block sums, so four tokens fit the 16 ymm.
int emit_prefill_tile(kir::Module& m, const std::string& name, int tokens, bool gemm) {
  if (tokens < 1 || tokens > 4) throw std::logic_error("gen: the AVX2 q4_K_r16 tile: 1..4 tokens");
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  // Frame slots of 32 bytes.
  constexpr int kCtl = 0;        // sc_ctl[4], pair01, pair23, dlo, dhi, pack
  constexpr int kBs = 9;         // token t's bsum32 as int16 words (vpackssdw order)
  constexpr int kD = kBs + 4;    // fl(d_w * d_a) of token t (this half)
  constexpr int kDm = kD + 4;    // fl(dmin_w * d_a)
  constexpr int kScj = kDm + 4;  // sc_j of the half's rows, as s_j's multiplier
  constexpr int kMp = kScj + 8;  // (m_2i, m_2i+1) words
  constexpr int kAcc = kMp + 4;  // acc of half h, token t at kAcc + 4h + t
  constexpr int kAccMin = kAcc + 8;
  constexpr int kIsum = kAccMin + 8;  // the gemv's running isum of token t
  constexpr int kOut = kIsum + 4, kSlots = kOut + 1;
  const YmmSlots slot(b, kSlots);
  for (int k = 0; k < 4; ++k)
    slot.keep(kCtl + k, dword_shuffle({k, -1, -1, -1}, 2));  // sc_j as a dword
  slot.keep(kCtl + 4, dword_shuffle({0, -1, 1, -1}, 2));
  slot.keep(kCtl + 5, dword_shuffle({2, -1, 3, -1}, 2));
  slot.keep(kCtl + 6, words_of(0));
  slot.keep(kCtl + 7, words_of(2));
  slot.keep(kCtl + 8, {0, 1, 4, 5, 0, 1, 4, 5});
  {
    V z = ymm.f("zero");
    b.vzero(z);
    for (int s = kAcc; s < kAccMin + 8; ++s) b.vstore(slot(s), z);
  }
  const int pair_at[4] = {0, 4, 16, 20};  // bsum32 pairs in a kBs slot
  // frame[acc] = fma(float(sum), frame[scale], frame[acc]): the accumulators live in the frame.
  auto fma_into = [&](int acc, V sum, int scale) {
    V f = ymm.f("fsum"), ac = ymm.f("acc"), d = ymm.f("d");
    b.vcvt_i32_f32(f, sum);
    b.vload(ac, slot(acc));
    b.vload(d, slot(scale));
    b.vfma(ac, f, d);
    b.vstore(slot(acc), ac);
  };

  TokenRows tr = token_rows(b, a.a, a.as, tokens);
  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ4KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ4KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  if (stream_prefetch(tokens))
    for (int l = 0; l < kQ4KR16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
  {
    const V ones16 = ymm.splat("ones16", 0x00010001u);
    for (int t = 0; t < tokens; ++t) {  // the tokens' bsum32 pairs as int16 words
      V bs = ymm.i("bsums"), bp = ymm.i("bsum_pairs");
      b.vload(bs, tr.at(t, kABsums));
      b.vmadd_wd(bs, bs, ones16);  // bsum32_j = bsums[2j] + bsums[2j+1], exact
      b.vpackss_dw(bp, bs, bs);    // |bsum32_j| <= 4096: exact
      b.vstore(slot(kBs + t), bp);
    }
  }
  for (int h = 0; h < 2; ++h) {
    {
      V hd[4];
      for (int k = 0; k < 4; ++k) {
        hd[k] = ymm.i("head");  // lane r: dword k of row 8h + r's block head
        b.vload(hd[k], w(64 * k + 32 * h));
      }
      // fl(d_w * d_a), fl(dmin_w * d_a) of each token.
      for (int s = 0; s < 2; ++s) {
        V t = ymm.i("dwords"), f = ymm.f("dw");
        b.vshuf_b(t, hd[0], slot.table(kCtl + 6 + s));
        b.vperm_d(t, t, slot.table(kCtl + 8));
        b.vcvt_f16_f32(f, b.view(t, 128, Cls::I));
        for (int k = 0; k < tokens; ++k) {
          V da = ymm.f("da"), d = ymm.f("d");
          b.vbcast_f32(da, tr.at(k, 0));
          b.vmul_f(d, f, da);
          b.vstore(slot((s ? kDm : kD) + k), d);
        }
      }
      // Scales and mins, then sc_j and the min pairs.
      const V nib = ymm.splat("nib", 0x0F0F0F0Fu);
      const ScalesMins sm = unpack_scales_mins(b, ymm, hd, nib);
      const V sc_lo = sm.sc_lo, sc_hi = sm.sc_hi, mn_lo = sm.mn_lo, mn_hi = sm.mn_hi;
      for (int j = 0; j < 8; ++j) {
        V sc = ymm.i("sc");
        b.vshuf_b(sc, j < 4 ? sc_lo : sc_hi, slot.table(kCtl + j % 4));
        b.vstore(slot(kScj + j), sc);
      }
      for (int i = 0; i < 4; ++i) {
        V mp = ymm.i("mn_pair");
        b.vshuf_b(mp, i < 2 ? mn_lo : mn_hi, slot.table(kCtl + 4 + i % 2));
        b.vstore(slot(kMp + i), mp);
      }
    }
    // The min term: per pair (gemm) or summed over the super-block (gemv).
    for (int k = 0; k < tokens; ++k) {
      V imin = ymm.i("imin");
      for (int i = 0; i < 4; ++i) {
        V mp = ymm.i("mn_pair"), bb = ymm.i("bsum_pair");
        b.vload(mp, slot(kMp + i));
        b.vbcast_f32(bb, slot(kBs + k, pair_at[i]));
        if (gemm || i == 0) {
          b.vmadd_wd(imin, mp, bb);
        } else {
          b.vmadd_wd(mp, mp, bb);
          b.vadd_i32(imin, imin, mp);
        }
        // accmin = fma(float(imin), fl(dmin_w * d_a), accmin)
        if (gemm || i == 3) fma_into(kAccMin + 4 * h + k, imin, kDm + k);
      }
    }
    const V nib = ymm.splat("nib", 0x0F0F0F0Fu);
    const V hib = ymm.splat("hib", 0xF0F0F0F0u);
    for (int c = 0; c < 4; ++c) {
      V s[4][2];
      for (int k = 0; k < tokens; ++k)
        for (int u = 0; u < 2; ++u) {
          s[k][u] = ymm.i(u ? "s_hi" : "s_lo");  // sub-blocks 2c, 2c + 1
          b.vzero(s[k][u]);
        }
      for (int q8 = 0; q8 < 8; ++q8) {
        V q = ymm.i("q"), n[2] = {ymm.i("n_lo"), ymm.i("n_hi")};
        b.vload(q, w(kQuants + 512 * c + 64 * q8 + 32 * h));  // lane r: dword q8, row 8h + r
        b.vand(n[0], q, nib);
        b.vand(n[1], q, hib);  // 16 * the high nibble
        for (int k = 0; k < tokens; ++k)
          for (int u = 0; u < 2; ++u) {
            V ab = ymm.i("a_dword");
            b.vbcast_f32(ab, tr.at(k, kAQs + 32 * (2 * c + u) + 4 * q8));
            b.vdpbusd(s[k][u], n[u], ab);
          }
      }
      for (int k = 0; k < tokens; ++k) {
        b.vsra_i32(s[k][1], s[k][1], 4);  // exact: the sum of 16 * q products
        V isum = ymm.i("isum");
        for (int u = 0; u < 2; ++u) {
          V sc = ymm.i("sc"), p = u == 0 ? isum : ymm.i("prod");
          b.vload(sc, slot(kScj + 2 * c + u));
          b.vmullo_i32(p, s[k][u], sc);  // sc_j * s_j, exact
          if (u > 0) b.vadd_i32(isum, isum, p);
        }
        if (!gemm) {  // the gemv's isum runs over the super-block
          if (c > 0) {
            V run = ymm.i("isum_run");
            b.vload(run, slot(kIsum + k));
            b.vadd_i32(isum, isum, run);
          }
          if (c < 3) {
            b.vstore(slot(kIsum + k), isum);
            continue;
          }
        }
        fma_into(kAcc + 4 * h + k, isum, kD + k);  // acc = fma(float(isum), fl(d_w * d_a), acc)
      }
    }
  }
  b.addi(tr.base, tr.base, kABlock);
  b.end_for();

  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int k = 0; k < tokens; ++k) {
    if (k > 0) b.ptr_add(yt, yt, a.ys, 1);
    V o[2];
    for (int h = 0; h < 2; ++h) {
      V ac = ymm.f("acc"), am = ymm.f("accmin");
      o[h] = ymm.f("y");
      b.vload(ac, slot(kAcc + 4 * h + k));
      b.vload(am, slot(kAccMin + 4 * h + k));
      b.vsub_f(o[h], ac, am);
    }
    store_rows16_avx2(b, yt, a.nrows, o[0], o[1], slot(kOut));
  }
  return b.index();
}

bool build(const char* gen, bool vnni, const GeneratorParams& p, kir::Module* m, std::string* err) {
  // tokens 1: the decode gemv tile; 4 (AVX-VNNI): the prefill tiles (the gemm for groups
  // of 4, the gemv's granule for the T % 4 rest); 8: the x8 tile on each 8-row half of the
  // copy (gen_linear_q4_K.cpp).
  int rows = 16, tokens = 1;
  if (!int_params(p, gen, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (tokens == 8) return build_linear_q4_K_r16_gemm_avx2(vnni, p, m, err);
  return build_r16_avx2(
      gen, vnni,
      "ggml's repacked q4_K_8x8 gemv / gemm arithmetic of contract linear.q4_Kx8.ggml\non the "
      "q4_K_r16 weight copy, 8 rows a ymm (activations: Q8_K rows from the "
      "plan's act_quant step)",
      {kQK_K, int(sizeof(block_q4_K)), kABlock}, vnni ? 4 : 1,
      [&](kir::Module& mod, const std::string& n, bool v, int k) {
        if (tokens == 1) return emit_tile(mod, n, v);
        return emit_prefill_tile(mod, n, k, k == 4);
      },
      p, m, err);
}

}  // namespace

bool build_linear_q4_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_K_r16__avx2", false, p, m, err);
}
bool build_linear_q4_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_K_r16__avxvnni", true, p, m, err);
}

}  // namespace cke::jit::gen
