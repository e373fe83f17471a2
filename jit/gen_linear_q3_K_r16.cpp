// The q3_K linear kernels on the weights' q3_K_r16 copy (kernels/formats/layouts.h) at
// AVX-512 VNNI, contract linear.q3_K.ggml: ggml_vec_dot_q3_K_q8_K's 8 float lanes per
// output, with each lane one lane of a vector of 16 rows (as q6_K_r16:
// gen_linear_q6_K_r16.cpp says why that shape).
//
// The contract per (row, token, super-block): lane l = sum over the 8 chunks c of
// sc[2c + (l >= 4)] * (dot of elements 32c+4l..+3 of q = u - 4, u = 2 low bits | hmask bit
// << 2 in 0..7), acc[l] = fma(fl(d_a * d_w), float(lane l), acc[l]), hsum8 at the end. The
// row-major tiles (gen_linear_kquant.cpp) spend per row, token and super-block the lane
// shuffles, the scale unpacking and the offset's activation sums; here they are shared:
//  - scales: ggml's 6-bit unpacking of the 16 rows' 12 bytes as 4 dword vectors of 4 bytes
//    (vpternlogd of the low nibbles and the high 2 bits, & 63, - 32), parked in the frame;
//    per half of the lanes the vpdpwssd multipliers S[c] (sc[2c + half] of row r,
//    sign-extended, in the low word, 0 in the high one: vpslld, vpsrad, vpand).
//  - the -4 offset: per token and super-block, -4 * (sum of each 4 activations) for all 64
//    (chunk, lane) dwords (4 vpdpbusd of 0x04 bytes by the activation vectors, negated),
//    parked in the frame; a lane's dot starts from its broadcast value instead of zero, so
//    vpdpbusd of u (unsigned) by the activation dword (its broadcast memory operand) ends
//    at the exact dot of q = u - 4: |4 * 4 * 128| < 32768, an int16, and vpdpwssd by S[c]
//    adds sc * dot, exact.
//  - u: bits 2s of the lane's qs dword j (c = 4j + s) | bit c of its hmask dword as bit 2
//    (16-bit shifts move bits across bytes only where the masks clear them).
// Integer sums are exact, so their order is free; the float part is the contract's: one FMA
// per lane per super-block in super-block order, and hsum8 = ((a0+a4)+(a2+a6)) +
// ((a1+a5)+(a3+a7)).
//
// Tiles: 16 rows x T tokens (T = 1..8), every token computed alone, so grouping tokens never
// changes the bits: the prefill tile (T = 4), the decode tile (T = 1, its 8 accumulators in
// registers) and, for a batch of decode tokens (decode_batch), tiles of 2..8 tokens reading
// the weights once a group. Every line is prefetched kStreamPrefetchAhead on (gen_tile.h;
// the one-token tile as the host's decode_stream_prefetch says).
#include <algorithm>
#include <vector>

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

constexpr int kLanes = 8;                         // ggml's float lanes per output
constexpr int kMaxTokens = 8;                     // tokens of a tile
constexpr int kABlock = int(sizeof(block_q8_K));  // 292
constexpr int kAQs = int(offsetof(block_q8_K, qs));
static_assert(offsetof(block_q8_K, d) == 0);
// The copy's super-block (layouts.h): 3 scale dwords of the 16 rows, per lane 3 quant
// dword vectors (qs of chunks 0-3, qs of chunks 4-7, hmask), then the 16 d's.
constexpr int kQuants = 192, kLaneBytes = 192, kD = 1728;
static_assert(kQuants + kLanes * kLaneBytes == kD && kD + 32 == kQ3KR16Block);

