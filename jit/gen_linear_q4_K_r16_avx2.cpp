// The q4_K decode (gemv) linear on the weights' q4_K_r16 copy at AVX2 and AVX-VNNI,
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

#include <vector>

#include "jit/gen_linear_q4_K.h"
#include "jit/gen_rows16.h"
#include "jit/gen_tile.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

constexpr int kABlock = int(sizeof(block_q8_K));
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
constexpr int kQuants = 256;  // chunk c's 8 quant dwords of the 16 rows at kQuants + 512 c

// The low (k = 0) or high (k = 2) word of the 4 dwords of each 128-bit block into its
// first 8 bytes.
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

int emit_tile(kir::Module& m, const std::string& name, bool vnni) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  auto vi = [&](const char* n) { return b.vec(256, Cls::I, n); };
  auto vf = [&](const char* n) { return b.vec(256, Cls::F, n); };
  auto splat = [&](const char* n, uint32_t v) {
    V x = vi(n);
    b.vsplat32(x, v);
    return x;
  };
  auto table = [&](const char* n, const std::vector<uint32_t>& lanes) {
    V x = vi(n);
    b.vconst32(x, lanes);
    return x;
  };
  const V nib = splat("nib", 0x0F0F0F0Fu), ones16 = splat("ones16", 0x00010001u);
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

  V acc[2] = {vf("acc_lo"), vf("acc_hi")}, accmin[2] = {vf("accmin_lo"), vf("accmin_hi")};
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
  for (int l = 0; l < kQ4KR16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
  V da = vf("da");
  b.vbcast_f32(da, act(0));
  {  // the token's bsum32 pairs as int16 words
    V bs = vi("bsums"), bp = vi("bsum_pairs");
    b.vload(bs, act(kABsums));
    b.vmadd_wd(bs, bs, ones16);  // bsum32_j = bsums[2j] + bsums[2j+1], exact
    b.vpackss_dw(bp, bs, bs);    // |bsum32_j| <= 4096: exact
    b.vstore(Mem{frame, {}, 1, 0}, bp);
  }
  for (int h = 0; h < 2; ++h) {
    V hd[4];
    for (int k = 0; k < 4; ++k) {
      hd[k] = vi("head");  // lane r: dword k of row 8h + r's block head
      b.vload(hd[k], w(64 * k + 32 * h));
    }
    // fl(d_w * d_a), fl(dmin_w * d_a).
    V d = vf("d"), dmin = vf("dmin");
    for (int s = 0; s < 2; ++s) {
      V t = vi("dwords"), f = vf("dw");
      b.vshuf_b(t, hd[0], s ? dhi : dlo);
      b.vperm_d(t, t, pack);
      b.vcvt_f16_f32(f, b.view(t, 128, Cls::I));
      b.vmul_f(s ? dmin : d, f, da);
    }
    // Scales and mins, 6 bits a byte (see the AVX-512 tile).
    V sc_lo = vi("sc_lo"), sc_hi = vi("sc_hi"), mn_lo = vi("mn_lo"), mn_hi = vi("mn_hi");
    {
      const V m63 = splat("m63", 0x3F3F3F3Fu), m30 = splat("m30", 0x30303030u);
      V t = vi("t");
      b.vand(sc_lo, hd[1], m63);
      b.vand(mn_lo, hd[2], m63);
      b.vsrl_i32(t, hd[1], 2);
      b.vand(t, t, m30);
      b.vand(sc_hi, hd[3], nib);
      b.vor(sc_hi, sc_hi, t);  // low nibble of bytes 8-11, bits 6-7 of bytes 0-3 at 4-5
      b.vsrl_i32(t, hd[2], 2);
      b.vand(t, t, m30);
      b.vsrl_i32(mn_hi, hd[3], 4);
      b.vand(mn_hi, mn_hi, nib);
      b.vor(mn_hi, mn_hi, t);  // high nibble of bytes 8-11, bits 6-7 of bytes 4-7 at 4-5
    }
    {  // imin, accmin
      V imin = vi("imin");
      for (int i = 0; i < 4; ++i) {
        V mp = vi("mn_pair"), bb = vi("bsum_pair");
        b.vshuf_b(mp, i < 2 ? mn_lo : mn_hi, i % 2 ? pair23 : pair01);
        b.vbcast_f32(bb, Mem{frame, {}, 1, pair_at[i]});
        if (i == 0) {
          b.vmadd_wd(imin, mp, bb);
        } else {
          b.vmadd_wd(mp, mp, bb);
          b.vadd_i32(imin, imin, mp);
        }
      }
      V f = vf("fimin");
      b.vcvt_i32_f32(f, imin);
      b.vfma(accmin[h], f, dmin);  // accmin = fma(float(imin), fl(dmin_w * d_a), accmin)
    }
    V isum = vi("isum");
    const V hib = vnni ? splat("hib", 0xF0F0F0F0u) : V{};
    for (int c = 0; c < 4; ++c) {
      V s[2] = {vi("s_lo"), vi("s_hi")};  // sub-blocks 2c, 2c + 1
      if (vnni) {
        b.vzero(s[0]);
        b.vzero(s[1]);
      }
      for (int k = 0; k < 8; ++k) {
        V q = vi("q");
        b.vload(q, w(kQuants + 512 * c + 64 * k + 32 * h));  // lane r: dword k, row 8h + r
        for (int u = 0; u < 2; ++u) {
          V n = vi("nibbles"), ab = vi("a_dword");
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
            V p = vi("pairs");
            b.vmaddubs_w(p, n, ab);
            b.vadd_i16(s[u], s[u], p);
          }
        }
      }
      if (vnni) b.vsra_i32(s[1], s[1], 4);
      for (int u = 0; u < 2; ++u) {
        const int j = 2 * c + u;
        V sc = vi("sc");
        b.vshuf_b(sc, j < 4 ? sc_lo : sc_hi, sc_ctl[j % 4]);
        V p = j == 0 ? isum : vi("prod");
        if (vnni)
          b.vmullo_i32(p, s[u], sc);
        else
          b.vmadd_wd(p, s[u], sc);  // sc_j * s_j, exact
        if (j > 0) b.vadd_i32(isum, isum, p);
      }
    }
    V f = vf("fisum");
    b.vcvt_i32_f32(f, isum);
    b.vfma(acc[h], f, d);  // acc = fma(float(isum), fl(d_w * d_a), acc)
  }
  b.addi(ap, ap, kABlock);
  b.end_for();

  V o[2] = {vf("y_lo"), vf("y_hi")};
  for (int h = 0; h < 2; ++h) b.vsub_f(o[h], acc[h], accmin[h]);
  store_rows16_avx2(b, a.y, a.nrows, o[0], o[1], Mem{frame, {}, 1, 64});
  return b.index();
}

bool build(const char* gen, bool vnni, const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_r16_avx2(
      gen, vnni,
      "ggml's repacked q4_K_8x8 gemv arithmetic of contract linear.q4_Kx8.ggml\non the "
      "q4_K_r16 weight copy, 8 rows a ymm (activations: Q8_K rows from the "
      "plan's act_quant step)",
      {kQK_K, int(sizeof(block_q4_K)), kABlock}, 1,
      [](kir::Module& mod, const std::string& n, bool v, int) { return emit_tile(mod, n, v); }, p,
      m, err);
}

}  // namespace

bool build_linear_q4_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_K_r16__avx2", false, p, m, err);
}
bool build_linear_q4_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_K_r16__avxvnni", true, p, m, err);
}

}  // namespace cke::jit::gen
