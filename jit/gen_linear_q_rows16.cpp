// The 16-row gemm tile of the repacked q4_0 arithmetic (contract linear.q4_0x8.ggml) at
// AVX-512 VNNI: one int32 lane per weight row, so a block's 32-element dot needs no
// horizontal sum.
//
// Why: the 8-row tile (gen_linear_q_avx512.cpp) puts a row's 32 elements across 8 lanes
// and spends ~13 shuffles per token and block folding them back into one sum per row. Here
// the block is transposed once for all tokens of the tile: W_j (j = 0..7) holds, in lane
// L, the 4 elements 4j..4j+3 of row(L) as unsigned nibbles n (0..15). A token's block is
// then 8 vpdpbusd of W_j by the activation dword j broadcast to every lane:
//   isum = sum_j dpbusd(W_j, a_j) - 8 * sum(a) = sum (n - 8) * a,
// the exact int32 block sum of the gemm (exact products: ggml's gemm has no vpsignb wrap),
// with 8 * sum(a) from the same broadcasts against bytes of 8. Then, as the contract says,
// acc = fma(float(isum), fl(d_w * d_a), acc), one float lane per row.
//
// The transpose: rows 4g..4g+3's 16 quant bytes (4 dwords) fill the 128-bit blocks of A_g;
// unpacking dwords then qwords of A_0..A_3 gives Q_d (d = 0..3, dword d of every row) with
// lane 4k + m holding row k + 4m. Low nibbles of Q_d are elements 4d..4d+3 (W_d), high
// nibbles elements 16 + 4d.. (W_{4+d}) — q4_0's layout. Scales are inserted in the same
// lane order, and the rows go back in order by one vpermd per token at the store.
//
// Rows past nrows - 1 re-read row nrows - 1 (never past the buffer); their lanes are not
// stored.
#include <stdexcept>
#include <vector>

#include "jit/gen_linear_q.h"
#include "kernels/formats/blocks.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Mem;
using kir::V;

constexpr int kRows = 16;

// Row of lane L (lane 4k + m holds row k + 4m).
int lane_row(int lane) {
  return lane / 4 + 4 * (lane % 4);
}

}  // namespace

