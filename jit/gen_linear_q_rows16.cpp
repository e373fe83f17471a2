// The 16-row prefill kernel of the repacked q4_0 arithmetic (contract linear.q4_0x8.ggml)
// at AVX-512 VNNI: one int32 lane per weight row, so a block's 32-element dot needs no
// horizontal sum, and activations packed once per group of tokens. The same entry runs the
// AVX2 / AVX-VNNI tiles of gen_linear_q4_0_r16_avx2.cpp (two ymm halves of 8 rows, packs of
// 4 tokens) on the r16 copy: at --isa avx2 they replaced the row-major 4x4 tiles (36-41
// GMAC/s one core, L3) at 104-119 GMAC/s (AVX-VNNI: 140-146), Q4_0 pp128 60 -> 214 tok/s
// (AMD EPYC Zen 5, 2 threads, 2026-12-03).
//
// Tiles. The block is transposed once for all tokens of the tile: W_j (j = 0..7) holds, in
// lane L, the 4 elements 4j..4j+3 of row(L) as unsigned nibbles n (0..15). A token's block
// is then 8 vpdpbusd of W_j by the activation dword j broadcast to every lane, into an
// accumulator that starts at -8 * sum(a):
//   isum = -8 * sum(a) + sum_j dpbusd(W_j, a_j) = sum (n - 8) * a,
// the exact int32 block sum of the gemm (exact products: ggml's gemm has no vpsignb wrap).
// Then, as the contract says, acc = fma(float(isum), fl(d_w * d_a), acc), one float lane
// per row.
//
// The activation pack. Before the tiles run, the entry copies a chunk of token groups'
// blocks into a frame buffer, block-major (kPackBlock bytes a block, one group after the
// other): the tokens' 32 quants (token t at 32 t), their scales as f32 (exact) at
// kPackScale + 4 t and -8 * sum(a) at kPackCorr + 4 t. A tile then reads every per-token
// value by a broadcast load (no ALU work), and the sums are made once per group instead of
// once per tile (ggml's gemm packs its activations too: block_q8_0x4). K is at most
// kMaxBlocks blocks (the map's shape predicate; the frame holds at least three groups).
//
// Cache blocking. Each 16-row tile runs every group of the chunk before the next tile, so
// a tile's weights (16 rows x K) come from memory once per chunk (as many groups as
// kPackBudget holds: 16 at K = 2048) instead of once per 8 tokens; the chunk's packs stay
// in L2.
// Groups: tokens 0 .. 4 floor(T / 4) - 1 in groups of 8 (the last may be 4) with the gemm's
// exact products; the last T % 4 tokens are the gemv's (the contract's split), whose
// products move the weight's sign onto the activation (vpsignb): they differ from the exact
// product only for an activation of -128 (an inf or NaN in the row) against a negative
// weight, where vpsignb wraps. The pack keeps the bytewise minimum of those tokens; if it is
// -128 the group runs through the sign-move tiles, whose bits are ggml's gemv's.
// The decode provider (Rows16Split::AllGemv) computes every token as the gemv: groups of 8
// and 4 too take exact products unless their chunk holds a -128, then sign-move tiles, so a
// batch of decode tokens gets each token's decode bits.
//
// Weights: the file's row-major blocks (the tile transposes each block, below), or the
// repacked layout q4_0_r16 (kernels/formats/layouts.h, made once at load), which holds each
// block already transposed with lane r = row r: four 512-bit loads and one 256-bit load of
// scales. Its row groups start at multiples of 16: a range [n0, n1) that starts inside a
// group computes that group into a frame buffer and copies the rows it wants.
//
// The transpose: rows 4g..4g+3's 16 quant bytes (4 dwords) fill the 128-bit blocks of A_g;
// unpacking dwords then qwords of A_0..A_3 gives Q_d (d = 0..3, dword d of every row) with
// lane 4k + m holding row k + 4m. Low nibbles of Q_d are elements 4d..4d+3 (W_d), high
// nibbles elements 16 + 4d.. (W_{4+d}) — q4_0's layout. Scales are inserted in the same
// lane order, and the rows go back in order by one vpermd per token at the store.
//
// Rows past nrows - 1 re-read row nrows - 1 (never past the buffer); their lanes are not
// stored.
#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "jit/gen_linear_q.h"
#include "jit/gen_rows16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Mem;
using kir::V;

