// The q3_K linear on the weights' q3_K_r16 copy at AVX2 and AVX-VNNI (decode: one token a
// tile; prefill: up to 4, each computed as alone), contract linear.q3_K.ggml:
// ggml_vec_dot_q3_K_q8_K's 8 int32 lanes per output (lane l = sum over the 8 chunks c of
// sc[2c + (l >= 4)] * dot(q of elements 32c + 4l .. +3), q = u - 4, u = 2 low bits | hmask
// bit << 2 in 0..7), one FMA per lane and super-block by fl(d_a * d_w), hsum8 at the end.
// The AVX-512 tiles of the copy (gen_linear_q3_K_r16.cpp) explain the layout and the scale
// unpacking; here a 16-row group runs as two halves of 8 rows (one ymm each: the copy's
// 64-byte lines hold rows 0-7 in their first 32 bytes), the lane accumulators, the chunk
// scales and the tokens' offsets in a frame buffer (16 ymm registers).
//
// Products, exact in both forms (the contract's integer sums are exact, so only their
// values matter, not their order):
//  - AVX2: vpmaddubsw(u, the token's broadcast dword) gives the two pair sums of u * a
//    (|2 * 7 * 128| < 2^15); minus the pair sums of 4 * a (vpmaddubsw of 0x04 bytes, made
//    once per token and super-block) they are the pair sums of q * a; vpmaddwd by the row's
//    scale in both words adds sc * dot in int32. (ggml's own AVX2 form, q as |q| with its
//    sign moved onto a by vpsignb, would wrap at the activation -128, which Q8_K makes for
//    the largest element of most blocks.)
//  - AVX-VNNI: as the AVX-512 tile, vpdpbusd(u, a) from -4 * (sum of the 4 activations),
//    the exact dot of q (an int16), then vpdpwssd by the scale in the low word.
//
// Why: the row-major AVX2 tile (gen_linear_kquant.cpp: one row, the lane shuffles and the
// scale unpacking per row and super-block) is bound by its instructions.

#include <stdexcept>

#include "jit/gen_linear_kquant.h"
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
// The copy's super-block (layouts.h): 3 scale dwords of the 16 rows, per lane 3 quant dword
// vectors (qs of chunks 0-3, qs of chunks 4-7, hmask), then the 16 d's.
constexpr int kQuants = 192, kLaneBytes = 192, kD = 1728;
static_assert(kQuants + kLanes * kLaneBytes == kD && kD + 32 == kQ3KR16Block);

// Frame slots of 32 bytes: the vpshufb controls that take scale byte k (4), the 16 scales
// S[i] of the half's rows as their products' multipliers, each token's 8 chunk offsets
// (AVX2: the words 4 * (a pair's sum); AVX-VNNI: the dwords -4 * (the lane's sum)) and its
// fl(d_a * d_w) of the half, the lane accumulators (half h, lane l, token t), the store
// scratch.
constexpr int kMaxTokens = 4;
constexpr int kCtl = 0, kS = 4, kOff = kS + 16, kD0 = kOff + 8 * kMaxTokens,
              kAcc = kD0 + kMaxTokens;
constexpr int acc_slot(int h, int l, int t) {
  return kAcc + (8 * h + l) * kMaxTokens + t;
}
constexpr int kOut = acc_slot(1, 7, kMaxTokens - 1) + 1, kSlots = kOut + 1;

