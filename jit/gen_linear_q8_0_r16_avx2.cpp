// The tile of the q8_0 linear on the weights' q8_0_r16 copy at AVX2 and AVX-VNNI (its entry
// is gen_linear_q8_0_r16.cpp's), contract linear.q8_0.ggml: ggml_vec_dot_q8_0_q8_0's 8
// float lanes per output, lane j of a row in lane r of a vector of 8 rows. It runs Q5_0 on
// its q5_0_r16 copy too (linear.q5_0.ggml, the same lanes with q = x - 16): each lane vector
// is then made from the copy's nibbles and reordered high bits (Q8_0R16Form, gen_linear_q.h),
// 5-6 ops where q8_0 loads it; and Q4_1 / Q5_1 on theirs (linear.q{4,5}_1.ggml: unsigned
// weight integers, whose vpmaddubsw pairs cannot saturate, so every level takes the exact
// products with no correction; plus the min term, a loop of its own per chunk and half).
//
// Why this shape. The row-major AVX2 tiles (gen_linear_q_avx2.cpp) form each row's 8 lanes
// in one ymm and need a scale product per row and token as a vector plus a horizontal sum
// per row; their prefill ran 48 GMAC/s on one core (AMD EPYC Zen 5, capped to AVX2). On the
// copy a ymm holds dword j of 8 rows (rows 8h.., h = 0, 1: the group's two halves), so the
// 8 rows' scale products of a token are one vmulps a block, shared by the lanes, and hsum8
// is vertical adds at the end. What is left per lane, token and 32 MACs is the contract's
// own work: the 4-product int32 sum, one vcvtdq2ps, one FMA.
//
// Registers and passes. A half's accumulators are 8 lanes x T tokens ymm; 16 registers hold
// 8 of them with the tokens' scale products and temporaries. So the accumulators live in
// the frame, and the tile walks K in chunks of a few blocks: per chunk, each half makes
// 8 / L passes over the chunk's blocks, each for L = 8 / T lanes (T = 1, the decode gemv:
// one pass a half; T = 4, the prefill tile: four passes of 2 lanes), loading its lanes'
// accumulators before and storing them after. Every lane is still one FMA chain in block
// order, so the bits are the contract's; only the first pass of a chunk reads it from
// beyond L1. The chunk is short for one token (2 blocks: the two halves' passes then keep
// the DRAM stream busy, 27-28 GB/s on one core against 20 with one pass over all of K per
// half) and longer for more (16: the accumulators' loads and stores amortized); the 4-token
// tile ran 55-61 GMAC/s (AVX-VNNI 66-72) against the row-major tiles' 48, where 2 tokens
// ran 46-55 (51-63): the weight vectors are L1 loads shared by the tokens.
//
// Products (the copy holds u = q + 128; q5_0: u = x, q = u - 16, the same identities):
//  - exact (AVX-VNNI): vpdpbusd(u, a) from the pack's -128 * (sum of the lane's 4 a), the
//    exact int32 sum of q * a (as the AVX-512 kernel);
//  - sign-move: ggml's own form, q = u xor 0x80, vpmaddubsw(|q|, vpsignb(a, q)), vpmaddwd by
//    1s (AVX-VNNI: one vpdpbusd from 0). Pair sums lie in [-32768, 32512]: no saturation. It
//    differs from the exact sum only where vpsignb wraps (an activation of -128, which only
//    an inf or NaN input makes, against a negative weight), where it is ggml's bits. Plain
//    AVX2 has no exact form (vpmaddubsw(u, a) saturates), so its tiles are all sign-move:
//    ggml's bits for any input.
#include <fmt/format.h>

#include <stdexcept>

#include "jit/gen_linear_q.h"
#include "jit/gen_rows16.h"
#include "jit/gen_tile.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

namespace {

constexpr int kLanes = 8;  // ggml's float lanes per output

}  // namespace