constexpr int kRows = kRows16;
constexpr int kGroup = 8;  // tokens a pack holds at AVX-512 (AVX2: 4)
constexpr Q4_0Pack kPack512{kGroup};
constexpr int kPackScale = kPack512.scale();
constexpr int kPackCorr = kPack512.corr();
constexpr int kPackBlock = kPack512.block();
// Frame bytes for the packs of one chunk of token groups: with the 16-row tile's weights
// (at most 16 * 512 * 18 bytes) it stays within a 1 MiB L2.
constexpr int kPackBudget = 512 * 1024;
static_assert(kPackBudget >= kQ4_0Rows16MaxBlocks * kPackBlock);

// Row of lane L (lane 4k + m holds row k + 4m).
int lane_row(int lane) {
  return lane / 4 + 4 * (lane % 4);
}

using Products = Q4_0Products;

// The row-major block at wb (row r at wb + roff[r]) transposed: Q[d] lane 4k + m = dword d
// of row k + 4m; dw the 16 scales as f32 in the same lane order.
void load_row_major(Builder& b, V wb, const std::vector<V>& roff, V zero, V Q[4], V dw) {
  const QFormatTraits& qt = q_traits(QFormat::Q4_0);
  // A_g = rows 4g..4g+3, one per 128-bit block.
  V A[4];
  for (int g = 0; g < 4; ++g) {
    A[g] = b.vec(512, Cls::I, "A");
    for (int k = 0; k < 4; ++k) {
      V x = b.vec(128, Cls::I, "rowq");
      b.vload(x, Mem{wb, roff[size_t(4 * g + k)], 1, qt.quants_offset});
      b.vinsert(A[g], k == 0 ? zero : A[g], x, k);
    }
  }
  V lo01 = b.vec(512, Cls::I, "lo01"), hi01 = b.vec(512, Cls::I, "hi01"),
    lo23 = b.vec(512, Cls::I, "lo23"), hi23 = b.vec(512, Cls::I, "hi23");
  b.vunpack_lo32(lo01, A[0], A[1]);  // per 128: [r_k d0, r_4+k d0, r_k d1, r_4+k d1]
  b.vunpack_hi32(hi01, A[0], A[1]);  //          [r_k d2, r_4+k d2, r_k d3, r_4+k d3]
  b.vunpack_lo32(lo23, A[2], A[3]);
  b.vunpack_hi32(hi23, A[2], A[3]);
  b.vunpack_lo64(Q[0], lo01, lo23);  // lane 4k + m: dword 0 of row k + 4m
  b.vunpack_hi64(Q[1], lo01, lo23);
  b.vunpack_lo64(Q[2], hi01, hi23);
  b.vunpack_hi64(Q[3], hi01, hi23);
  V h[2] = {b.vec(128, Cls::I, "h"), b.vec(128, Cls::I, "h")};
  for (int half = 0; half < 2; ++half) {
    b.vzero(h[half]);
    for (int l = 0; l < 8; ++l)
      b.vinsert_u16(h[half], h[half],
                    Mem{wb, roff[size_t(lane_row(8 * half + l))], 1, qt.scale_offset}, l);
  }
  V hy = b.vec(256, Cls::I, "hy"), zero256 = b.view(zero, 256, Cls::I);
  b.vinsert(hy, zero256, h[0], 0);
  b.vinsert(hy, hy, h[1], 1);
  b.vcvt_f16_f32(dw, hy);
}

