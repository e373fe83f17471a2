// Generated linear kernels for Q6_K weights (contract linear.q6_K.ggml), AVX-512 VNNI and AVX2:
// ggml_vec_dot_q6_K_q8_K's lanes (kernels/ref/linear_dot_k.cpp), written once in KIR.
//
// Per super-block of 256 and per output, ggml's 8 int32 lanes: lane l of 32-element chunk c
// dots elements 32c+4l..+3 (the 6-bit quants 0..63, unsigned, against the Q8_K int8
// activations: one vpdpbusd, exact) times the chunk's half scale sc[2c + (l >= 4)]; the lanes
// of all 8 chunks add up (exact int32; formed as ggml's AVX2 code does, vpmaddubsw pair
// sums times the scale by vpmaddwd / vpdpwssd), then lose the -32 offset as ggml does, through the
// bsums: 32 * (bsum[2l]*sc[2l] + bsum[2l+1]*sc[2l+1]) (vpmaddwd); then one FMA per
// super-block acc = fma(fl(d_a * d_w), float(isum), acc), and hsum8 at the end.
//
// A zmm holds two chunks (lanes 0-7 and 8-15); quants are rebuilt from ql (low nibbles of
// chunks 0/1, high nibbles of 2/3 of each half) and qh (2 bits per chunk). Tiles: 1 row x 1..8
// tokens (the row's unpacked quants and scales are shared by the tokens; pairs of tokens
// share the super-block's finishing operations in one zmm, lane by lane). The AVX2 level
// computes the same lanes one chunk per ymm (see emit_tile_avx2).
#include "jit/gen_linear_q6_K.h"

#include <fmt/format.h>

#include "jit/gen_tile.h"
#include "kernels/formats/blocks.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int kWBlock = int(sizeof(block_q6_K));  // 210: ql 0, qh 128, scales 192, d 208
constexpr int kABlock = int(sizeof(block_q8_K));  // 292: d 0, qs 4, bsums 260

// The end of a super-block for one token: isum8 (the 8 lanes of scaled chunk dots) loses the
// -32 offset through the bsums, then acc = fma(fl(d_a * d_w), float(isum), acc).
void finish_block(Builder& b, V isum8, const TokenRows& tr, int t, V sc16, V dw, V acc) {
  V bs = b.vec(256, Cls::I, "bsums"), corr = b.vec(256, Cls::I, "corr");
  b.vload(bs, tr.at(t, 260));
  b.vmadd_wd(corr, bs, sc16);
  b.vsll_i32(corr, corr, 5);  // the -32 offset, as ggml takes it
  b.vsub_i32(isum8, isum8, corr);
  V fsum = b.vec(256, Cls::F, "fsum"), da = b.vec(256, Cls::F, "da"), d = b.vec(256, Cls::F, "d");
  b.vcvt_i32_f32(fsum, isum8);
  b.vbcast_f32(da, tr.at(t, 0));
  b.vmul_f(d, da, dw);  // fl(d_a * d_w)
  b.vfma(acc, d, fsum);
}

void store_rows(Builder& b, const TileArgs& a, const V acc[], int tokens) {
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    b.vstore_ss(Mem{yt, {}, 1, 0}, hsum8(b, acc[t]));
  }
}