// One tile: 16 rows (the group at w) x `tokens` tokens.
int emit_tile(kir::Module& m, const std::string& name, int tokens, bool /*decode*/) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf zmm{b, 512};
  const int chains = tokens <= 2 ? 2 : 1;
  const bool prefetch = stream_prefetch(tokens);
  const TokenRows8 tr = token_rows8(b, a.a, a.as, tokens);
  auto act = [&](int t, int32_t disp) { return tr.at(t, disp); };
  // Frame, 64 bytes a slot: the 4 unpacked scale vectors; per token its 4 offset slots
  // (-4 * the sum of each 4 activations, dword 8c + l: chunk c, lane l); then the lane
  // accumulators' slots.
  const int off_slots = 4 * tokens;
  V frame = b.ptr("frame");
  b.ptr_align(frame, b.stack((5 + off_slots + LaneAccs::slots(tokens)) * 64, "frame_raw"), 64);
  auto slot = [&](int i, int32_t disp = 0) { return Mem{frame, {}, 1, 64 * i + disp}; };
  auto scale_slot = [&](int q) { return slot(q); };
  auto off_at = [&](int t, int c, int l) { return slot(4 + 4 * t, 4 * (8 * c + l)); };
  LaneAccs acc(b, tokens, frame, 4 + off_slots);
  acc.zero();
  const V m03 = zmm.splat("m03", 0x03030303u), m04 = zmm.splat("m04", 0x04040404u),
          low16 = zmm.splat("low16", 0x0000FFFFu);

  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kQ3KR16Block);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ3KR16Block, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this super-block of the group
  // Every line prefetched kStreamPrefetchAhead on, next to its load (gen_tile.h).
  auto fetch = [&](int32_t disp) {
    if (prefetch) b.vprefetch(Mem{wb, {}, 1, disp + kStreamPrefetchAhead});
  };
  auto load_w = [&](V v, int32_t disp) {
    fetch(disp);
    b.vload(v, Mem{wb, {}, 1, disp});
  };
  // Scales: lane r of sv[q] = sc[4q .. 4q+3] of row r as signed bytes (ggml's aux words:
  // low nibbles from scale bytes 0-7, bits 4-5 from bytes 8-11), into the frame.
  {
    V h[3];
    for (int k = 0; k < 3; ++k) {
      h[k] = zmm.i("scales");
      load_w(h[k], 64 * k);
    }
    const V nib = zmm.splat("nib", 0x0F0F0F0Fu), m63 = zmm.splat("m63", 0x3F3F3F3Fu),
            b32 = zmm.splat("b32", 0x20202020u);
    for (int q = 0; q < 4; ++q) {
      // nib ? (aux0 or aux1, >> 4 for q >= 2) : aux2 << 4 - 2q (its bits 2q', 2q'+1 -> 4, 5)
      V lo = zmm.i("lo"), hi = zmm.i("hi"), sv = zmm.i("sv");
      const V src = h[q % 2];
      if (q >= 2) {
        b.vsrl_i32(lo, src, 4);
      } else {
        lo = src;
      }
      const int sh = 4 - 2 * q;
      if (sh > 0) b.vsll_i32(hi, h[2], sh);
      if (sh < 0) b.vsrl_i32(hi, h[2], -sh);
      b.vternlog(sv, lo, sh == 0 ? h[2] : hi, nib, 0xE4);  // nib ? lo : hi
      b.vand(sv, sv, m63);
      b.vsub_i8(sv, sv, b32);  // sc - 32, -32..31
      b.vstore(scale_slot(q), sv);
    }
  }
  // Per token: fl(d_a * d_w) of the 16 rows, and the offsets -4 * (sum of 4 activations).
  {
    V hw = b.vec(256, Cls::I, "hw"), dw = zmm.f("dw"), zero = zmm.i("zero_i32");
    fetch(kD);
    b.vload(hw, Mem{wb, {}, 1, kD});
    b.vcvt_f16_f32(dw, hw);
    b.vzero(zero);
    for (int t = 0; t < tokens; ++t) {
      V da = zmm.f("da");
      b.vbcast_f32(da, act(t, 0));
      V d = zmm.f("d");
      b.vmul_f(d, dw, da);
      acc.set_d(t, d);
      for (int i = 0; i < 4; ++i) {
        V av = zmm.i("act"), s = zmm.i("sum4");
        b.vload(av, act(t, kAQs + 64 * i));
        b.vzero(s);
        b.vdpbusd(s, m04, av);  // 4 * (sum of the 4 activations of dword 16i + k)
        b.vsub_i32(s, zero, s);
        b.vstore(off_at(t, 2 * i, 0), s);  // dwords 16i .. 16i+15: chunks 2i, 2i+1
      }
    }
  }
  for (int hh = 0; hh < 2; ++hh) {
    // S[c] lane r: sc[2c + hh] of row r, sign-extended, in the low word, 0 in the high word
    // (byte 2 (c % 2) + hh of scale vector c / 2).
    V S[8];
    for (int c = 0; c < 8; ++c) {
      const int byte = 2 * (c % 2) + hh;
      V sv = zmm.i("sv"), t = zmm.i("t");
      b.vload(sv, scale_slot(c / 2));
      if (byte < 3) {
        b.vsll_i32(t, sv, 24 - 8 * byte);
        b.vsra_i32(t, t, 24);
      } else {
        b.vsra_i32(t, sv, 24);
      }
      S[c] = zmm.i("S");
      b.vand(S[c], t, low16);
    }
    for (int l = 4 * hh; l < 4 * hh + 4; ++l) {
      const int base = kQuants + kLaneBytes * l;
      V hm = zmm.i("hmask"), isum[kMaxTokens][2];
      load_w(hm, base + 128);
      for (int j = 0; j < 2; ++j) {
        V qs = zmm.i("qs");
        load_w(qs, base + 64 * j);
        for (int s = 0; s < 4; ++s) {
          const int c = 4 * j + s;
          // u = bits 2s of qs | (bit c of hmask) << 2, 0..7 per byte.
          V lo = zmm.i("lo"), hb = zmm.i("hb");
          if (s > 0) {
            b.vsrl_i16(lo, qs, 2 * s);
            b.vand(lo, lo, m03);
          } else {
            b.vand(lo, qs, m03);
          }
          if (c < 2) b.vsll_i16(hb, hm, 2 - c);
          if (c > 2) b.vsrl_i16(hb, hm, c - 2);
          const V u = lo;  // lo | (hb & 4), into lo (a fresh temporary)
          b.vternlog(u, lo, c == 2 ? hm : hb, m04, 0xF8);
          const int k = chains == 2 ? j : 0;
          for (int t = 0; t < tokens; ++t) {
            // The dot of q = u - 4: from -4 * sum(a) plus u * a, exact.
            V dot = zmm.i("dot");
            b.vbcast_f32(dot, off_at(t, c, l));
            b.vdpbusd_b(dot, u, act(t, kAQs + 32 * c + 4 * l));
            add_scaled_dot(b, isum[t][k], s == 0 && (j == 0 || chains == 2), dot, S[c]);
          }
        }
      }
      for (int t = 0; t < tokens; ++t) {
        V is = isum[t][0];
        if (chains == 2) b.vadd_i32(is, is, isum[t][1]);
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

bool build_linear_q3_K_r16_avx512vnni(const GeneratorParams& params, kir::Module* m,
                                      std::string* err) {
  return build_r16_lanes(
      "linear_q3_K_r16__avx512vnni",
      "ggml_vec_dot_q3_K_q8_K lanes of contract linear.q3_K.ggml on the\nq3_K_r16 weight copy, "
      "lane j of 16 rows per zmm (activations: Q8_K rows from the plan's act_quant step)",
      {kQK_K, int(sizeof(block_q3_K)), kABlock}, kMaxTokens, emit_tile, params, m, err);
}

}  // namespace cke::jit::gen
