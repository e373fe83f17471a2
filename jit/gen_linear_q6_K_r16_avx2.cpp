// The q6_K linear on the weights' q6_K_r16 copy at AVX2 and AVX-VNNI (decode: one token a
// tile; prefill: up to 4, each computed as alone: see emit_tile), contract
// linear.q6_K.ggml: ggml_vec_dot_q6_K_q8_K's 8 int32 lanes per output (lane l = sum over the
// 8 chunks c of sc[2c + (l >= 4)] * dot(elements 32c + 4l .. +3) - 32 * (bsum[2l] sc[2l] +
// bsum[2l+1] sc[2l+1])), one FMA per lane and super-block by fl(d_a * d_w), hsum8 at the end.
// The AVX-512 tiles of the copy (gen_linear_q6_K_r16.cpp) explain the layout: vector j holds
// ggml's lane j of 16 rows. Here a 16-row group runs as two halves of 8 rows (one ymm each:
// the copy's 64-byte lines hold rows 0-7 in their first 32 bytes), one token, the 8 lane
// accumulators of each half and the chunk scales in a frame buffer (16 ymm registers).
//
// Products: the 6-bit quant q (0..63) as in the AVX-512 tile (its high bits OR-ed in by
// vpand + vpor: no vpternlogd). AVX2: vpmaddubsw(q, the token's broadcast dword) gives the
// two pair sums of a lane's 4 products (|2 * 63 * 128| < 2^15: exact), vpmaddwd by the
// row's scale in both words adds scale * dot in int32, exact. AVX-VNNI: vpdpbusd into a
// zeroed register, then vpdpwssd by the scale in the low word (the AVX-512 tile's form).
//
// Why: the row-major AVX2 tile (gen_linear_q6_K.cpp, one row, two chunks per ymm and a
// horizontal sum per super-block) ran 24-28 GMAC/s on one core (AMD EPYC Zen 5 capped to
// AVX2), bound by its instructions.

#include <stdexcept>

#include "jit/gen_linear_q6_K.h"
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
// The copy's super-block (layouts.h): scale pairs, then per lane 6 dword vectors, then d.
constexpr int kScales = 0, kQuants = 256, kLaneBytes = 384, kHalfBytes = 192, kD = 3328;
static_assert(kD + 32 == kQ6KR16Block && kQuants + kLanes * kLaneBytes == kD);
constexpr int kPrefetchAhead = 2 * kQ6KR16Block;  // as the AVX-512 decode tile

// Frame slots of 32 bytes: the 8 chunk scales S[c], each token's fl(d_a * d_w) of the half,
// the lane accumulators (half h, lane l, token t at acc(h, l, t)), the store scratch.
constexpr int kMaxTokens = 4;
constexpr int kS = 0, kD0 = 8, kAcc = kD0 + kMaxTokens;
constexpr int acc_slot(int h, int l, int t) {
  return kAcc + (8 * h + l) * kMaxTokens + t;
}
constexpr int kOut = acc_slot(1, 7, kMaxTokens - 1) + 1, kSlots = kOut + 1;

