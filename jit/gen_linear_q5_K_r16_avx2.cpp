// The q5_K linear on the weights' q5_K_r16 copy at AVX2 (decode: one token a tile; prefill:
// up to 4, each computed as alone), contract linear.q5_K.ggml:
// ggml_vec_dot_q5_K_q8_K's 8 int32 lanes per output (lane l = sum over the 8 chunks c of
// sc[c] * dot(elements 32c + 4l .. +3)), one FMA per lane and super-block by fl(d_a * d_w),
// the scalar min term summs = fma(fl(-d_a * dmin_w), float(sum_j m_j * bsum32_j), summs),
// and hsum8(acc) + summs at the end. The AVX-512 tiles of the copy (gen_linear_q5_K_r16.cpp)
// explain the layout and the integer forms; here a 16-row group runs as two halves of 8 rows
// (one ymm each: the copy's 64-byte lines hold rows 0-7 in their first 32 bytes), the lane
// accumulators, the chunk scales and the min pairs in a frame buffer (16 ymm registers).
//
// Products: the 5-bit quant q (0..31: nibble | qh bit << 4, by vpand + vpor);
// vpmaddubsw(q, the token's broadcast dword) gives the two pair sums of a lane's 4 products
// (|2 * 31 * 128| < 2^15: exact), vpmaddwd by the row's scale in both words adds scale * dot
// in int32, exact. Heads: the q4_K_r16 AVX2 unpacking (unpack_scales_mins). The same tiles
// with AVX-VNNI's vpdpbusd (then vpdpwssd by the scale in the low word) measured no faster
// on the one host that has it (the map's note), so there is no AVX-VNNI variant.
//
// Why: the row-major AVX2 tile (gen_linear_kquant.cpp, one row, one chunk per ymm and the
// lane shuffles and the min term's horizontal sums per row and super-block) is bound by its
// instructions (22 GMAC/s on one core of an AMD EPYC Zen 5 capped to AVX2).

#include <stdexcept>
#include <vector>

#include "jit/gen_linear_kquant.h"
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

constexpr int kLanes = 8;
constexpr int kABlock = int(sizeof(block_q8_K));
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
// The copy's super-block (layouts.h): 4 head dwords, then per lane 4 qs dwords and the qh one.
constexpr int kQuants = 256, kLaneBytes = 320, kQh = 256;
static_assert(kQuants + kLanes * kLaneBytes == kQ5KR16Block);

// Frame slots of 32 bytes: the vpshufb / vpermd tables (made once: a table costs 9
// instructions to make, 1 to load), the 8 chunk scales S[c] and the 4 min pairs of the half
// being computed, each token's bsum32 pairs (int16 words, vpackssdw order) and fl(d_a * d_w) of
// the half, the lane accumulators (half h, lane l, token t), summs (half h, token t), the
// store scratch.
constexpr int kMaxTokens = 4;
constexpr int kPack = 0, kDWords = 1, kDminWords = 2, kScCtl = 3, kPairCtl = 7, kS = 9,
              kMp = kS + 8, kBs = kMp + 4, kD = kBs + kMaxTokens, kAcc = kD + kMaxTokens;
constexpr int acc_slot(int h, int l, int t) {
  return kAcc + (8 * h + l) * kMaxTokens + t;
}
constexpr int kSumms = acc_slot(1, 7, kMaxTokens - 1) + 1;
constexpr int summs_slot(int h, int t) {
  return kSumms + h * kMaxTokens + t;
}
constexpr int kOut = summs_slot(1, kMaxTokens - 1) + 1, kSlots = kOut + 1;