// One tile: 16 rows x `tokens` of a pack (tile ABI of gen_tile.h with a = the pack, n = nb;
// the pack's stride is fixed, `as` is unused). w: row 0 of the file's blocks (row r at
// w + r * rb), or the group of the q4_0_r16 copy (rb unused).
int emit_tile(kir::Module& m, const std::string& name, int tokens, Products products,
              Rows16Weights layout) {
  const QFormatTraits& qt = q_traits(QFormat::Q4_0);
  const bool r16 = layout == Rows16Weights::R16;
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);

  // Byte offsets of the 16 rows from w, clamped to nrows - 1 (asmjit spills what does not fit).
  std::vector<V> roff(kRows);
  if (!r16) {
    V last = b.i64("last"), i = b.i64("i");
    b.addi(last, a.nrows, -1);
    for (int r = 0; r < kRows; ++r) {
      roff[size_t(r)] = b.i64("roff");
      b.movi(i, r);
      b.min(i, i, last);
      b.mul(roff[size_t(r)], i, a.rb);
    }
  }
  V zero, nib = b.vec(512, Cls::I, "nib"), eights;
  if (!r16 || products == Products::SignMove) {
    zero = b.vec(512, Cls::I, "zero");
    b.vzero(zero);
  }
  b.vsplat32(nib, 0x0F0F0F0Fu);
  if (products == Products::SignMove) {
    eights = b.vec(512, Cls::I, "eights");
    b.vsplat32(eights, 0x08080808u);
  }

  V acc[kGroup];
  for (int t = 0; t < tokens; ++t) {
    acc[t] = b.vec(512, Cls::F, "acc");
    b.vzero(acc[t]);
  }

  V wb = b.ptr("wb"), pk = b.ptr("pk"), off = b.i64("off"), end = b.i64("end");
  const int wblock = r16 ? kQ4_0R16Block : qt.block_bytes;  // weight bytes per block step
  b.mov(pk, a.a);
  b.muli(end, a.n, wblock);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(wblock, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this block of row 0 (r16: of the group)
  V Q[4], dw = b.vec(512, Cls::F, "dw");
  for (int d = 0; d < 4; ++d) Q[d] = b.vec(512, Cls::I, "Q");
  if (r16) {
    if (stream_prefetch(tokens))
      for (int l = 0; l < kQ4_0R16Block; l += 64)
        b.vprefetch(Mem{wb, {}, 1, kStreamPrefetchAhead + l});
    for (int d = 0; d < 4; ++d) b.vload(Q[d], Mem{wb, {}, 1, 64 * d});  // lane r = row r
    V hy = b.vec(256, Cls::I, "hy");
    b.vload(hy, Mem{wb, {}, 1, 256});
    b.vcvt_f16_f32(dw, hy);
  } else {
    load_row_major(b, wb, roff, zero, Q, dw);
  }
  // W_d: elements 4d..4d+3 (low nibbles), W_{4+d}: elements 16+4d.. (high nibbles).
  V W[8];
  for (int d = 0; d < 4; ++d) {
    W[d] = b.vec(512, Cls::I, "W");
    W[4 + d] = b.vec(512, Cls::I, "W");
    b.vand(W[d], Q[d], nib);
    b.vsrl_i16(W[4 + d], Q[d], 4);
    b.vand(W[4 + d], W[4 + d], nib);
  }

  for (int t = 0; t < tokens; ++t) {
    V isum = b.vec(512, Cls::I, "isum");
    if (products == Products::Exact) {
      b.vbcast_f32(isum, Mem{pk, {}, 1, kPackCorr + 4 * t});  // -8 * sum(a)
    } else {
      b.vzero(isum);
    }
    for (int j = 0; j < 8; ++j) {
      if (products == Products::Exact) {  // activation dword j: the {1to16} memory operand
        b.vdpbusd_b(isum, W[j], Mem{pk, {}, 1, 32 * t + 4 * j});
        continue;
      }
      V aj = b.vec(512, Cls::I, "aj");
      b.vbcast_f32(aj, Mem{pk, {}, 1, 32 * t + 4 * j});  // activation dword j (bits)
      {  // |w| times a with w's sign moved onto it (vpsignb, wrapping at -128)
        V w = b.vec(512, Cls::I, "w"), aw = b.vec(512, Cls::I, "aw"), sy = b.vec(512, Cls::I, "sy");
        V neg = b.mask("neg");
        b.vsub_i8(w, W[j], eights);
        b.vabs_i8(aw, w);
        b.kfrom_bytes(neg, w);
        b.vcopy(sy, aj);
        b.vsub_i8_mk(sy, neg, zero, aj);
        b.vdpbusd(isum, aw, sy);
      }
    }
    V da = b.vec(512, Cls::F, "da");
    b.vbcast_f32(da, Mem{pk, {}, 1, kPackScale + 4 * t});
    fma_block(b, acc[t], isum, dw, da);
  }
  b.addi(pk, pk, kPackBlock);
  b.end_for();

  // Rows back in order (the transposed file blocks), store rows [0, nrows).
  V perm, store = b.mask("store"), yt = b.ptr("yt");
  if (!r16) {
    std::vector<uint32_t> idx(16);
    for (int r = 0; r < kRows; ++r) idx[size_t(r)] = uint32_t(4 * (r % 4) + r / 4);
    perm = b.vec(512, Cls::I, "perm");
    b.vconst32(perm, idx);
  }
  b.kfirst_n(store, a.nrows);
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    V o = acc[t];
    if (!r16) {
      o = b.vec(512, Cls::F, "o");
      b.vperm_d(o, acc[t], perm);
    }
    b.vstore_mk(Mem{yt, {}, 1, 0}, o, store);
  }
  return b.index();
}

