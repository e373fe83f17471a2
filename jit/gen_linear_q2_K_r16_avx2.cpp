// The q2_K decode (gemv) linear on the weights' q2_K_r16 copy at AVX2 and AVX-VNNI, contract
// linear.q2_Kx8.ggml's gemv granule: per row and super-block isum = sum over the 16
// sub-blocks j of sc_j * s_j (s_j the dot of its 16 2-bit quants, 0..3, with the token's
// int8 activations), imin = sum_j m_j * bsums[j], acc = fma(float(isum), fl(d_w * d_a), acc),
// accmin = fma(float(imin), fl(dmin_w * d_a), accmin); output acc - accmin. A tile is a
// 16-row group as two halves of 8 rows (one ymm each: the copy's 64-byte lines hold rows 0-7
// in their first 32 bytes), one token. gen_linear_q4_K.cpp ("Q2_K") explains the sub-block
// order; layouts.h the copy.
//
// Integer forms, all exact: the quants of dword d of 128-element half hq at bits 2g are
// elements 128 hq + 32 g + 4d .. +3 of sub-block 8 hq + 2g + (d >= 4), so a sub-block's s_j
// is 4 products of (dword >> 2g) & 3 by the token's broadcast activation dwords. AVX2:
// vpmaddubsw pair sums added in int16 (16 products of at most 3 * 128 per word pair), then
// vpmaddwd by sc_j in both words; AVX-VNNI: vpdpbusd into int32, then vpdpwssd by sc_j in the
// low word (|s_j| <= 6144, an int16). imin: vpmaddwd of the rows' (m_2i, m_2i+1) words by the
// token's (bsums[2i], bsums[2i+1]) dword, 8 of them. |isum| < 2^21, |imin| < 2^19.
//
// Why: the row-major AVX2 tile (gen_linear_q4_K.cpp, 8 rows) transposes every super-block of
// its rows for one token, about as much work as the dot products. Prefill (tokens 8) is that
// tile's arithmetic on the copy: build_linear_q2_K_r16_gemm_avx2, no transposes at all
// (a candidate: its map says why).

#include <stdexcept>
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
// The copy's super-block (layouts.h): 5 head dwords (4 of scale bytes, d | dmin << 16) at
// 64k, then dword d of half hq's quant bytes at kQuants + 512 hq + 64 d.
constexpr int kHeadDm = 4, kQuants = 320;
static_assert(kQuants + 2 * 512 == kQ2KR16Block);

// Frame slots of 32 bytes: the vpshufb / vpermd tables (kept there: 16 ymm registers hold a
// half's sums and accumulators), the store scratch.
constexpr int kPair01 = 0, kPair23 = 1, kDWords = 2, kDminWords = 3, kPack = 4, kScCtl = 5,
              kOut = kScCtl + 4, kSlots = kOut + 1;