// A tile of 16 rows x `tokens` (1..4) tokens, token rows as they are (a + t * as). The
// weights' unpacking (the 6-bit quants, the chunk scales, the bsum scales) is shared by the
// tokens; each token's lane sums are its own, in the gemv's order, so every token gets the
// bits it gets alone.
int emit_tile(kir::Module& m, const std::string& name, bool vnni, int tokens) {
  if (tokens < 1 || tokens > kMaxTokens)
    throw std::logic_error("gen: the AVX2 q6_K_r16 tile takes 1..4 tokens");
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  const YmmSlots slot(b, kSlots);
  {
    V z = ymm.f("zero");
    b.vzero(z);
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < kLanes; ++l)
        for (int t = 0; t < tokens; ++t) b.vstore(slot(acc_slot(h, l, t)), z);
  }
  const V nib = ymm.splat("nib", 0x0F0F0F0Fu), m30 = ymm.splat("m30", 0x30303030u);
  // The scale of lanes 4hh..: word hh of each (sc 2c, sc 2c+1) pair, in both words (AVX2)
  // or in the low word with 0 above (AVX-VNNI).
  V pick[2];
  if (vnni) {
    pick[0] = ymm.splat("low_word", 0x0000FFFFu);
  } else {
    for (int hh = 0; hh < 2; ++hh) {  // vpshufb: bytes 2hh, 2hh + 1 into both words
      pick[hh] = ymm.i("dup_word");
      b.vconst32(pick[hh], dword_shuffle({2 * hh, 2 * hh + 1, 2 * hh, 2 * hh + 1}, 2));
    }
  }

  TokenRows tr = token_rows(b, a.a, a.as, tokens);
  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ6KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ6KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  for (int h = 0; h < 2; ++h) {
    // Each line kPrefetchAhead on, next to the first load of its line (half 0).
    auto fetch = [&](int32_t disp) {
      if (h == 0) b.vprefetch(w(disp + kPrefetchAhead));
    };
    // The rows' scale pair p (scales 2p, 2p + 1, sign-extended) as the words of each dword.
    auto scale_pair = [&](int p, bool first = false) {
      V raw = b.vec(128, Cls::I, "sc_pair8"), q = ymm.i("sc_pair");
      if (first && p % 2 == 0) fetch(kScales + 32 * p);
      b.vload(raw, w(kScales + 32 * p + 16 * h));
      b.vsx_bw(q, raw);
      return q;
    };
    {
      V hw = b.vec(128, Cls::I, "dw16"), dw = ymm.f("dw");
      fetch(kD);
      b.vload(hw, w(kD + 16 * h));
      b.vcvt_f16_f32(dw, hw);
      for (int t = 0; t < tokens; ++t) {
        V da = ymm.f("da"), d = ymm.f("d");
        b.vbcast_f32(da, tr.at(t, 0));
        b.vmul_f(d, dw, da);  // fl(d_a * d_w)
        b.vstore(slot(kD0 + t), d);
      }
    }
    for (int hh = 0; hh < 2; ++hh) {
      for (int c = 0; c < 8; ++c) {
        V s = ymm.i("S");
        if (!vnni)
          b.vshuf_b(s, scale_pair(c, hh == 0), pick[hh]);
        else if (hh == 0)
          b.vand(s, scale_pair(c, true), pick[0]);
        else
          b.vsrl_i32(s, scale_pair(c), 16);
        b.vstore(slot(kS + c), s);
      }
      for (int l = 4 * hh; l < 4 * hh + 4; ++l) {
        V isum[kMaxTokens];
        for (int t = 0; t < tokens; ++t) isum[t] = ymm.i("isum");
        for (int hq = 0; hq < 2; ++hq) {
          const int base = kQuants + kLaneBytes * l + kHalfBytes * hq;
          V ql0 = ymm.i("ql0"), ql1 = ymm.i("ql1"), qh = ymm.i("qh");
          for (int k = 0; k < 3; ++k) fetch(base + 64 * k);
          b.vload(ql0, w(base + 32 * h));       // chunks 4hq (low), 4hq+2 (high)
          b.vload(ql1, w(base + 64 + 32 * h));  // chunks 4hq+1, 4hq+3
          b.vload(qh, w(base + 128 + 32 * h));  // 2 bits of chunk 4hq+s at bit 2s
          for (int s = 0; s < 4; ++s) {
            V q = ymm.i("q"), hi = ymm.i("hi");
            const V ql = s % 2 ? ql1 : ql0;
            if (s >= 2) {
              b.vsrl_i16(q, ql, 4);
              b.vand(q, q, nib);
            } else {
              b.vand(q, ql, nib);
            }
            if (s == 0) b.vsll_i16(hi, qh, 4);
            if (s == 1) b.vsll_i16(hi, qh, 2);
            if (s == 2) b.vcopy(hi, qh);
            if (s == 3) b.vsrl_i16(hi, qh, 2);
            b.vand(hi, hi, m30);
            b.vor(q, q, hi);  // low 4 bits | high 2 bits << 4: 0..63
            const int c = 4 * hq + s;
            const bool first = hq == 0 && s == 0;
            V sc = ymm.i("S");
            b.vload(sc, slot(kS + c));
            for (int t = 0; t < tokens; ++t) {
              V ab = ymm.i("a_dword");
              b.vbcast_f32(ab, tr.at(t, kAQs + 32 * c + 4 * l));
              V dot = ymm.i("dot");
              if (vnni) {
                b.vzero(dot);
                b.vdpbusd(dot, q, ab);
              } else {
                b.vmaddubs_w(dot, q, ab);  // int16 pair sums
              }
              add_scaled_dot_avx2(b, isum[t], first, dot, sc, vnni);
            }
          }
        }
        // isum -= 32 * (bsum[2l] sc[2l] + bsum[2l+1] sc[2l+1]).
        V q32 = scale_pair(l);
        b.vsll_i16(q32, q32, 5);
        for (int t = 0; t < tokens; ++t) {
          V bs = ymm.i("bsum_pair");
          b.vbcast_f32(bs, tr.at(t, kABsums + 4 * l));
          b.vmadd_wd(bs, q32, bs);
          b.vsub_i32(isum[t], isum[t], bs);
          fma_lane_acc_avx2(b, isum[t], slot(acc_slot(h, l, t)), slot(kD0 + t));
        }
      }
    }
  }
  b.addi(tr.base, tr.base, kABlock);
  b.end_for();

  store_lane_accs_avx2(
      b, a, tokens, [&](int h, int l, int t) { return slot(acc_slot(h, l, t)); }, slot(kOut));
  return b.index();
}

bool build(const char* gen, bool vnni, const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_r16_avx2(
      gen, vnni,
      "ggml_vec_dot_q6_K_q8_K lanes of contract linear.q6_K.ggml on the\nq6_K_r16 weight "
      "copy, lane j of 8 rows per ymm (activations: Q8_K rows from the plan's "
      "act_quant step)",
      {kQK_K, int(sizeof(block_q6_K)), kABlock}, kMaxTokens, emit_tile, p, m, err);
}

}  // namespace

bool build_linear_q6_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q6_K_r16__avx2", false, p, m, err);
}
bool build_linear_q6_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q6_K_r16__avxvnni", true, p, m, err);
}

}  // namespace cke::jit::gen