// Packs `count` (1..p.group) token rows of block_q8_0 from x (as bytes apart) into pk (see
// the top of the file). amin (a 256-bit vector, or none) keeps the bytewise minimum of the
// quants. vnni: 8 * sum(a) by vpdpbusd, else by vpmaddubsw + vpmaddwd (pair sums of at most
// 2 * 8 * 128: exact).
void emit_pack(Builder& e, V x, V as, V nb, V count, V pk, V amin, const Q4_0Pack& p, bool vnni) {
  const int qo = q_traits(QFormat::Q4_0).act_quants_offset;
  V t = e.i64("pk_t"), blk = e.i64("pk_b"), tmp = e.i64("pk_tmp");
  V src = e.ptr("pk_src"), dq = e.ptr("pk_dq"), ds = e.ptr("pk_ds");
  V eights = e.vec(256, Cls::I, "pk_eights"), zero = e.vec(128, Cls::I, "pk_zero");
  V ones16;
  e.vsplat32(eights, 0x08080808u);
  e.vzero(zero);
  if (!vnni) {
    ones16 = e.vec(256, Cls::I, "pk_ones16");
    e.vsplat32(ones16, 0x00010001u);
  }
  e.for_(t, e.imm(0, "pk_zero_i"), count, e.imm(1, "pk_one"));
  {
    e.mul(tmp, t, as);
    e.ptr_add(src, x, tmp, 1);
    e.muli(tmp, t, 32);  // token t's quants at 32 t
    e.ptr_add(dq, pk, tmp, 1);
    e.muli(tmp, t, 4);
    e.ptr_add(ds, pk, tmp, 1);
    e.for_(blk, e.imm(0, "pk_zero_b"), nb, e.imm(1, "pk_one_b"));
    {
      V q = e.vec(256, Cls::I, "pk_q"), s = e.vec(256, Cls::I, "pk_s"),
        s4 = e.vec(128, Cls::I, "pk_s4");
      e.vload(q, Mem{src, {}, 1, qo});
      e.vstore(Mem{dq, {}, 1, 0}, q);
      if (amin.valid()) e.vmin_i8(amin, amin, q);
      if (vnni) {
        e.vzero(s);
        e.vdpbusd(s, eights, q);  // 8 * (sum of each lane's 4 quants)
      } else {
        e.vmaddubs_w(s, eights, q);
        e.vmadd_wd(s, s, ones16);
      }
      e.vextract(s4, s, 1);
      e.vadd_i32(s4, s4, e.view(s, 128, Cls::I));
      e.vhadd_i32(s4, s4, s4);
      e.vhadd_i32(s4, s4, s4);  // lane 0: 8 * sum(a)
      e.vsub_i32(s4, zero, s4);
      e.vstore_ss(Mem{ds, {}, 1, p.corr()}, e.view(s4, 128, Cls::F));
      V h = e.vec(128, Cls::I, "pk_h"), d = e.vec(128, Cls::F, "pk_d");
      e.vbcast_i16(h, Mem{src, {}, 1, 0});
      e.vcvt_f16_f32(d, h);
      e.vstore_ss(Mem{ds, {}, 1, p.scale()}, d);
      e.addi(src, src, int64_t(sizeof(block_q8_0)));
      e.addi(dq, dq, p.block());
      e.addi(ds, ds, p.block());
    }
    e.end_for();
  }
  e.end_for();
}

}  // namespace

