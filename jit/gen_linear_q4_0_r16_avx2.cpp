// The q4_0 linear on the weights' q4_0_r16 copy at AVX2 (and AVX-VNNI): the decode gemv
// below, and the prefill gemm's tile (emit_q4_0_r16_gemm_tile_avx2, further down; its entry
// is gen_linear_q_rows16.cpp's). The gemv:
// contract linear.q4_0x8.ggml: per row and block, acc = fma(float(isum), fl(d_w * d_a), acc)
// with isum the block's 32 products as ggml's repacked gemv forms them
// (kernels/ref/linear_dot_repack.cpp q4_0_block_sum, gemv).
//
// Why. The row-major AVX2 tiles (gen_linear_q_avx2.cpp) spend ~57 instructions on a block
// of 4 rows: nibble unpacking per row, 4 vpinsrw for the scales, a horizontal sum per row.
// They ran 23-29 GMAC/s (13-16 GB/s) on one core whether the weights came from DRAM or L3
// (AMD EPYC Zen 5, capped to AVX2): decode at --isa avx2 was compute-bound at half the
// speed of the AVX-512 plan. The q4_0_r16 copy (kernels/formats/layouts.h), made once at
// load for the AVX-512 kernels too, holds each block transposed with lane r = row r, so a
// ymm holds the same dword of 8 rows: no transpose, no horizontal sum, and the 16 rows'
// scales are two loads. A tile is one group of 16 rows (two halves of 8, one per ymm) and
// one token; the token's activation dwords are broadcast once for both halves.
//
// Products. W_d (d = 0..3, rows of a half) = dword d of the rows' quant bytes: low nibbles
// are elements 4d..4d+3, high nibbles 16+4d..; unsigned n = q + 8 (0..15). Then
//  - exact (the usual case): isum = sum_d dot(n, a) - 8 * sum(a), the exact block sum.
//    AVX2: vpmaddubsw pair sums (|2 * 15 * 128| < 2^15) added in int16 lanes over the 8
//    vectors (16 products of at most 15 * 128: 30720, no saturation), one vpmaddwd by 1s;
//    AVX-VNNI: vpdpbusd from -8 * sum(a). Exact integers, so the order is free.
//  - sign-move: ggml's gemv moves the weight's sign onto the activation (vpsignb), which
//    wraps an activation of -128 against a negative weight (lanes::mul_sign_i8). A token
//    whose activation row holds a -128 (only an inf or NaN input makes one) runs this loop:
//    q = n - 8, vpmaddubsw(|q|, vpsignb(a, q)), the same bits as ggml's for every block.
//    The tile scans the row's bytewise minimum first (one vpminsb a block) to choose.
// Float part, one lane per row: fl(d_w * d_a) from the rows' 8 fp16 scales (one vcvtph2ps)
// and the token's; vcvtdq2ps (round to nearest even = float(isum)); one FMA a block.

#include <fmt/format.h>

#include <stdexcept>

#include "jit/gen_linear_q.h"
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

constexpr int kABlock = int(sizeof(block_q8_0));  // 34: fp16 d, 32 int8 quants
constexpr int kAQs = int(offsetof(block_q8_0, qs));
constexpr int kScales = 256;  // the group block's 16 fp16 scales (layouts.h)
static_assert(kQ4_0R16Block == kScales + 32);