int emit_tile(kir::Module& m, const std::string& name, bool vnni, int tokens) {
  if (tokens < 1 || tokens > kMaxTokens)
    throw std::logic_error("gen: the AVX2 q3_K_r16 tile takes 1..4 tokens");
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
  // Scale byte k of each dword, zero-extended into both words (AVX2: vpmaddwd's multiplier of
  // both pair sums) or into the low word only (AVX-VNNI: vpdpwssd's of the dot's low word).
  for (int k = 0; k < 4; ++k) {
    V x = ymm.i("table");
    b.vconst32(x, dword_shuffle(vnni ? std::initializer_list<int>{k, -1, -1, -1}
                                     : std::initializer_list<int>{k, -1, k, -1},
                                2));
    b.vstore(slot(kCtl + k), x);
  }
  const V m03 = ymm.splat("m03", 0x03030303u), m04 = ymm.splat("m04", 0x04040404u);

  TokenRows tr = token_rows(b, a.a, a.as, tokens);
  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ3KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ3KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  if (stream_prefetch(tokens))
    for (int l = 0; l < kQ3KR16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
  // The tokens' offsets of the super-block, shared by the 16 rows.
  {
    V zero;
    if (vnni) {
      zero = ymm.i("zero_i32");
      b.vzero(zero);
    }
    for (int t = 0; t < tokens; ++t)
      for (int c = 0; c < 8; ++c) {
        V av = ymm.i("act"), o = ymm.i("offset");
        b.vload(av, tr.at(t, kAQs + 32 * c));
        if (vnni) {
          b.vzero(o);
          b.vdpbusd(o, m04, av);  // 4 * (sum of lane l's 4 activations), dword l
          b.vsub_i32(o, zero, o);
        } else {
          b.vmaddubs_w(o, m04, av);  // 4 * (a pair's sum), exact
        }
        b.vstore(slot(kOff + 8 * t + c), o);
      }
  }
  for (int h = 0; h < 2; ++h) {
    {
      V hw = b.vec(128, Cls::I, "dw16"), dw = ymm.f("dw");
      b.vload(hw, w(kD + 16 * h));
      b.vcvt_f16_f32(dw, hw);
      for (int t = 0; t < tokens; ++t) {
        V da = ymm.f("da"), d = ymm.f("d");
        b.vbcast_f32(da, tr.at(t, 0));
        b.vmul_f(d, dw, da);  // fl(d_a * d_w)
        b.vstore(slot(kD0 + t), d);
      }
    }
    // Scales: lane r of sv[q] = sc[4q .. 4q+3] + 32 of row 8h + r as bytes (0..63; ggml's aux
    // words: low nibbles from scale bytes 0-7, bits 4-5 from bytes 8-11), then S[i] = sc[i]
    // as a word, sign included (vpaddw of -32).
    {
      V hs[3];
      for (int k = 0; k < 3; ++k) {
        hs[k] = ymm.i("scales");
        b.vload(hs[k], w(64 * k + 32 * h));
      }
      const V nib = ymm.splat("nib", 0x0F0F0F0Fu), m30 = ymm.splat("m30", 0x30303030u);
      const V minus32 = ymm.splat("minus32", vnni ? 0x0000FFE0u : 0xFFE0FFE0u);
      for (int q = 0; q < 4; ++q) {
        V lo = ymm.i("lo"), hi = ymm.i("hi"), sv = ymm.i("sv");
        if (q >= 2) {
          b.vsrl_i32(lo, hs[q % 2], 4);
          b.vand(lo, lo, nib);
        } else {
          b.vand(lo, hs[q % 2], nib);
        }
        const int sh = 4 - 2 * q;  // aux2's bits 2q, 2q + 1 of each byte -> bits 4, 5
        if (sh > 0) b.vsll_i32(hi, hs[2], sh);
        if (sh < 0) b.vsrl_i32(hi, hs[2], -sh);
        b.vand(hi, sh == 0 ? hs[2] : hi, m30);
        b.vor(sv, lo, hi);
        for (int k = 0; k < 4; ++k) {
          V s = ymm.i("S"), ctl = ymm.i("table");
          b.vload(ctl, slot(kCtl + k));
          b.vshuf_b(s, sv, ctl);
          b.vadd_i16(s, s, minus32);
          b.vstore(slot(kS + 4 * q + k), s);
        }
      }
    }
    for (int l = 0; l < kLanes; ++l) {
      const int base = kQuants + kLaneBytes * l, hh = l >= 4 ? 1 : 0;
      V hm = ymm.i("hmask"), isum[kMaxTokens];
      b.vload(hm, w(base + 128 + 32 * h));
      for (int t = 0; t < tokens; ++t) isum[t] = ymm.i("isum");
      for (int j = 0; j < 2; ++j) {
        V qs = ymm.i("qs");
        b.vload(qs, w(base + 64 * j + 32 * h));
        for (int s = 0; s < 4; ++s) {
          const int c = 4 * j + s;
          // u = bits 2s of qs | (bit c of hmask) << 2, 0..7 per byte (16-bit shifts move
          // bits across bytes only where the masks clear them).
          V u = ymm.i("u"), hb = ymm.i("hb");
          if (s > 0) {
            b.vsrl_i16(u, qs, 2 * s);
            b.vand(u, u, m03);
          } else {
            b.vand(u, qs, m03);
          }
          if (c < 2) b.vsll_i16(hb, hm, 2 - c);
          if (c > 2) b.vsrl_i16(hb, hm, c - 2);
          b.vand(hb, c == 2 ? hm : hb, m04);
          b.vor(u, u, hb);
          V sc = ymm.i("S");
          b.vload(sc, slot(kS + 2 * c + hh));
          const bool first = c == 0;
          for (int t = 0; t < tokens; ++t) {
            V ab = ymm.i("a_dword"), dot = ymm.i("dot");
            b.vbcast_f32(ab, tr.at(t, kAQs + 32 * c + 4 * l));
            if (vnni) {
              b.vbcast_f32(dot, slot(kOff + 8 * t + c, 4 * l));  // -4 * sum(a)
              b.vdpbusd(dot, u, ab);                             // the dot of q = u - 4
            } else {
              V ob = ymm.i("offset_pairs");
              b.vmaddubs_w(dot, u, ab);
              b.vbcast_f32(ob, slot(kOff + 8 * t + c, 4 * l));
              b.vsub_i16(dot, dot, ob);  // the pair sums of q * a, q = u - 4
            }
            add_scaled_dot_avx2(b, isum[t], first, dot, sc, vnni);
          }
        }
      }
      for (int t = 0; t < tokens; ++t)
        fma_lane_acc_avx2(b, isum[t], slot(acc_slot(h, l, t)), slot(kD0 + t));
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
      "ggml_vec_dot_q3_K_q8_K lanes of contract linear.q3_K.ggml on the\nq3_K_r16 weight "
      "copy, lane j of 8 rows per ymm (activations: Q8_K rows from the plan's "
      "act_quant step)",
      {kQK_K, int(sizeof(block_q3_K)), kABlock}, kMaxTokens, emit_tile, p, m, err);
}

}  // namespace

bool build_linear_q3_K_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q3_K_r16__avx2", false, p, m, err);
}
bool build_linear_q3_K_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q3_K_r16__avxvnni", true, p, m, err);
}

}  // namespace cke::jit::gen