void build_q4_0x8_rows16(Builder& e, kir::Module& m, const std::string& name, Rows16Weights layout,
                         Rows16Split split, Rows16Isa isa) {
  const QFormatTraits& qt = q_traits(QFormat::Q4_0);
  const bool avx2 = isa != Rows16Isa::Avx512Vnni;
  const bool all_gemv = split == Rows16Split::AllGemv;
  if (avx2 && (layout != Rows16Weights::R16 || all_gemv))
    throw std::logic_error("gen: the AVX2 16-row q4_0 kernel reads the r16 copy, contract split");
  // AVX-512: groups of 8 (a chunk's last may be 4); AVX2: groups of 4 (ymm registers).
  const Q4_0Pack pack{avx2 ? 4 : kGroup};
  const bool vnni = isa != Rows16Isa::Avx2;
  // Tiles (callees after the entry): the gemm's full groups (AVX-512: and 4), the gemv's
  // 1..3 both ways.
  auto tile = [&](const std::string& suffix, int tokens, Products p) {
    return avx2 ? emit_q4_0_r16_gemm_tile_avx2(m, name + suffix, tokens, p, vnni, pack)
                : emit_tile(m, name + suffix, tokens, p, layout);
  };
  const int gemm_full = tile(fmt::format("_gemm{}", pack.group), pack.group, Products::Exact);
  const int gemm4 = avx2 ? -1 : tile("_gemm4", 4, Products::Exact);
  int gemv[4] = {-1, -1, -1, -1}, gemv_sign[4] = {-1, -1, -1, -1};
  for (int r = 1; r < 4; ++r) {
    gemv[r] = tile("_gemv" + std::to_string(r), r, Products::Exact);
    gemv_sign[r] = tile("_gemv" + std::to_string(r) + "_sign", r, Products::SignMove);
  }
  // AllGemv: the groups of 8 and 4 are gemv tokens too; a chunk with an activation of -128
  // runs through sign-move tiles of 8 and 4.
  const int gemv8_sign = all_gemv ? tile("_gemv8_sign", 8, Products::SignMove) : -1;
  const int gemv4_sign = all_gemv ? tile("_gemv4_sign", 4, Products::SignMove) : -1;
  auto has_min8 = [&](V amin, V bits) {
    if (avx2) {
      emit_has_min8_avx2(e, amin, bits);
    } else {
      emit_has_min8(e, amin, bits);
    }
  };

  const auto [x, w, y, K, N, T, n0, n1, nb] =
      linear_entry_prologue(e, qt.block_elems, kQ4_0Rows16MaxBlocks);

  const bool r16 = layout == Rows16Weights::R16;
  Rows16Args ra{layout, w, {}, {}, n0, n1, e.i64("y_stride"), nb, {}};
  V as = e.i64("act_stride"), tmp = e.i64("tmp");
  if (r16) {
    ra.gs = e.i64("group_bytes");
    ra.tmp = e.ptr("group_tmp");
    e.muli(ra.gs, nb, kQ4_0R16Block);
    e.ptr_align(ra.tmp, e.stack(4 * kRows * pack.group + 64, "tmp_raw"), 64);
  } else {
    ra.rb = e.i64("row_bytes");
    e.muli(ra.rb, nb, qt.block_bytes);
  }
  e.muli(as, nb, int64_t(sizeof(block_q8_0)));
  e.muli(ra.ys, N, 4);
  V pk = e.ptr("pack");
  e.ptr_align(pk, e.stack(kPackBudget + 64, "pack_raw"), 64);

  // The gemm's tokens, in chunks of G full groups (AVX-512: the chunk's last group may be
  // 4): the chunk's groups are packed first, then every row tile runs all of them (gbytes:
  // one group's pack; G as many as kPackBudget holds, at least 3 since K <= 16384).
  V full = e.i64("full"), t0 = e.i64("t0"), cnt = e.i64("cnt"), xt = e.ptr("xt"), yt = e.ptr("yt");
  V gbytes = e.i64("gbytes"), G = e.i64("G"), chunk = e.i64("chunk"), gi = e.i64("gi"),
    gc = e.i64("gcnt"), pkg = e.ptr("pkg"), xg = e.ptr("xg");
  V group = e.imm(pack.group, "group");
  e.muli(gbytes, nb, pack.block());
  e.movi(G, kPackBudget);
  e.div(G, G, gbytes);
  e.muli(chunk, G, pack.group);
  e.sari(full, T, 2);
  e.muli(full, full, 4);
  Rows16Groups groups{gemm_full,         gemm4,  pack.group,     4, pk, e.i64("n_full"),
                      e.i64("has_tail"), gbytes, e.i64("y_step")};
  e.muli(groups.y_step, ra.ys, pack.group);
  e.for_(t0, e.imm(0, "zero"), full, chunk);
  {
    e.sub(cnt, full, t0);
    e.min(cnt, cnt, chunk);
    e.mul(tmp, t0, as);
    e.ptr_add(xt, x, tmp, 1);
    e.mul(tmp, t0, ra.ys);
    e.ptr_add(yt, y, tmp, 1);
    e.mov(pkg, pk);
    e.mov(xg, xt);
    V cmin = all_gemv ? e.vec(256, Cls::I, "chunk_min") : V{};
    if (all_gemv) e.vsplat32(cmin, 0x7F7F7F7Fu);
    e.for_(gi, e.imm(0, "zero_p"), cnt, group);
    e.sub(gc, cnt, gi);
    e.min(gc, gc, group);
    emit_pack(e, xg, as, nb, gc, pkg, cmin, pack, vnni);
    e.ptr_add(pkg, pkg, gbytes, 1);
    e.muli(tmp, as, pack.group);
    e.ptr_add(xg, xg, tmp, 1);
    e.end_for();
    if (avx2) {
      e.sari(groups.n_full, cnt, 2);  // cnt is a multiple of 4
    } else {
      e.sari(groups.n_full, cnt, 3);
      e.andi(groups.has_tail, cnt, 4);
    }
    if (all_gemv) {
      V cbits = e.i64("chunk_min8");
      has_min8(cmin, cbits);
      e.if_(cbits, Cmp::NE, 0);
      Rows16Groups sign = groups;
      sign.full_tile = gemv8_sign;
      sign.tail_tile = gemv4_sign;
      emit_rows16(e, ra, sign, yt);
      e.end_if();
      e.if_(cbits, Cmp::EQ, 0);
      emit_rows16(e, ra, groups, yt);
      e.end_if();
    } else {
      emit_rows16(e, ra, groups, yt);
    }
  }
  e.end_for();

  // The gemv's last T % 4 tokens; sign-move tiles if an activation byte is -128.
  V rem = e.i64("rem"), bits = e.i64("min8_bits");
  e.sub(rem, T, full);
  ret_if(e, rem, Cmp::EQ, 0);
  e.mul(tmp, full, as);
  e.ptr_add(xt, x, tmp, 1);
  e.mul(tmp, full, ra.ys);
  e.ptr_add(yt, y, tmp, 1);
  V amin = e.vec(256, Cls::I, "amin");
  e.vsplat32(amin, 0x7F7F7F7Fu);
  emit_pack(e, xt, as, nb, rem, pk, amin, pack, vnni);
  has_min8(amin, bits);
  V one = e.imm(1, "one_group");
  for (int r = 1; r < 4; ++r) {
    e.if_(rem, Cmp::EQ, r);
    e.if_(bits, Cmp::NE, 0);
    emit_rows16(e, ra, Rows16Groups{gemv_sign[r], -1, r, 0, pk, one, V{}, gbytes, groups.y_step},
                yt);
    e.ret();
    e.end_if();
    emit_rows16(e, ra, Rows16Groups{gemv[r], -1, r, 0, pk, one, V{}, gbytes, groups.y_step}, yt);
    e.end_if();
  }
}

}  // namespace cke::jit::gen