int build_q4_0x8_gemm16_avx512(kir::Module& m, const std::string& name, int tokens) {
  if (tokens < 1 || tokens > 8) throw std::logic_error("kir: gemm16 takes 1..8 tokens");
  const QFormatTraits& qt = q_traits(QFormat::Q4_0);
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);

  // Byte offsets of the 16 rows from w, clamped to nrows - 1 (asmjit spills what does not fit).
  std::vector<V> roff(kRows);
  {
    V last = b.i64("last"), i = b.i64("i");
    b.addi(last, a.nrows, -1);
    for (int r = 0; r < kRows; ++r) {
      roff[size_t(r)] = b.i64("roff");
      b.movi(i, r);
      b.min(i, i, last);
      b.mul(roff[size_t(r)], i, a.rb);
    }
  }
  V zero = b.vec(512, Cls::I, "zero"), nib = b.vec(512, Cls::I, "nib"),
    eights = b.vec(512, Cls::I, "eights");
  b.vzero(zero);
  b.vsplat32(nib, 0x0F0F0F0Fu);
  b.vsplat32(eights, 0x08080808u);
  V zero256 = b.vec(256, Cls::I, "zero256");
  b.vzero(zero256);

  // Two token groups of up to 4 (TokenRows addresses 4 tokens from one moving pointer).
  TokenRows tr[2] = {token_rows(b, a.a, a.as, std::min(tokens, 4)), {}};
  if (tokens > 4) {
    V a4 = b.ptr("act4"), s4 = b.i64("s4");
    b.muli(s4, a.as, 4);
    b.ptr_add(a4, a.a, s4, 1);
    tr[1] = token_rows(b, a4, a.as, tokens - 4);
  }
  auto act = [&](int t, int32_t disp) { return tr[t / 4].at(t % 4, disp); };

  V acc[8];
  for (int t = 0; t < tokens; ++t) {
    acc[t] = b.vec(512, Cls::F, "acc");
    b.vzero(acc[t]);
  }

  V wb = b.ptr("wb"), off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, qt.block_bytes);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(qt.block_bytes, "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this block of row 0; row r at wb + roff[r]

  // Transpose the block's quants: A_g = rows 4g..4g+3, one per 128-bit block.
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
  V Q[4];
  for (int d = 0; d < 4; ++d) Q[d] = b.vec(512, Cls::I, "Q");
  b.vunpack_lo64(Q[0], lo01, lo23);  // lane 4k + m: dword 0 of row k + 4m
  b.vunpack_hi64(Q[1], lo01, lo23);
  b.vunpack_lo64(Q[2], hi01, hi23);
  b.vunpack_hi64(Q[3], hi01, hi23);
  V W[8];
  for (int d = 0; d < 4; ++d) {
    W[d] = b.vec(512, Cls::I, "W");
    W[4 + d] = b.vec(512, Cls::I, "W");
    b.vand(W[d], Q[d], nib);
    b.vsrl_i16(W[4 + d], Q[d], 4);
    b.vand(W[4 + d], W[4 + d], nib);
  }
  // The 16 fp16 scales in lane order -> f32.
  V h[2] = {b.vec(128, Cls::I, "h"), b.vec(128, Cls::I, "h")};
  for (int half = 0; half < 2; ++half) {
    b.vzero(h[half]);
    for (int l = 0; l < 8; ++l)
      b.vinsert_u16(h[half], h[half],
                    Mem{wb, roff[size_t(lane_row(8 * half + l))], 1, qt.scale_offset}, l);
  }
  V hy = b.vec(256, Cls::I, "hy"), dw = b.vec(512, Cls::F, "dw");
  b.vinsert(hy, zero256, h[0], 0);
  b.vinsert(hy, hy, h[1], 1);
  b.vcvt_f16_f32(dw, hy);

  for (int t = 0; t < tokens; ++t) {
    V isum = b.vec(512, Cls::I, "isum"), corr = b.vec(512, Cls::I, "corr");
    b.vzero(isum);
    b.vzero(corr);
    for (int j = 0; j < 8; ++j) {
      V aj = b.vec(512, Cls::I, "aj");
      b.vbcast_f32(aj, act(t, 2 + 4 * j));  // activation dword j (bits, not a float)
      b.vdpbusd(isum, W[j], aj);
      b.vdpbusd(corr, eights, aj);
    }
    b.vsub_i32(isum, isum, corr);
    V da = b.vec(512, Cls::F, "da"), dah = b.vec(256, Cls::I, "dah");
    b.vbcast_i16(dah, act(t, 0));
    b.vcvt_f16_f32(da, dah);
    fma_block(b, acc[t], isum, dw, da);
  }
  b.addi(tr[0].base, tr[0].base, int64_t(sizeof(block_q8_0)));
  if (tokens > 4) b.addi(tr[1].base, tr[1].base, int64_t(sizeof(block_q8_0)));
  b.end_for();

  // Rows back in order, store rows [0, nrows).
  std::vector<uint32_t> idx(16);
  for (int r = 0; r < kRows; ++r) idx[size_t(r)] = uint32_t(4 * (r % 4) + r / 4);
  V perm = b.vec(512, Cls::I, "perm"), store = b.mask("store"), yt = b.ptr("yt");
  b.vconst32(perm, idx);
  b.kfirst_n(store, a.nrows);
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    V o = b.vec(512, Cls::F, "o");
    b.vperm_d(o, acc[t], perm);
    b.vstore_mk(Mem{yt, {}, 1, 0}, o, store);
  }
  return b.index();
}

int fill_rows16_rest(Builder& b, int gemm_fn, int gemv_fn) {
  const TileArgs a = begin_tile(b);
  V at = b.ptr("at"), yt = b.ptr("yt"), tmp = b.i64("tmp");
  b.mov(at, a.a);
  b.mov(yt, a.y);
  if (gemm_fn >= 0) {  // four tokens of gemm arithmetic first
    b.call(gemm_fn, {a.w, a.rb, a.nrows, at, a.as, yt, a.ys, a.n});
    b.muli(tmp, a.as, 4);
    b.ptr_add(at, at, tmp, 1);
    b.muli(tmp, a.ys, 4);
    b.ptr_add(yt, yt, tmp, 1);
  }
  if (gemv_fn >= 0) {  // the rest through the 8-row gemv, twice
    V rows = b.i64("rows"), eight = b.imm(8, "eight"), w8 = b.ptr("w8"), y8 = b.ptr("y8");
    b.min(rows, a.nrows, eight);
    b.call(gemv_fn, {a.w, a.rb, rows, at, a.as, yt, a.ys, a.n});
    b.if_(a.nrows, Cmp::GT, 8);
    b.addi(rows, a.nrows, -8);
    b.muli(tmp, a.rb, 8);
    b.ptr_add(w8, a.w, tmp, 1);
    b.addi(y8, yt, 32);
    b.call(gemv_fn, {w8, a.rb, rows, at, a.as, y8, a.ys, a.n});
    b.end_if();
  }
  return b.index();
}

}  // namespace cke::jit::gen