// AVX2: one chunk per ymm, vpmaddubsw + vpmaddwd(scale in both words) for the scaled
// 4-element lane dots (exact: |pair sum| <= 2 * 63 * 128 < 32768), one token per tile.
int emit_tile_avx2(kir::Module& m, const std::string& name) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  TokenRows tr = token_rows(b, a.a, a.as, 1);
  V nib = b.vec(256, Cls::I, "nib"), two = b.vec(256, Cls::I, "two_bits");
  b.vsplat32(nib, 0x0F0F0F0Fu);
  b.vsplat32(two, 0x03030303u);
  // Scale lanes of chunk c (c % 4 = k): lanes 0-3 half scale 2k, 4-7 2k + 1 of its scale
  // vector (scales 0-7 or 8-15). Made once, outside the block loop.
  V idx[4];
  for (int k = 0; k < 4; ++k) {
    const uint32_t i0 = uint32_t(2 * k);
    idx[k] = b.vec(256, Cls::I, "scale_idx");
    b.vconst32(idx[k], {i0, i0, i0, i0, i0 + 1, i0 + 1, i0 + 1, i0 + 1});
  }
  V acc = b.vec(256, Cls::F, "acc");
  b.vzero(acc);
  V off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kWBlock);
  b.for_(off, b.imm(0, "zero"), end, b.imm(kWBlock, "block_bytes"));
  const V w = a.w;
  V sc8 = b.vec(128, Cls::I, "sc8"), sc_hi8 = b.vec(128, Cls::I, "sc_hi8"),
    sc16 = b.vec(256, Cls::I, "sc16");
  V scl[2] = {b.vec(256, Cls::I, "sc32_lo"), b.vec(256, Cls::I, "sc32_hi")};
  b.vload(sc8, Mem{w, off, 1, 192});
  b.vunpack_hi64(sc_hi8, sc8, sc8);  // scales 8-15 in the low bytes (no read past the block)
  b.vsx_bd(scl[0], sc8);             // scales 0-7
  b.vsx_bd(scl[1], sc_hi8);          // scales 8-15
  for (V& v : scl) {  // each scale in both words of its dword: the pmaddwd multiplier
    V hi = b.vec(256, Cls::I, "sc_hi");
    b.vsll_i32(hi, v, 16);
    b.vsrl_i32(v, hi, 16);
    b.vor(v, v, hi);
  }
  b.vsx_bw(sc16, sc8);
  V dh = b.vec(128, Cls::I, "dh"), dw = b.vec(256, Cls::F, "dw");
  b.vbcast_i16(dh, Mem{w, off, 1, 208});
  b.vcvt_f16_f32(dw, dh);
  V isum = b.vec(256, Cls::I, "isum");
  b.vzero(isum);
  for (int c = 0; c < 8; ++c) {
    const int h = c / 4, sub = c % 4;
    V l = b.vec(256, Cls::I, "ql"), qh = b.vec(256, Cls::I, "qh");
    b.vload(l, Mem{w, off, 1, 64 * h + 32 * (sub & 1)});
    b.vload(qh, Mem{w, off, 1, 128 + 32 * h});
    if (sub >= 2) b.vsrl_i16(l, l, 4);
    b.vand(l, l, nib);
    if (sub > 0) b.vsrl_i16(qh, qh, 2 * sub);
    b.vand(qh, qh, two);
    b.vsll_i16(qh, qh, 4);
    V q = b.vec(256, Cls::I, "q");
    b.vor(q, l, qh);
    V sc = b.vec(256, Cls::I, "s");
    b.vperm_d(sc, scl[c / 4], idx[c % 4]);
    V act = b.vec(256, Cls::I, "act"), dot = b.vec(256, Cls::I, "dot");
    b.vload(act, tr.at(0, 4 + 32 * c));
    b.vmaddubs_w(dot, q, act);  // |2 * 63 * 128| < 32768: no saturation
    b.vmadd_wd(dot, dot, sc);   // s * (pair sum + pair sum), exact
    b.vadd_i32(isum, isum, dot);
  }
  finish_block(b, isum, tr, 0, sc16, dw, acc);
  b.addi(tr.base, tr.base, kABlock);
  b.end_for();
  store_rows(b, a, &acc, 1);
  return b.index();
}

// The end of a super-block for tokens t and t + 1 at once, one zmm for both (lanes 0-7: t,
// 8-15: t + 1): the same operations lane by lane as finish_block, so the same bits. isum_t,
// isum_u hold the two chunk halves of each token (lanes 0-7 and 8-15 of chunk pairs).
void finish_pair(Builder& b, V isum_t, V isum_u, Mem bs_t, Mem bs_u, Mem da_t, Mem da_u, V sc16z,
                 V dwz, V acc) {
  V lo = b.vec(512, Cls::I, "pair_lo"), hi = b.vec(512, Cls::I, "pair_hi");
  b.vshuf128(lo, isum_t, isum_u, 0x44);  // [t lanes 0-7 | u lanes 0-7]
  b.vshuf128(hi, isum_t, isum_u, 0xEE);  // [t lanes 8-15 | u lanes 8-15]
  b.vadd_i32(lo, lo, hi);
  V bs = b.vec(512, Cls::I, "bsums2"), bu = b.vec(256, Cls::I, "bsums_u"),
    corr = b.vec(512, Cls::I, "corr2");
  b.vbcast256(bs, bs_t);
  b.vload(bu, bs_u);
  b.vinsert(bs, bs, bu, 1);
  b.vmadd_wd(corr, bs, sc16z);
  b.vsll_i32(corr, corr, 5);  // the -32 offset, as ggml takes it
  b.vsub_i32(lo, lo, corr);
  V fsum = b.vec(512, Cls::F, "fsum2"), da = b.vec(512, Cls::F, "da2"),
    du = b.vec(256, Cls::F, "da_u"), d = b.vec(512, Cls::F, "d2");
  b.vcvt_i32_f32(fsum, lo);
  b.vbcast_f32(da, da_t);
  b.vbcast_f32(du, da_u);
  b.vinsert(da, da, du, 1);
  b.vmul_f(d, da, dwz);  // fl(d_a * d_w) per token
  b.vfma(acc, d, fsum);
}

