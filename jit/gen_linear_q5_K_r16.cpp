// The q5_K linear kernels on the weights' q5_K_r16 copy (kernels/formats/layouts.h) at
// AVX-512 VNNI, contract linear.q5_K.ggml: ggml_vec_dot_q5_K_q8_K's 8 float lanes per
// output and its scalar min term, with each lane one lane of a vector of 16 rows (as
// q6_K_r16: gen_linear_q6_K_r16.cpp says why that shape).
//
// The contract per (row, token, super-block): lane l = sum over the 8 chunks c of sc[c] *
// (dot of elements 32c+4l..+3), acc[l] = fma(fl(d_a * d_w), float(lane l), acc[l]); and the
// min term summs = fma(fl(-d_a * dmin_w), float(sum_j m_j * bsum32_j), summs); the output
// is hsum8(acc) + summs. The row-major tiles (gen_linear_kquant.cpp) hold two chunks of one
// row per zmm and spend per row, token and super-block the lane shuffles, the min term's
// horizontal sums and a scalar FMA; here all of that is shared by 16 rows:
//  - heads: the q4_K_r16 unpacking (unpack_k4_head16): d_w, dmin_w as f32, ggml's 6-bit
//    scales and mins as bytes, one vector each for the 16 rows.
//  - min term per token: vpdpwssd of the rows' (m_2i, m_2i+1) words by the token's
//    (bsum32_2i, bsum32_2i+1) words (|bsum32| <= 4096: an int16), exact; then the contract's
//    scalar FMA as one vector FMA of the 16 rows with fl((-d_a) * dmin_w) (-d_a: the sign
//    flipped, as ggml negates).
//  - lanes: a lane's 4 quants of chunk c = 2j + u are nibble u of its qs dword j | bit c
//    of its qh dword as bit 4 (the 16-bit shifts move bits across bytes only where the 0x10
//    mask of the vpternlogd that ORs them clears them); vpdpbusd into a zeroed register
//    (quants 0..31 unsigned, the token's activation dword its broadcast memory operand)
//    gives the exact dot, |4 * 31 * 128| < 32768, so vpdpwssd by the rows' scale in the low
//    word and 0 in the high one (the dot's sign) adds sc[c] * dot, exact.
// Integer sums are exact, so their order is free; the float part is the contract's: one FMA
// per lane per super-block in super-block order, the min FMA per super-block, hsum8 =
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), then + summs.
//
// Tiles: 16 rows x T tokens (T = 1..8), every token computed alone, so grouping tokens never
// changes the bits: the prefill tile (T = 4), the decode tile (T = 1, its 8 accumulators in
// registers) and, for a batch of decode tokens (decode_batch), tiles of 2..8 tokens reading
// the weights once a group. Every line is prefetched kStreamPrefetchAhead on (gen_tile.h;
// the one-token tile as the host's decode_stream_prefetch says).
#include <algorithm>
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

constexpr int kLanes = 8;                         // ggml's float lanes per output
constexpr int kMaxTokens = 8;                     // tokens of a tile
constexpr int kABlock = int(sizeof(block_q8_K));  // 292
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
static_assert(offsetof(block_q8_K, d) == 0);
// The copy's super-block (layouts.h): 4 head dwords of the 16 rows, then per lane 4 qs
// dword vectors and the qh one.
constexpr int kQuants = 256, kLaneBytes = 320, kQh = 256;
static_assert(kQuants + kLanes * kLaneBytes == kQ5KR16Block);

