// The q6_K linear kernels on the weights' q6_K_r16 copy (kernels/formats/layouts.h) at
// AVX-512 VNNI, contract linear.q6_K.ggml: ggml_vec_dot_q6_K_q8_K's 8 float lanes per
// output, with each of them one lane of a vector of 16 rows (as q8_0_r16).
//
// Why this shape. The contract fixes, per (row, token, super-block), 8 int32 lanes: lane l
// = sum over the 8 chunks c of sc[2c + (l >= 4)] * (dot of elements 32c+4l..+3), minus
// 32 * (bsum[2l] sc[2l] + bsum[2l+1] sc[2l+1]), then one FMA per lane with fl(d_a * d_w).
// Every 4 products of a lane carry their own scale, so each 4 cost a scale multiply: 2
// multiply-unit ops per 64 MACs in any form, as in the row-major tiles (gen_linear_q6_K.cpp:
// vpmaddubsw pair sums, vpdpwssd by the scale in both words). What the row-major tiles spend
// besides is the vector form: two chunks of one row per zmm, so every super-block and token
// ends with lane shuffles, the bsum correction, a conversion and a scale product per row.
// Here vector j of a token holds lane j of 16 rows, so that work is shared by 16 rows: per
// lane and token one vpmaddwd (the correction: the rows' scale pairs times 32 by the token's
// bsum pair), vpsubd, vcvtdq2ps and vfmadd, and per token one vmulps for the 16 rows'
// fl(d_a * d_w); hsum8 is vertical adds at the end.
//
// Products. A lane's dot of 4 elements is one vpdpbusd into a zeroed register, the 6-bit
// quants (0..63) unsigned, the token's activation dword its broadcast memory operand
// (vdpbusd_b: no broadcast instruction per product, measured 86 vs 74 GMAC/s against
// vpbroadcastd + vpmaddubsw); the dot fits 16 bits (|4 * 63 * 128| < 32768), so vpdpwssd by
// the row's scale in the low word and 0 in the high one (the dot's sign) adds scale * dot,
// exact. The quants of a lane come from 6 plain loads (the copy holds each lane's ql and qh
// dwords of 16 rows), rebuilt once for all tokens of the tile; the scales are the copy's
// pairs (a vpmovsxbw of 32 bytes each), masked or shifted to the low word once per half of
// the lanes (lanes 0-3 read scale 2c, lanes 4-7 scale 2c + 1).
//
// Order. A tile runs lane by lane: lane l's int32 of each token is finished (and its FMA
// done) before lane l + 1, so one integer accumulator per token is live (two for tiles of
// 1-2 tokens, the chunks of each half in their own chain, then added: exact, and two
// chains hide vpdpwssd's latency). All integer sums are exact, so their order is free; the
// float part is the contract's: one FMA per lane per super-block in super-block order, and
// hsum8 = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
//
// Tiles: 16 rows x T tokens (T = 1..8), every token computed alone, so grouping tokens
// never changes the bits: the prefill tile (T = 4: 8 scale vectors, 3 quant loads and the
// rebuilt chunk, 4 integer accumulators, 4 token scale products in registers; the 32 float
// accumulators in an aligned frame buffer; 5, 6 and 8 tokens measured alike within noise),
// the decode tile (T = 1, its 8 accumulators in registers) and, for a batch of decode tokens
// (decode_batch), tiles of 2..8 tokens reading the weights once a group. The decode tiles
// prefetch (kPrefetchAhead); the prefill tiles reread a group from L2 per token group.
#include <algorithm>
#include <vector>

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