int emit_tile(kir::Module& m, const std::string& name, int tokens) {
  Builder b(
      m, name,
      {Kind::Ptr, Kind::I64, Kind::I64, Kind::Ptr, Kind::I64, Kind::Ptr, Kind::I64, Kind::I64});
  const TileArgs a = begin_tile(b);
  const TokenRows8 tr = token_rows8(b, a.a, a.as, tokens);
  auto act = [&](int t, int32_t disp) { return tr.at(t, disp); };
  V nib = b.vec(512, Cls::I, "nib"), two = b.vec(512, Cls::I, "two_bits");
  b.vsplat32(nib, 0x0F0F0F0Fu);
  b.vsplat32(two, 0x03030303u);
  // Scale lanes of chunk pair k (chunks 2k, 2k+1): half scales 4k + [0,0,0,0,1,1,1,1,...].
  V idx[4];
  for (int k = 0; k < 4; ++k) {
    idx[k] = b.vec(512, Cls::I, "scale_idx");
    std::vector<uint32_t> lanes;
    for (int l = 0; l < 16; ++l) lanes.push_back(uint32_t(4 * k + l / 4));
    b.vconst32(idx[k], lanes);
  }
  // Accumulators: one zmm per pair of tokens (lanes 0-7 the first, 8-15 the second); a last
  // odd token its own ymm.
  const int pairs = tokens / 2;
  V pacc[4], sacc;
  for (int p = 0; p < pairs; ++p) {
    pacc[p] = b.vec(512, Cls::F, "acc2");
    b.vzero(pacc[p]);
  }
  if (tokens % 2) {
    sacc = b.vec(256, Cls::F, "acc");
    b.vzero(sacc);
  }
  V off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, kWBlock);
  const RowPrefetch pf = row_prefetch(b, a, 1);
  b.for_(off, b.imm(0, "zero"), end, b.imm(kWBlock, "block_bytes"));
  const V w = a.w;
  prefetch_rows(b, {w}, off, kWBlock, pf);
  // The row's scales: int16 lanes (for the bsums; sc16z both halves for token pairs), and
  // each scale in both words of a dword (the vpdpwssd multiplier of a lane's two pair sums).
  V sc8 = b.vec(128, Cls::I, "sc8"), sc32 = b.vec(512, Cls::I, "sc32"),
    sc16 = b.vec(256, Cls::I, "sc16"), hi = b.vec(512, Cls::I, "sc_hi");
  b.vload(sc8, Mem{w, off, 1, 192});
  b.vsx_bd(sc32, sc8);
  b.vsll_i32(hi, sc32, 16);
  b.vsrl_i32(sc32, hi, 16);
  b.vor(sc32, sc32, hi);
  b.vsx_bw(sc16, sc8);
  V dw, sc16z, dwz;
  if (tokens % 2) {
    V dh = b.vec(128, Cls::I, "dh");
    dw = b.vec(256, Cls::F, "dw");
    b.vbcast_i16(dh, Mem{w, off, 1, 208});
    b.vcvt_f16_f32(dw, dh);
  }
  if (pairs > 0) {
    V zero = b.vec(512, Cls::I, "zero");
    b.vzero(zero);
    sc16z = b.vec(512, Cls::I, "sc16z");
    b.vinsert(sc16z, zero, sc16, 0);
    b.vinsert(sc16z, sc16z, sc16, 1);
    V dh16 = b.vec(256, Cls::I, "dh16");
    dwz = b.vec(512, Cls::F, "dwz");
    b.vbcast_i16(dh16, Mem{w, off, 1, 208});
    b.vcvt_f16_f32(dwz, dh16);
  }
  // Quants of chunk pairs k = 2h + p (0..63 as bytes) and their scale lanes.
  V q[4], s[4];
  for (int h = 0; h < 2; ++h) {
    V ab = b.vec(512, Cls::I, "ab"), bq = b.vec(256, Cls::I, "ql_b");
    b.vbcast256(ab, Mem{w, off, 1, 64 * h});
    b.vload(bq, Mem{w, off, 1, 64 * h + 32});
    b.vinsert(ab, ab, bq, 1);  // [ql A | ql B]
    V qq = b.vec(512, Cls::I, "qq"), q2 = b.vec(256, Cls::I, "qh2");
    b.vbcast256(qq, Mem{w, off, 1, 128 + 32 * h});
    b.vsrl_i16(q2, b.view(qq, 256, Cls::I), 2);
    b.vinsert(qq, qq, q2, 1);  // [qh | qh >> 2]
    for (int p = 0; p < 2; ++p) {
      V lo = b.vec(512, Cls::I, "lo"), hi = b.vec(512, Cls::I, "hi");
      if (p == 0) {
        b.vand(lo, ab, nib);
        b.vand(hi, qq, two);
      } else {  // chunks 2, 3: high nibbles, qh bits 4-5 (and 6-7 via the >> 2 copy)
        b.vsrl_i16(lo, ab, 4);
        b.vand(lo, lo, nib);
        b.vsrl_i16(hi, qq, 4);
        b.vand(hi, hi, two);
      }
      b.vsll_i16(hi, hi, 4);
      const int k = 2 * h + p;
      q[k] = b.vec(512, Cls::I, "q");
      b.vor(q[k], lo, hi);
      s[k] = b.vec(512, Cls::I, "s");
      b.vperm_d(s[k], sc32, idx[k]);
    }
  }
  // isum of token t: the scaled lane dots of the four chunk pairs (lanes 0-7 chunk 2k,
  // 8-15 chunk 2k + 1).
  auto isum_of = [&](int t) {
    V isum = b.vec(512, Cls::I, "isum");
    b.vzero(isum);
    for (int k = 0; k < 4; ++k) {  // isum += s * (pair sum + pair sum): exact, no saturation
      V x = b.vec(512, Cls::I, "act"), p16 = b.vec(512, Cls::I, "p16");
      b.vload(x, act(t, 4 + 64 * k));
      b.vmaddubs_w(p16, q[k], x);  // |2 * 63 * 128| < 32768
      b.vdpwssd(isum, p16, s[k]);
    }
    return isum;
  };
  for (int p = 0; p < pairs; ++p) {
    const int t = 2 * p;
    V it = isum_of(t), iu = isum_of(t + 1);
    finish_pair(b, it, iu, act(t, 260), act(t + 1, 260), act(t, 0), act(t + 1, 0), sc16z, dwz,
                pacc[p]);
  }
  if (tokens % 2) {
    const int t = tokens - 1;
    V isum = isum_of(t);
    V hi8 = b.vec(256, Cls::I, "hi8"), i8 = b.vec(256, Cls::I, "isum8");
    b.vextract(hi8, isum, 1);
    b.vadd_i32(i8, b.view(isum, 256, Cls::I), hi8);  // lane l of both chunks of a pair
    TokenRows one = tr.tr[t / 4];
    // finish_block reads the token's bsums and d_a through `one` at its index t % 4.
    finish_block(b, i8, one, t % 4, sc16, dw, sacc);
  }
  tr.advance(b, kABlock);
  b.end_for();
  // y: each token's 8 lanes, hsum8 (a pair's second token from the upper half).
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    V lanes = sacc;
    if (t / 2 < pairs) {
      if (t % 2 == 0) {
        lanes = b.view(pacc[t / 2], 256, Cls::F);
      } else {
        lanes = b.vec(256, Cls::F, "acc_u");
        b.vextract(lanes, pacc[t / 2], 1);
      }
    }
    b.vstore_ss(Mem{yt, {}, 1, 0}, hsum8(b, lanes));
  }
  return b.index();
}

}  // namespace

namespace {

bool build_q6_K(const char* gen, Isa isa, const GeneratorParams& params, kir::Module* m,
                std::string* err) {
  const bool avx2 = isa == Isa::Avx2;
  int rows = 1, tokens = 1;
  if (!int_params(params, gen, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows != 1 || tokens < 1 || tokens > (avx2 ? 1 : 8)) {
    *err = fmt::format("generator '{}': tile {}x{} is not one it can emit (rows 1, tokens 1..{})",
                       gen, rows, tokens, avx2 ? 1 : 8);
    return false;
  }
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}: ggml_vec_dot_q6_K_q8_K lanes of contract "
      "linear.q6_K.ggml\n(activations: Q8_K rows from the plan's act_quant step)",
      gen, rows, tokens);
  Builder e = open_linear_entry(*m, m->name);
  const Grid g = token_grid(m->name, 1, tokens, [&](const std::string& fn, int t) {
    return avx2 ? emit_tile_avx2(*m, fn) : emit_tile(*m, fn, t);
  });
  emit_linear_entry(e, g, {256, kWBlock, kABlock});
  return true;
}

}  // namespace

bool build_linear_q6_K_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q6_K("linear_q6_K__avx512vnni", Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q6_K_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q6_K("linear_q6_K__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