int emit_tile(kir::Module& m, const std::string& name, bool vnni) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  const V nib = ymm.splat("nib", 0x0F0F0F0Fu), ones16 = ymm.splat("ones16", 0x00010001u);
  V end = b.i64("end");
  b.muli(end, a.n, kABlock);

  // Does the token's row hold a -128? Its bytewise minimum.
  V sign_move = b.i64("sign_move");
  {
    V amin = ymm.splat("amin", 0x7F7F7F7Fu), x = ymm.i("a32"), off = b.i64("aoff");
    b.for_(off, b.imm(0, "zero_s"), end, b.imm(kABlock, "ablock_s"));
    b.vload(x, Mem{a.a, off, 1, kAQs});
    b.vmin_i8(amin, amin, x);
    b.end_for();
    emit_has_min8_avx2(b, amin, sign_move);
  }

  V acc[2] = {ymm.f("acc_lo"), ymm.f("acc_hi")};  // rows 0-7, 8-15
  b.vzero(acc[0]);
  b.vzero(acc[1]);
  // One pass over the blocks; sign: the sign-move products (see the top).
  auto blocks = [&](bool sign) {
    V ap = b.ptr("ap"), wb = b.ptr("wb"), off = b.i64("off");
    const V eight = sign ? ymm.splat("eight", 0x08080808u) : V{};
    const V ones8 = sign ? V{} : ymm.splat("ones8", 0x01010101u);
    b.mov(wb, a.w);
    b.for_(off, b.imm(0, "zero_i"), end, b.imm(kABlock, "ablock"));
    b.ptr_add(ap, a.a, off, 1);
    auto act = [&](int32_t disp) { return Mem{ap, {}, 1, disp}; };
    auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
    if (stream_prefetch(1))  // the decode tile
      for (int l = 0; l < kQ4_0R16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
    // fl(d_w * d_a) of each half's rows.
    V dd[2];
    {
      V sh = b.vec(128, Cls::I, "da16"), da = ymm.f("da");
      b.vbcast_i16(sh, act(0));
      b.vcvt_f16_f32(da, sh);
      for (int h = 0; h < 2; ++h) {
        V dh = b.vec(128, Cls::I, "dw16"), dw = ymm.f("dw");
        b.vload(dh, w(kScales + 16 * h));
        b.vcvt_f16_f32(dw, dh);
        dd[h] = ymm.f("d");
        b.vmul_f(dd[h], dw, da);
      }
    }
    // -8 * sum(a), in every lane (exact loops).
    V corr;
    if (!sign) {
      V x = ymm.i("a32"), s = ymm.i("pairs"), t = ymm.i("t");
      b.vload(x, act(kAQs));
      b.vmaddubs_w(s, ones8, x);
      b.vmadd_wd(s, s, ones16);  // 8 sums of 4
      b.vhadd_i32(s, s, s);
      b.vhadd_i32(s, s, s);  // each 128-bit block: the sum of its 16
      b.vcombine128(t, s, s, 1);
      b.vadd_i32(s, s, t);  // sum(a), every lane
      corr = ymm.i("corr");
      b.vzero(corr);
      b.vsll_i32(s, s, 3);
      b.vsub_i32(corr, corr, s);
    }
    V isum[2];
    for (int e = 0; e < 8; ++e) {  // e < 4: low nibbles of dword e; else high of dword e - 4
      const int d = e % 4;
      V ab = ymm.i("a_dword");
      b.vbcast_f32(ab, act(kAQs + 4 * e));  // elements 4e..4e+3 of the block
      for (int h = 0; h < 2; ++h) {
        V q = ymm.i("q");
        b.vload(q, w(64 * d + 32 * h));  // lane r: dword d of row 8h + r
        if (e >= 4) b.vsrl_i16(q, q, 4);
        b.vand(q, q, nib);
        if (sign) {
          V sa = ymm.i("sa");
          b.vsub_i8(q, q, eight);  // q - 8: the weight (-8..7)
          b.vsign_i8(sa, ab, q);   // the weight's sign onto the activation
          b.vabs_i8(q, q);
          V p = ymm.i("p");
          b.vmaddubs_w(p, q, sa);
          if (e == 0) {
            isum[h] = p;
          } else {
            b.vadd_i16(isum[h], isum[h], p);
          }
        } else if (vnni) {
          if (e == 0) {
            isum[h] = ymm.i("isum");
            b.vcopy(isum[h], corr);
          }
          b.vdpbusd(isum[h], q, ab);
        } else {
          V p = ymm.i("p");
          b.vmaddubs_w(p, q, ab);
          if (e == 0) {
            isum[h] = p;
          } else {
            b.vadd_i16(isum[h], isum[h], p);
          }
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      V s = isum[h];
      if (sign || !vnni) {
        s = ymm.i("isum32");
        b.vmadd_wd(s, isum[h], ones16);
        if (!sign) b.vadd_i32(s, s, corr);
      }
      V f = ymm.f("fsum");
      b.vcvt_i32_f32(f, s);
      b.vfma(acc[h], f, dd[h]);  // acc = fma(float(isum), fl(d_w * d_a), acc)
    }
    b.addi(wb, wb, kQ4_0R16Block);
    b.end_for();
  };
  b.if_(sign_move, kir::Cmp::EQ, 0);
  blocks(false);
  b.end_if();
  b.if_(sign_move, kir::Cmp::NE, 0);
  blocks(true);
  b.end_if();

  V frame = b.ptr("frame");
  b.ptr_align(frame, b.stack(128, "frame_raw"), 32);
  store_rows16_avx2(b, a.y, a.nrows, acc[0], acc[1], Mem{frame, {}, 1, 0});
  return b.index();
}

}  // namespace

// The prefill tile (build_q4_0x8_rows16, Rows16Isa::Avx2 / AvxVnni): one 16-row group x
// `tokens` tokens of the pack, one half (8 rows, one ymm a token) at a time. A half's
// registers: an accumulator and an int16 (or int32) block sum per token, the low and high
// nibbles of one weight dword; four tokens fit the 16 ymm. The second half re-reads the
// group's blocks from L1/L2 (16 rows x K = 2048 are 18 KiB), and only the first prefetches.
// Exact products as in the gemv: vpmaddubsw pair sums added in int16 over the block (at most
// 30720), one vpmaddwd by 1s and -8 * sum(a) from the pack; AVX-VNNI: vpdpbusd from
// -8 * sum(a). Sign-move (the gemv's tokens of a chunk that holds a -128): q - 8, vpsignb,
// vpmaddubsw(|q|, a'), 16 products of at most 8 * 128 per lane.
int emit_q4_0_r16_gemm_tile_avx2(kir::Module& m, const std::string& name, int tokens,
                                 Q4_0Products products, bool vnni, const Q4_0Pack& pack) {
  if (tokens < 1 || tokens > 4 || tokens > pack.group)
    throw std::logic_error("gen: the AVX2 q4_0_r16 gemm tile takes 1..4 tokens");
  const bool sign = products == Q4_0Products::SignMove;
  const bool dp = vnni && !sign;  // vpdpbusd into int32 sums
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const VecOf ymm{b, 256};
  const V nib = ymm.splat("nib", 0x0F0F0F0Fu);
  const V ones16 = dp ? V{} : ymm.splat("ones16", 0x00010001u);
  const V eight = sign ? ymm.splat("eight", 0x08080808u) : V{};
  V end = b.i64("end"), frame = b.ptr("frame");
  b.muli(end, a.n, kQ4_0R16Block);
  b.ptr_align(frame, b.stack(64, "frame_raw"), 32);
  for (int h = 0; h < 2; ++h) {  // rows 8h .. 8h + 7
    V acc[4];
    for (int t = 0; t < tokens; ++t) {
      acc[t] = ymm.f("acc");
      b.vzero(acc[t]);
    }
    V wb = b.ptr("wb"), pk = b.ptr("pk"), off = b.i64("off");
    b.mov(pk, a.a);
    b.for_(off, b.imm(0, "zero_i"), end, b.imm(kQ4_0R16Block, "block_bytes"));
    b.ptr_add(wb, a.w, off, 1);
    auto w = [&](int32_t disp) { return Mem{wb, {}, 1, disp}; };
    auto act = [&](int t, int dword) { return Mem{pk, {}, 1, 32 * t + 4 * dword}; };
    if (h == 0 && stream_prefetch(tokens))
      for (int l = 0; l < kQ4_0R16Block; l += 64) b.vprefetch(w(kStreamPrefetchAhead + l));
    V isum[4], isum_hi[4];
    for (int d = 0; d < 4; ++d) {
      V q = ymm.i("q"), lo = ymm.i("lo"), hi = ymm.i("hi");
      b.vload(q, w(64 * d + 32 * h));  // lane r: dword d of row 8h + r
      b.vand(lo, q, nib);              // elements 4d .. 4d + 3
      b.vsrl_i16(hi, q, 4);
      b.vand(hi, hi, nib);  // elements 16 + 4d ..
      if (sign) {
        b.vsub_i8(lo, lo, eight);  // the weights q - 8 (-8..7)
        b.vsub_i8(hi, hi, eight);
      }
      for (int t = 0; t < tokens; ++t) {
        for (int half_k = 0; half_k < 2; ++half_k) {
          const V wq = half_k == 0 ? lo : hi;
          V ab = ymm.i("a_dword");
          b.vbcast_f32(ab, act(t, d + 4 * half_k));
          if (dp) {  // two chains a token (low, high nibbles): half the dependent vpdpbusd
            V& chain = half_k == 0 ? isum[t] : isum_hi[t];
            if (d == 0) {
              chain = ymm.i("isum");
              if (half_k == 0) {
                b.vbcast_f32(chain, Mem{pk, {}, 1, pack.corr() + 4 * t});  // -8 * sum(a)
              } else {
                b.vzero(chain);
              }
            }
            b.vdpbusd(chain, wq, ab);
            continue;
          }
          V p = ymm.i("p");
          if (sign) {
            V aw = ymm.i("aw");
            b.vsign_i8(ab, ab, wq);  // the weight's sign onto the activation
            b.vabs_i8(aw, wq);
            b.vmaddubs_w(p, aw, ab);
          } else {
            b.vmaddubs_w(p, wq, ab);
          }
          if (d == 0 && half_k == 0) {
            isum[t] = p;
          } else {
            b.vadd_i16(isum[t], isum[t], p);
          }
        }
      }
    }
    V dw = ymm.f("dw");
    {
      V dh = b.vec(128, Cls::I, "dw16");
      b.vload(dh, w(kScales + 16 * h));
      b.vcvt_f16_f32(dw, dh);
    }
    for (int t = 0; t < tokens; ++t) {
      V s32 = isum[t];
      if (dp) b.vadd_i32(s32, s32, isum_hi[t]);
      if (!dp) {
        s32 = ymm.i("isum32");
        b.vmadd_wd(s32, isum[t], ones16);
        if (!sign) {
          V corr = ymm.i("corr");
          b.vbcast_f32(corr, Mem{pk, {}, 1, pack.corr() + 4 * t});  // -8 * sum(a)
          b.vadd_i32(s32, s32, corr);
        }
      }
      V da = ymm.f("da");
      b.vbcast_f32(da, Mem{pk, {}, 1, pack.scale() + 4 * t});
      fma_block(b, acc[t], s32, dw, da);  // acc = fma(float(isum), fl(d_w * d_a), acc)
    }
    b.addi(pk, pk, pack.block());
    b.end_for();

    V rows = b.i64("rows_h"), yt = b.ptr("yt");
    b.addi(rows, a.nrows, -8 * h);
    b.ptr_add(yt, a.y, b.imm(32 * h, "half_off"), 1);
    for (int t = 0; t < tokens; ++t) {
      if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
      store_rows8_avx2(b, yt, rows, acc[t], Mem{frame, {}, 1, 0});
    }
  }
  return b.index();
}

namespace {

bool build(const char* gen, bool vnni, const GeneratorParams& p, kir::Module* m, std::string* err) {
  int rows = 16, tokens = 1;
  if (!int_params(p, gen, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (tokens != 4)
    return build_r16_avx2(
        gen, vnni,
        "the repacked 8x8 gemv arithmetic of contract linear.q4_0x8.ggml\n(weights: the "
        "q4_0_r16 copy made at load; activations: q8_0 rows from the plan's "
        "act_quant step)",
        {kQK4_0, int(sizeof(block_q4_0)), kABlock}, 1,
        [](kir::Module& mod, const std::string& n, bool v, int) { return emit_tile(mod, n, v); }, p,
        m, err);
  if (rows != 16) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows 16, tokens 1: decode, or 4)", gen,
        rows, tokens);
    return false;
  }
  m->isa = isa_features(Isa::Avx2);
  if (vnni) m->isa.push_back("avxvnni");
  m->comment = fmt::format(
      "generator {}, rows 16, tokens 4: repacked 8x8 gemm/gemv arithmetic of contract "
      "linear.q4_0x8.ggml\n(weights: the q4_0_r16 copy made at load; activations: q8_0 rows "
      "from the plan's act_quant step)",
      gen);
  Builder e = open_linear_entry(*m, m->name);
  build_q4_0x8_rows16(e, *m, m->name, Rows16Weights::R16, Rows16Split::Contract,
                      vnni ? Rows16Isa::AvxVnni : Rows16Isa::Avx2);
  return true;
}

}  // namespace

bool build_linear_q4_0_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_0_r16__avx2", false, p, m, err);
}
bool build_linear_q4_0_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_0_r16__avxvnni", true, p, m, err);
}

}  // namespace cke::jit::gen