// One tile: 16 rows (the group at w) x `tokens` tokens.
int emit_tile(kir::Module& m, const std::string& name, int tokens, bool /*decode*/) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf zmm{b, 512};
  const bool regs = tokens == 1;  // summs in a register, else the frame
  const int chains = tokens <= 2 ? 2 : 1;
  const bool prefetch = stream_prefetch(tokens);
  const TokenRows8 tr = token_rows8(b, a.a, a.as, tokens);
  auto act = [&](int t, int32_t disp) { return tr.at(t, disp); };
  // Frame, 64 bytes a slot: the token's bsum32 pairs (reused by each token), each token's
  // summs (unless in a register), then the lane accumulators' slots.
  const int summs_slots = regs ? 0 : tokens;
  V frame = b.ptr("frame");
  b.ptr_align(frame, b.stack((2 + summs_slots + LaneAccs::slots(tokens)) * 64, "frame_raw"), 64);
  const Mem pairs{frame, {}, 1, 0};
  auto summs_slot = [&](int t) { return Mem{frame, {}, 1, 64 * (1 + t)}; };
  LaneAccs acc(b, tokens, frame, 1 + summs_slots);
  acc.zero();
  V summs = zmm.f("summs");
  if (regs) {
    b.vzero(summs);
  } else {
    V z = zmm.f("zero");
    b.vzero(z);
    for (int t = 0; t < tokens; ++t) b.vstore(summs_slot(t), z);
  }
  const K4HeadConsts hc = k4_head_consts(b);
  auto table = [&](const char* n, const std::vector<uint32_t>& lanes) {
    V x = zmm.i(n);
    b.vconst32(x, lanes);
    return x;
  };
  const V m10 = zmm.splat("m10", 0x10101010u), low8 = zmm.splat("low8", 0xFFu),
          sign = zmm.splat("sign", 0x80000000u);
  const V byte1 = table("byte1", dword_shuffle({1, -1, -1, -1}, 4)),
          byte2 = table("byte2", dword_shuffle({2, -1, -1, -1}, 4)),
          pair01 = table("pair01", dword_shuffle({0, -1, 1, -1}, 4)),
          pair23 = table("pair23", dword_shuffle({2, -1, 3, -1}, 4));
  V ones16 = b.vec(256, Cls::I, "ones16");
  b.vsplat32(ones16, 0x00010001u);

  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ5KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ5KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this super-block of the group
  // Every line prefetched kStreamPrefetchAhead on, next to its load (gen_tile.h).
  auto load_w = [&](V v, int32_t disp) {
    if (prefetch) b.vprefetch(Mem{wb, {}, 1, disp + kStreamPrefetchAhead});
    b.vload(v, Mem{wb, {}, 1, disp});
  };

  V h[4];
  for (int k = 0; k < 4; ++k) {
    h[k] = zmm.i("head");
    load_w(h[k], 64 * k);
  }
  const K4Head16 hd = unpack_k4_head16(b, h, hc);
  // Per token: fl(d_a * d_w) of the 16 rows, and the min term's FMA.
  {
    V mp[4];  // the rows' (m_2i, m_2i+1) as the words of each dword
    for (int i = 0; i < 4; ++i) {
      mp[i] = zmm.i("mn_pair");
      b.vshuf_b(mp[i], i < 2 ? hd.mn_lo : hd.mn_hi, i % 2 ? pair23 : pair01);
    }
    // The token's bsum32 pairs as int16 words (vpackssdw order: pairs 0, 1 at bytes 0, 4;
    // pairs 2, 3 at 16, 20).
    const int pair_at[4] = {0, 4, 16, 20};
    for (int t = 0; t < tokens; ++t) {
      V da = zmm.f("da");
      b.vbcast_f32(da, act(t, 0));
      V d = zmm.f("d");
      b.vmul_f(d, hd.dw, da);
      acc.set_d(t, d);
      V bs = b.vec(256, Cls::I, "bsums"), b32 = b.vec(256, Cls::I, "bsum32"),
        bp = b.vec(256, Cls::I, "bsum_pairs");
      b.vload(bs, act(t, kABsums));
      b.vmadd_wd(b32, bs, ones16);  // bsum32_j = bsums[2j] + bsums[2j+1]
      b.vpackss_dw(bp, b32, b32);   // exact: |bsum32_j| <= 4096
      b.vstore(pairs, bp);
      V imin = zmm.i("imin");
      for (int i = 0; i < 4; ++i) {
        V bb = zmm.i("bsum_pair");
        b.vbcast_f32(bb, Mem{frame, {}, 1, pair_at[i]});
        if (i == 0)
          b.vmadd_wd(imin, mp[i], bb);
        else
          b.vdpwssd(imin, mp[i], bb);
      }
      V f = zmm.f("fimin"), nda = zmm.f("neg_da"), dmin = zmm.f("dmin");
      b.vcvt_i32_f32(f, imin);
      b.vxor(nda, da, sign);
      b.vmul_f(dmin, hd.dminw, nda);
      if (regs) {
        b.vfma(summs, dmin, f);  // summs = fma(fl(-d_a * dmin_w), float(imin), summs)
      } else {
        V s = zmm.f("summs");
        b.vload(s, summs_slot(t));
        b.vfma(s, dmin, f);
        b.vstore(summs_slot(t), s);
      }
    }
  }
  // S[c] lane r: sc[c] of row r in the low word, 0 in the high word: the vpdpwssd
  // multiplier of a lane's dot of chunk c (an int16, its high word the sign).
  V S[8];
  for (int c = 0; c < 8; ++c) {
    const V sc = c < 4 ? hd.sc_lo : hd.sc_hi;
    S[c] = zmm.i("S");
    if (c % 4 == 0) b.vand(S[c], sc, low8);
    if (c % 4 == 1) b.vshuf_b(S[c], sc, byte1);
    if (c % 4 == 2) b.vshuf_b(S[c], sc, byte2);
    if (c % 4 == 3) b.vsrl_i32(S[c], sc, 24);
  }
  for (int l = 0; l < kLanes; ++l) {
    const int base = kQuants + kLaneBytes * l;
    V qh = zmm.i("qh"), isum[kMaxTokens][2];
    load_w(qh, base + kQh);
    for (int j = 0; j < 4; ++j) {
      V qs = zmm.i("qs");
      load_w(qs, base + 64 * j);
      for (int u = 0; u < 2; ++u) {
        const int c = 2 * j + u;
        // q = nibble u | (bit c of qh) << 4, 0..31 per byte.
        V lo = zmm.i("lo"), hi = zmm.i("hi");
        if (u == 1) {
          b.vsrl_i16(lo, qs, 4);
          b.vand(lo, lo, hc.nib);
        } else {
          b.vand(lo, qs, hc.nib);
        }
        if (c < 4) b.vsll_i16(hi, qh, 4 - c);
        if (c > 4) b.vsrl_i16(hi, qh, c - 4);
        // lo | (hi & 0x10), into lo (a fresh temporary: vpternlogd overwrites its first
        // source).
        const V q = lo;
        b.vternlog(q, lo, c == 4 ? qh : hi, m10, 0xF8);
        const int k = chains == 2 ? u : 0;
        for (int t = 0; t < tokens; ++t) {
          V dot = zmm.i("dot");
          b.vzero(dot);
          b.vdpbusd_b(dot, q, act(t, kAQs + 32 * c + 4 * l));
          add_scaled_dot(b, isum[t][k], j == 0 && (u == 0 || chains == 2), dot, S[c]);
        }
      }
    }
    for (int t = 0; t < tokens; ++t) {
      V is = isum[t][0];
      if (chains == 2) b.vadd_i32(is, is, isum[t][1]);
      acc.fma(t, l, is);  // acc = fma(fl(d_a * d_w), float(isum), acc)
    }
  }
  tr.advance(b, kABlock);
  b.end_for();

  // hsum8(acc) + summs
  acc.store(a, [&](int t, V o) {
    V s = summs;
    if (!regs) {
      s = zmm.f("summs");
      b.vload(s, summs_slot(t));
    }
    b.vadd_f(o, o, s);
  });
  return b.index();
}

}  // namespace

bool build_linear_q5_K_r16_avx512vnni(const GeneratorParams& params, kir::Module* m,
                                      std::string* err) {
  return build_r16_lanes(
      "linear_q5_K_r16__avx512vnni",
      "ggml_vec_dot_q5_K_q8_K lanes of contract linear.q5_K.ggml on the\nq5_K_r16 weight copy, "
      "lane j of 16 rows per zmm (activations: Q8_K rows from the plan's act_quant step)",
      {kQK_K, int(sizeof(block_q5_K)), kABlock}, kMaxTokens, emit_tile, params, m, err);
}

}  // namespace cke::jit::gen