int emit_tile(kir::Module& m, const std::string& name, bool /*vnni*/, int tokens) {
  if (tokens < 1 || tokens > kMaxTokens)
    throw std::logic_error("gen: the AVX2 q5_K_r16 tile takes 1..4 tokens");
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  const YmmSlots slot(b, kSlots);
  {
    V z = ymm.f("zero");
    b.vzero(z);
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < tokens; ++t) {
        for (int l = 0; l < kLanes; ++l) b.vstore(slot(acc_slot(h, l, t)), z);
        b.vstore(slot(summs_slot(h, t)), z);
      }
  }
  slot.keep(kPack, {0, 1, 4, 5, 0, 1, 4, 5});  // the blocks' first qwords
  slot.keep(kDWords, words_of(0));
  slot.keep(kDminWords, words_of(2));
  // sc[k] in both words (what multiplies a lane's pair sums); the rows' (m_2i, m_2i+1) as
  // the words of each dword.
  for (int k = 0; k < 4; ++k) slot.keep(kScCtl + k, dword_shuffle({k, -1, k, -1}, 2));
  slot.keep(kPairCtl, dword_shuffle({0, -1, 1, -1}, 2));
  slot.keep(kPairCtl + 1, dword_shuffle({2, -1, 3, -1}, 2));
  const int pair_at[4] = {0, 4, 16, 20};  // bsum32 pairs in a kBs slot

  TokenRows tr = token_rows(b, a.a, a.as, tokens);
  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ5KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ5KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  if (stream_prefetch(tokens))
    for (int l = 0; l < kQ5KR16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
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
    V dminw = ymm.f("dminw");
    {
      V hd[4];
      for (int k = 0; k < 4; ++k) {
        hd[k] = ymm.i("head");  // lane r: dword k of row 8h + r's block head
        b.vload(hd[k], w(64 * k + 32 * h));
      }
      // d_w, dmin_w of the half's rows; fl(d_a * d_w) of each token.
      V dw = ymm.f("dw");
      for (int s = 0; s < 2; ++s) {
        V t = ymm.i("dwords");
        b.vshuf_b(t, hd[0], slot.table(s ? kDminWords : kDWords));
        b.vperm_d(t, t, slot.table(kPack));
        b.vcvt_f16_f32(s ? dminw : dw, b.view(t, 128, Cls::I));
      }
      for (int t = 0; t < tokens; ++t) {
        V da = ymm.f("da"), d = ymm.f("d");
        b.vbcast_f32(da, tr.at(t, 0));
        b.vmul_f(d, dw, da);
        b.vstore(slot(kD + t), d);
      }
      const ScalesMins sm = unpack_scales_mins(b, ymm, hd, ymm.splat("nib", 0x0F0F0F0Fu));
      for (int c = 0; c < 8; ++c) {  // S[c]: sc[c] as its products' multiplier
        V s = ymm.i("S");
        b.vshuf_b(s, c < 4 ? sm.sc_lo : sm.sc_hi, slot.table(kScCtl + c % 4));
        b.vstore(slot(kS + c), s);
      }
      for (int i = 0; i < 4; ++i) {  // the min pairs
        V mp = ymm.i("mn_pair");
        b.vshuf_b(mp, i < 2 ? sm.mn_lo : sm.mn_hi, slot.table(kPairCtl + i % 2));
        b.vstore(slot(kMp + i), mp);
      }
    }
    // summs = fma(fl(-d_a * dmin_w), float(sum_j m_j * bsum32_j), summs), per token.
    const V sign = ymm.splat("sign", 0x80000000u);
    for (int t = 0; t < tokens; ++t) {
      V imin = ymm.i("imin");
      for (int i = 0; i < 4; ++i) {
        V mp = ymm.i("mn_pair"), bb = ymm.i("bsum_pair");
        b.vload(mp, slot(kMp + i));
        b.vbcast_f32(bb, slot(kBs + t, pair_at[i]));
        if (i == 0) {
          b.vmadd_wd(imin, mp, bb);
        } else {
          b.vmadd_wd(mp, mp, bb);
          b.vadd_i32(imin, imin, mp);
        }
      }
      V f = ymm.f("fimin"), da = ymm.f("da"), dmin = ymm.f("dmin"), s = ymm.f("summs");
      b.vcvt_i32_f32(f, imin);
      b.vbcast_f32(da, tr.at(t, 0));
      b.vxor(da, da, sign);  // -d_a
      b.vmul_f(dmin, dminw, da);
      b.vload(s, slot(summs_slot(h, t)));
      b.vfma(s, dmin, f);
      b.vstore(slot(summs_slot(h, t)), s);
    }
    const V nib = ymm.splat("nib", 0x0F0F0F0Fu), m10 = ymm.splat("m10", 0x10101010u);
    for (int l = 0; l < kLanes; ++l) {
      const int base = kQuants + kLaneBytes * l;
      V qh = ymm.i("qh"), isum[kMaxTokens];
      b.vload(qh, w(base + kQh + 32 * h));
      for (int t = 0; t < tokens; ++t) isum[t] = ymm.i("isum");
      for (int j = 0; j < 4; ++j) {
        V qs = ymm.i("qs");
        b.vload(qs, w(base + 64 * j + 32 * h));
        for (int u = 0; u < 2; ++u) {
          const int c = 2 * j + u;
          // q = nibble u | (bit c of qh) << 4, 0..31 per byte.
          V q = ymm.i("q"), hb = ymm.i("hb");
          if (u == 1) {
            b.vsrl_i16(q, qs, 4);
            b.vand(q, q, nib);
          } else {
            b.vand(q, qs, nib);
          }
          if (c < 4) b.vsll_i16(hb, qh, 4 - c);
          if (c > 4) b.vsrl_i16(hb, qh, c - 4);
          b.vand(hb, c == 4 ? qh : hb, m10);
          b.vor(q, q, hb);
          V sc = ymm.i("S");
          b.vload(sc, slot(kS + c));
          const bool first = c == 0;
          for (int t = 0; t < tokens; ++t) {
            V ab = ymm.i("a_dword");
            b.vbcast_f32(ab, tr.at(t, kAQs + 32 * c + 4 * l));
            V p = ymm.i("pairs");
            b.vmaddubs_w(p, q, ab);  // int16 pair sums
            add_scaled_dot_avx2(b, isum[t], first, p, sc, false);
          }
        }
      }
      for (int t = 0; t < tokens; ++t)
        fma_lane_acc_avx2(b, isum[t], slot(acc_slot(h, l, t)), slot(kD + t));
    }
  }
  b.addi(tr.base, tr.base, kABlock);
  b.end_for();

  store_lane_accs_avx2(
      b, a, tokens, [&](int h, int l, int t) { return slot(acc_slot(h, l, t)); }, slot(kOut),
      [&](int h, int t, V out) {
        V s = ymm.f("summs");
        b.vload(s, slot(summs_slot(h, t)));
        b.vadd_f(out, out, s);  // hsum8(acc) + summs
      });
  return b.index();
}

}  // namespace

bool build_linear_q5_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_r16_avx2(
      "linear_q5_K_r16__avx2", false,
      "ggml_vec_dot_q5_K_q8_K lanes of contract linear.q5_K.ggml on the\nq5_K_r16 weight "
      "copy, lane j of 8 rows per ymm (activations: Q8_K rows from the plan's "
      "act_quant step)",
      {kQK_K, int(sizeof(block_q5_K)), kABlock}, kMaxTokens, emit_tile, p, m, err);
}

}  // namespace cke::jit::gen