int emit_q8_0_r16_tile_avx2(kir::Module& m, const std::string& name, int tokens,
                            Q8_0Products products, bool vnni, Q8_0R16Form wf) {
  if (tokens < 1 || tokens > 4)
    throw std::logic_error("gen: the AVX2 q8_0_r16 tile takes 1..4 tokens");
  const bool exact = products == Q8_0Products::Exact, min = wf.has_min();
  if (exact && !vnni && !min) throw std::logic_error("gen: exact q8_0_r16 products need AVX-VNNI");
  if (min && !exact) throw std::logic_error("gen: q4_1 / q5_1 tiles take the exact products");
  const int lanes = tokens == 1 ? 8 : tokens == 2 ? 4 : 2, passes = kLanes / lanes;
  const int chunk = tokens == 1 ? 2 : 16;  // blocks (see the top)
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  // q from u: u xor 0x80 (q8_0), u - 16 (q5_0)
  const V to_q = exact ? V{} : ymm.splat("to_q", wf.high_bit() ? 0x10101010u : 0x80808080u);
  const V m0f = wf.nibbles() ? ymm.splat("m0f", 0x0F0F0F0Fu) : V{};
  const V m10 = wf.high_bit() ? ymm.splat("m10", 0x10101010u) : V{};
  const V ones16 = vnni || (exact && !min) ? V{} : ymm.splat("ones16", 0x00010001u);
  V end = b.i64("end"), frame = b.ptr("frame");
  const int block = wf.block();
  b.muli(end, a.n, block);
  // The lane accumulators (32 bytes a half, token and lane), 32 bytes of store scratch, and
  // the chunk's scale products fl(d_w * d_a) of the half for the passes after its first
  // (32 bytes a block and token), then (q4_1, q5_1) the min sums (32 bytes a half and token).
  const int scratch = 32 * 2 * tokens * kLanes, dprod = scratch + 32,
            msum = dprod + 32 * chunk * tokens;
  b.ptr_align(frame, b.stack(msum + 64 * tokens + 32, "frame_raw"), 32);
  auto slot = [&](int h, int t, int j) {
    return Mem{frame, {}, 1, 32 * ((h * tokens + t) * kLanes + j)};
  };
  auto summs_slot = [&](int h, int t) { return Mem{frame, {}, 1, msum + 32 * (h * tokens + t)}; };
  {
    V z = ymm.f("zero");
    b.vzero(z);
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < tokens; ++t) {
        for (int j = 0; j < kLanes; ++j) b.vstore(slot(h, t, j), z);
        if (min) b.vstore(summs_slot(h, t), z);
      }
  }
  // Chunks of `chunk` blocks: every pass of a chunk reads it from L1.
  V c0 = b.i64("c0"), cend = b.i64("cend"), pkc = b.ptr("pkc");
  b.mov(pkc, a.a);
  b.for_(c0, b.imm(0, "zero_c"), end, b.imm(int64_t(chunk) * block, "chunk_bytes"));
  b.addi(cend, c0, int64_t(chunk) * block);
  b.min(cend, cend, end);
  for (int h = 0; h < 2; ++h) {  // rows 8h .. 8h + 7
    if (min) {
      // The min term of the half's rows over the chunk, in block order: summs = fma(m_w, s_a,
      // summs) (ggml's contracted `summs += m * s`), a loop of its own (few registers).
      V summs[4];
      for (int t = 0; t < tokens; ++t) {
        summs[t] = ymm.f("summs");
        b.vload(summs[t], summs_slot(h, t));
      }
      V wb = b.ptr("wb_m"), pk = b.ptr("pk_m"), off = b.i64("off_m");
      b.mov(pk, pkc);
      b.for_(off, c0, cend, b.imm(block, "block_bytes_m"));
      b.ptr_add(wb, a.w, off, 1);
      V mh = b.vec(128, Cls::I, "mh"), mw = ymm.f("mw");
      b.vload(mh, Mem{wb, {}, 1, wf.min() + 16 * h});
      b.vcvt_f16_f32(mw, mh);
      for (int t = 0; t < tokens; ++t) {
        V sa = ymm.f("sa");
        b.vbcast_f32(sa, Mem{pk, {}, 1, kOffPackCorr + 32 * t});  // the pack's s (f32)
        b.vfma(summs[t], mw, sa);
      }
      b.addi(pk, pk, kOffPack);
      b.end_for();
      for (int t = 0; t < tokens; ++t) b.vstore(summs_slot(h, t), summs[t]);
    }
    for (int p = 0; p < passes; ++p) {  // lanes pL .. pL + L - 1
      V acc[4][kLanes];
      for (int t = 0; t < tokens; ++t)
        for (int l = 0; l < lanes; ++l) {
          acc[t][l] = ymm.f("acc");
          b.vload(acc[t][l], slot(h, t, p * lanes + l));
        }
      V wb = b.ptr("wb"), pk = b.ptr("pk"), off = b.i64("off"), db = b.ptr("db");
      b.mov(pk, pkc);
      if (passes > 1) b.ptr_add(db, frame, b.imm(dprod, "dprod"), 1);
      b.for_(off, c0, cend, b.imm(block, "block_bytes"));
      b.ptr_add(wb, a.w, off, 1);
      auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
      // into L2, as the AVX-512 kernel (gen_linear_q8_0_r16.cpp)
      if (h == 0 && p == 0 && stream_prefetch(tokens))
        for (int l = 0; l < block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
      // d[t] = fl(d_w * d_a) for the half's 8 rows: made by the first pass, then reloaded.
      V d[4];
      if (p > 0) {
        for (int t = 0; t < tokens; ++t) {
          d[t] = ymm.f("d");
          b.vload(d[t], Mem{db, {}, 1, 32 * t});
        }
      } else {
        V dh = b.vec(128, Cls::I, "dw16"), dw = ymm.f("dw");
        b.vload(dh, w(wf.scale() + 16 * h));
        b.vcvt_f16_f32(dw, dh);
        for (int t = 0; t < tokens; ++t) {
          V da = ymm.f("da");
          b.vbcast_f32(da, Mem{pk, {}, 1, kOffPackScale + 4 * t});
          d[t] = ymm.f("d");
          b.vmul_f(d[t], dw, da);
          if (passes > 1) b.vstore(Mem{db, {}, 1, 32 * t}, d[t]);
        }
      }
      V qh;
      if (wf.high_bit()) {
        qh = ymm.i("qh");
        b.vload(qh, w(wf.qh() + 32 * h));  // lane r: row 8h + r's reordered high bits
      }
      for (int l = 0; l < lanes; ++l) {
        const int j = p * lanes + l;
        V u = ymm.i("u"), q, aq;
        if (wf.high_bit()) {  // u = x of row 8h + r's elements 4j..4j+3 (0..31)
          V hb = ymm.i("hb");
          if (j < 4) b.vsll_i32(hb, qh, 4 - j);
          if (j > 4) b.vsrl_i32(hb, qh, j - 4);
          b.vand(hb, j == 4 ? qh : hb, m10);
          V nib = ymm.i("nib");
          b.vload(nib, w(64 * (j % 4) + 32 * h));
          if (j >= 4) b.vsrl_i32(nib, nib, 4);
          b.vand(nib, nib, m0f);
          b.vor(u, nib, hb);
        } else if (wf.nibbles()) {  // q4_1: u = the nibbles of elements 4j..4j+3 (0..15)
          b.vload(u, w(64 * (j % 4) + 32 * h));
          if (j >= 4) b.vsrl_i32(u, u, 4);
          b.vand(u, u, m0f);
        } else {
          b.vload(u, w(64 * j + 32 * h));  // lane r: q + 128 of row 8h + r's elements 4j..4j+3
        }
        if (!exact) {  // q and |q|, for ggml's sign move
          q = ymm.i("q");
          if (wf.high_bit())
            b.vsub_i8(q, u, to_q);
          else
            b.vxor(q, u, to_q);
          aq = ymm.i("aq");
          b.vabs_i8(aq, q);
        }
        for (int t = 0; t < tokens; ++t) {
          V act = ymm.i("act"), s = ymm.i("isum");
          b.vbcast_f32(act, Mem{pk, {}, 1, 32 * t + 4 * j});  // activation dword j (bits)
          // s = the int32 lane sums of x (unsigned bytes) times act: vpdpbusd from 0, or
          // vpmaddubsw pairs (no saturation for the x given here) and vpmaddwd by 1s.
          auto unsigned_dot = [&](V x) {
            if (vnni) {
              b.vzero(s);
              b.vdpbusd(s, x, act);
            } else {
              V pr = ymm.i("pairs");
              b.vmaddubs_w(pr, x, act);
              b.vmadd_wd(s, pr, ones16);
            }
          };
          if (min) {  // u is the weight integer (0..31): pair sums <= 2 * 31 * 128, exact
            unsigned_dot(u);
          } else if (exact) {
            // -128 * sum(a) (q8_0), -16 * sum(a) (q5_0)
            b.vbcast_f32(s, Mem{pk, {}, 1, kOffPackCorr + 32 * t + 4 * j});
            b.vdpbusd(s, u, act);  // sum u a + the correction = sum q a
          } else {
            b.vsign_i8(act, act, q);  // the weight's sign onto the activation
            unsigned_dot(aq);
          }
          V f = ymm.f("fsum");
          b.vcvt_i32_f32(f, s);
          b.vfma(acc[t][l], d[t], f);  // acc = fma(fl(d_w * d_a), float(isum), acc)
        }
      }
      b.addi(pk, pk, kOffPack);
      if (passes > 1) b.addi(db, db, 32 * tokens);
      b.end_for();
      for (int t = 0; t < tokens; ++t)
        for (int l = 0; l < lanes; ++l) b.vstore(slot(h, t, p * lanes + l), acc[t][l]);
    }
  }
  b.addi(pkc, pkc, int64_t(chunk) * kOffPack);
  b.end_for();

  // hsum8 of each half's lanes, then its rows of every token.
  for (int h = 0; h < 2; ++h) {
    V rows = b.i64("rows_h"), yt = b.ptr("yt");
    b.addi(rows, a.nrows, -8 * h);
    b.ptr_add(yt, a.y, b.imm(32 * h, "half_off"), 1);
    for (int t = 0; t < tokens; ++t) {
      V lane[kLanes];
      for (int j = 0; j < kLanes; ++j) {
        lane[j] = ymm.f("lane");
        b.vload(lane[j], slot(h, t, j));
      }
      if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
      V h8 = hsum8_rows(b, lane);
      if (min) {  // hsum8(acc) + summs
        V sm = ymm.f("summs_out");
        b.vload(sm, summs_slot(h, t));
        b.vadd_f(h8, h8, sm);
      }
      store_rows8_avx2(b, yt, rows, h8, Mem{frame, {}, 1, scratch});
    }
  }
  return b.index();
}

}  // namespace cke::jit::gen