constexpr int kLanes = 8;                         // ggml's float lanes per output
constexpr int kMaxTokens = 8;                     // tokens of a tile
constexpr int kABlock = int(sizeof(block_q8_K));  // 292
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
// The copy's super-block (layouts.h): scale pairs, then per lane 6 dword vectors, then d.
constexpr int kScales = 0, kQuants = 256, kLaneBytes = 384, kHalfBytes = 192, kD = 3328;
static_assert(kD + 32 == kQ6KR16Block && kQuants + kLanes * kLaneBytes == kD);
static_assert(offsetof(block_q8_K, d) == 0);
// The decode tiles prefetch every line of the copy this far ahead (2 super-blocks), into L2,
// each next to the load of the line 2 super-blocks back (gen_tile.h: one stream otherwise
// takes no prefetch). Measured (bench_kernels, AMD EPYC Zen 4, one core streaming from
// DRAM): 20-23 GB/s against 15 without; all of a super-block's prefetches at its start: 13
// (4 KiB ahead) to 10.5 (8 KiB).
constexpr int kPrefetchAhead = 2 * kQ6KR16Block;

// One tile: 16 rows (the group at w) x `tokens` tokens. prefetch: the decode tiles' software
// prefetch (see kPrefetchAhead).
int emit_tile(kir::Module& m, const std::string& name, int tokens, bool prefetch) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const int chains = tokens <= 2 ? 2 : 1;
  const TokenRows8 tr = token_rows8(b, a.a, a.as, tokens);
  auto act = [&](int t, int32_t disp) { return tr.at(t, disp); };
  // Frame (64 bytes a slot): the lane accumulators' slots, if any.
  V frame;
  if (LaneAccs::slots(tokens) > 0) {
    frame = b.ptr("frame");
    b.ptr_align(frame, b.stack((LaneAccs::slots(tokens) + 1) * 64, "frame_raw"), 64);
  }
  LaneAccs acc(b, tokens, frame, 0);
  acc.zero();
  V nib = b.vec(512, Cls::I, "nib"), m30 = b.vec(512, Cls::I, "m30"),
    low = b.vec(512, Cls::I, "low_word");
  b.vsplat32(nib, 0x0F0F0F0Fu);
  b.vsplat32(m30, 0x30303030u);
  b.vsplat32(low, 0x0000FFFFu);

  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ6KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ6KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this super-block of the group
  auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
  // Each line kPrefetchAhead on, next to the load of its line here.
  auto fetch = [&](int32_t disp) {
    if (prefetch) b.vprefetch(w(disp + kPrefetchAhead));
  };
  // fl(d_a * d_w) of the 16 rows, per token: one product per row and token, as ggml's.
  {
    V hw = b.vec(256, Cls::I, "hw"), dw = b.vec(512, Cls::F, "dw");
    fetch(kD);
    b.vload(hw, w(kD));
    b.vcvt_f16_f32(dw, hw);
    for (int t = 0; t < tokens; ++t) {
      V da = b.vec(512, Cls::F, "da");
      b.vbcast_f32(da, act(t, 0));
      V d = b.vec(512, Cls::F, "d");
      b.vmul_f(d, dw, da);
      acc.set_d(t, d);
    }
  }
  // The rows' scale pair p (scales 2p, 2p + 1, sign-extended) as the words of each dword
  // (first: the first read of its line).
  auto scale_pair = [&](int p, bool first = false) {
    V raw = b.vec(256, Cls::I, "sc_pair8"), q = b.vec(512, Cls::I, "sc_pair");
    if (first && p % 2 == 0) fetch(kScales + 32 * p);
    b.vload(raw, w(kScales + 32 * p));
    b.vsx_bw(q, raw);
    return q;
  };
  for (int hh = 0; hh < 2; ++hh) {
    // S[c] lane r: sc[2c + hh] of row r in the low word, 0 in the high word, for the lanes
    // 4hh .. 4hh + 3: the vpdpwssd multiplier of a lane's dot (an int16: |4 * 63 * 128|
    // < 32768, its high word the sign) times the scale.
    V S[8];
    for (int c = 0; c < 8; ++c) {
      S[c] = b.vec(512, Cls::I, "S");
      if (hh == 0)
        b.vand(S[c], scale_pair(c, true), low);
      else
        b.vsrl_i32(S[c], scale_pair(c), 16);
    }
    for (int l = 4 * hh; l < 4 * hh + 4; ++l) {
      V isum[kMaxTokens][2];
      for (int h = 0; h < 2; ++h) {
        const int base = kQuants + kLaneBytes * l + kHalfBytes * h;
        V ql0 = b.vec(512, Cls::I, "ql0"), ql1 = b.vec(512, Cls::I, "ql1"),
          qh = b.vec(512, Cls::I, "qh");
        for (int k = 0; k < 3; ++k) fetch(base + 64 * k);
        b.vload(ql0, w(base));       // lane r: ql dword of chunks 4h (low), 4h+2 (high)
        b.vload(ql1, w(base + 64));  // chunks 4h+1, 4h+3
        b.vload(qh, w(base + 128));  // 2 bits of chunk 4h+s at bit 2s
        for (int s = 0; s < 4; ++s) {
          // q = low 4 bits | high 2 bits << 4 (0..63), per byte; the 16-bit shifts move bits
          // across bytes only where the masks then clear them (lo: nib; hi: 0x30 in the
          // vpternlogd that ORs them, 13 instructions for the 4 chunks instead of 17).
          V lo = b.vec(512, Cls::I, "lo"), hi = b.vec(512, Cls::I, "hi");
          const V ql = s % 2 ? ql1 : ql0;
          if (s >= 2) {
            b.vsrl_i16(lo, ql, 4);
            b.vand(lo, lo, nib);
          } else {
            b.vand(lo, ql, nib);
          }
          if (s == 0) b.vsll_i16(hi, qh, 4);
          if (s == 1) b.vsll_i16(hi, qh, 2);
          if (s == 3) b.vsrl_i16(hi, qh, 2);
          // q = lo | (hi & 0x30), into lo: vpternlogd overwrites its first source, and lo
          // is a fresh temporary (hi or qh would take a register copy).
          const V q = lo;
          b.vternlog(q, lo, s == 2 ? qh : hi, m30, 0xF8);
          const int c = 4 * h + s, k = chains == 2 ? h : 0;
          for (int t = 0; t < tokens; ++t) {
            // The lane's dot of the 4 elements (q unsigned, the token's activation dword
            // broadcast by the instruction), exact; then times the row's scale.
            V dot = b.vec(512, Cls::I, "dot");
            b.vzero(dot);
            b.vdpbusd_b(dot, q, act(t, kAQs + 32 * c + 4 * l));
            add_scaled_dot(b, isum[t][k], s == 0 && (h == 0 || chains == 2), dot, S[c]);
          }
        }
      }
      // isum -= 32 * (bsum[2l] sc[2l] + bsum[2l+1] sc[2l+1]): the rows' scale pair l times
      // 32 (|32 sc| <= 4096) by the token's bsum pair, then one FMA per row.
      V q32 = b.vec(512, Cls::I, "sc_pair32");
      b.vsll_i16(q32, scale_pair(l), 5);
      for (int t = 0; t < tokens; ++t) {
        V bs = b.vec(512, Cls::I, "bsum_pair"), corr = b.vec(512, Cls::I, "corr");
        b.vbcast_f32(bs, act(t, kABsums + 4 * l));
        b.vmadd_wd(corr, q32, bs);
        V is = isum[t][0];
        if (chains == 2) b.vadd_i32(is, is, isum[t][1]);
        b.vsub_i32(is, is, corr);
        acc.fma(t, l, is);  // acc = fma(fl(d_a * d_w), float(isum), acc)
      }
    }
  }
  tr.advance(b, kABlock);
  b.end_for();

  acc.store(a);
  return b.index();
}

}  // namespace

bool build_linear_q6_K_r16_avx512vnni(const GeneratorParams& params, kir::Module* m,
                                      std::string* err) {
  // The decode kernel's tiles (one token, or a batch of decode tokens) prefetch.
  return build_r16_lanes(
      "linear_q6_K_r16__avx512vnni",
      "ggml_vec_dot_q6_K_q8_K lanes of contract linear.q6_K.ggml on the\nq6_K_r16 weight copy, "
      "lane j of 16 rows per zmm (activations: Q8_K rows from the plan's act_quant step)",
      {kQK_K, int(sizeof(block_q6_K)), kABlock}, kMaxTokens, emit_tile, params, m, err);
}

}  // namespace cke::jit::gen