int emit_tile(kir::Module& m, const std::string& name, bool vnni, int tokens) {
  if (tokens != 1) throw std::logic_error("gen: the AVX2 q2_K_r16 tile takes 1 token");
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  const YmmSlots slot(b, kSlots);
  slot.keep(kPair01, dword_shuffle({0, -1, 1, -1}, 2));  // bytes 0, 1 as the dword's words
  slot.keep(kPair23, dword_shuffle({2, -1, 3, -1}, 2));
  slot.keep(kDWords, words_of(0));
  slot.keep(kDminWords, words_of(2));
  slot.keep(kPack, {0, 1, 4, 5, 0, 1, 4, 5});  // the blocks' first qwords
  const V nib = ymm.splat("nib", 0x0F0F0F0Fu), m03 = ymm.splat("m03", 0x03030303u);
  // Scale byte k as what multiplies s_j: both words (AVX2) or the low word (AVX-VNNI).
  for (int k = 0; k < 4; ++k)
    slot.keep(kScCtl + k, dword_shuffle(vnni ? std::initializer_list<int>{k, -1, -1, -1}
                                             : std::initializer_list<int>{k, -1, k, -1},
                                        2));

  V acc[2] = {ymm.f("acc_lo"), ymm.f("acc_hi")},
    accmin[2] = {ymm.f("accmin_lo"), ymm.f("accmin_hi")};
  for (int h = 0; h < 2; ++h) {
    b.vzero(acc[h]);
    b.vzero(accmin[h]);
  }
  V ap = b.ptr("ap"), wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.mov(ap, a.a);
  b.muli(end, a.n, kQ2KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ2KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);
  auto act = [&](int32_t disp) { return Mem{ap, {}, 1, disp}; };
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  if (stream_prefetch(1))  // the decode tile
    for (int l = 0; l < kQ2KR16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
  for (int h = 0; h < 2; ++h) {
    // fl(d_w * d_a), fl(dmin_w * d_a) of the half's rows.
    V d = ymm.f("d"), dmin = ymm.f("dmin");
    {
      V hd = ymm.i("head_dm"), da = ymm.f("da");
      b.vload(hd, w(64 * kHeadDm + 32 * h));  // lane r: d | dmin << 16 of row 8h + r
      b.vbcast_f32(da, act(0));
      for (int s = 0; s < 2; ++s) {
        V t = ymm.i("dwords"), f = ymm.f("dw");
        b.vshuf_b(t, hd, slot.table(s ? kDminWords : kDWords));
        b.vperm_d(t, t, slot.table(kPack));
        b.vcvt_f16_f32(f, b.view(t, 128, Cls::I));
        b.vmul_f(s ? dmin : d, f, da);
      }
    }
    // The scale bytes: lane r of sc[k] / mn[k] = sc_j / m_j, j = 4k .. 4k+3, of row 8h + r.
    V sc[4];
    {
      V imin = ymm.i("imin");
      for (int k = 0; k < 4; ++k) {
        V hd = ymm.i("head"), mn = ymm.i("mins");
        b.vload(hd, w(64 * k + 32 * h));
        sc[k] = ymm.i("scales");
        b.vand(sc[k], hd, nib);
        b.vsrl_i32(mn, hd, 4);
        b.vand(mn, mn, nib);
        for (int i = 0; i < 2; ++i) {  // (m_4k+2i, m_4k+2i+1) . (bsums[4k+2i], bsums[4k+2i+1])
          V mp = ymm.i("mn_pair"), bb = ymm.i("bsum_pair");
          b.vshuf_b(mp, mn, slot.table(i ? kPair23 : kPair01));
          b.vbcast_f32(bb, act(kABsums + 4 * (2 * k + i)));
          if (k == 0 && i == 0) {
            b.vmadd_wd(imin, mp, bb);
          } else {
            b.vmadd_wd(mp, mp, bb);
            b.vadd_i32(imin, imin, mp);
          }
        }
      }
      V f = ymm.f("fimin");
      b.vcvt_i32_f32(f, imin);
      b.vfma(accmin[h], f, dmin);  // accmin = fma(float(imin), fl(dmin_w * d_a), accmin)
    }
    V isum = ymm.i("isum");
    for (int hq = 0; hq < 2; ++hq)
      for (int u = 0; u < 2; ++u) {  // sub-blocks 8hq + 2g + u, g = 0..3: dwords 4u .. 4u+3
        V s[4];
        for (int g = 0; g < 4; ++g) {
          s[g] = ymm.i("s");
          if (vnni) b.vzero(s[g]);
        }
        for (int d = 4 * u; d < 4 * u + 4; ++d) {
          V q = ymm.i("q");
          b.vload(q, w(kQuants + 512 * hq + 64 * d + 32 * h));  // lane r: dword d, row 8h + r
          for (int g = 0; g < 4; ++g) {
            V x = ymm.i("x"), ab = ymm.i("a_dword");
            if (g > 0) {
              b.vsrl_i16(x, q, 2 * g);
              b.vand(x, x, m03);
            } else {
              b.vand(x, q, m03);
            }
            b.vbcast_f32(ab, act(kAQs + 128 * hq + 32 * g + 4 * d));
            if (vnni) {
              b.vdpbusd(s[g], x, ab);
            } else if (d == 4 * u) {
              b.vmaddubs_w(s[g], x, ab);
            } else {
              V p = ymm.i("pairs");
              b.vmaddubs_w(p, x, ab);
              b.vadd_i16(s[g], s[g], p);
            }
          }
        }
        for (int g = 0; g < 4; ++g) {
          const int j = 8 * hq + 2 * g + u;
          V scj = ymm.i("sc_j");
          b.vshuf_b(scj, sc[j / 4], slot.table(kScCtl + j % 4));
          add_scaled_dot_avx2(b, isum, hq == 0 && u == 0 && g == 0, s[g], scj, vnni);
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
  store_rows16_avx2(b, a.y, a.nrows, o[0], o[1], slot(kOut));
  return b.index();
}

bool build(const char* gen, bool vnni, const GeneratorParams& p, kir::Module* m, std::string* err) {
  if (auto t = p.find("tokens"); t != p.end() && t->second != "1")
    return build_linear_q2_K_r16_gemm_avx2(vnni, p, m, err);
  return build_r16_avx2(
      gen, vnni,
      "ggml's repacked q2_K_8x8 gemv arithmetic of contract linear.q2_Kx8.ggml\non the "
      "q2_K_r16 weight copy, 8 rows a ymm (activations: Q8_K rows from the "
      "plan's act_quant step)",
      {kQK_K, int(sizeof(block_q2_K)), kABlock}, 1, emit_tile, p, m, err);
}

}  // namespace

bool build_linear_q2_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q2_K_r16__avx2", false, p, m, err);
}
bool build_linear_q2_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q2_K_r16__avxvnni", true, p, m, err);
}

}  // namespace cke::jit::gen
