// Generated linear kernels for Q4_K weights, contract linear.q4_Kx8.ggml (ggml's repacked
// q4_K_8x8 gemm/gemv, kernels/ref/linear_dot_repack.cpp q4_K_8x8): a tile of weight rows
// with ONE INT32 LANE PER ROW, as the q4_0 gemm16 (gen_linear_q_rows16.cpp). AVX-512 VNNI:
// 16 rows per zmm; AVX2: 8 rows per ymm. The same tile computes Q2_K weights under
// linear.q2_Kx8.ggml (q2_K_8x8; see "Q2_K" at the end of this comment).
//
// Layout. Per super-block (256 elements; row block: d, dmin, 12 bytes of packed 6-bit scales
// and mins, 128 bytes of nibbles) and 64-element chunk c, the 32 quant bytes of the tile's
// rows are transposed once for all tokens of the tile (dword unpacks and 128-bit shuffles):
// Q_d (d = 0..7) holds in lane r dword d of row r's chunk, i.e. elements 4d..4d+3 of
// sub-block 2c (low nibbles, W_lo_d) and of sub-block 2c+1 (high nibbles, W_hi_d). A token's
// sub-block sum is then, with its activation dword d broadcast to every lane, 8 vpdpbusd of
// W_d (unsigned 0..15) by it (signed int8) — AVX2: 8 vpmaddubsw, 7 vpaddw, 1 vpmaddwd by 1s,
// exact too: a 16-bit lane sums 16 products of at most 15 * 128 — giving s_j per row, exact,
// with no horizontal sum. Rows stay in natural lane order.
//
// Why the bits are the reference's. The contract wants, per granule (gemm: one chunk =
// sub-blocks 2c, 2c+1; gemv: the whole super-block), acc = fma(float(isum), fl(d_w*d_a), acc)
// with isum = sum_j sc_j * s_j, and accmin = fma(float(imin), fl(dmin_w*d_a), accmin) with
// imin = sum_j m_j * (bsums[2j] + bsums[2j+1]); the result is acc - accmin. All integers here
// are small: |s_j| <= 32*15*128 = 61440, sc_j, m_j <= 63, |bsum32| <= 4096, so every product
// sc_j * s_j (< 2^22) and m_j * bsum32_j, and every sum of at most 4 of the former (< 2^24)
// or 8 of the latter (< 2^21) is an integer below 2^24: exact in f32. So the integer sums are
// formed in f32 with FMAs (s_j converted exactly, sc_j, m_j, bsum32_j as exact floats): a
// chain starting from +0 computes the exact value, and as +0 + (-0) = +0 it is never -0, i.e.
// it IS float(isum) / float(imin), bit for bit. The gemv's 8-sub-block isum (up to 2^25) is
// two exact 4-term chains and one f32 add: one rounding of the exact sum to nearest even,
// which is vcvtdq2ps(isum). Then the two FMAs per granule and the final subtraction are the
// contract's own operations, in its order, one float lane per output. (FMAs instead of
// vpmulld keep the integer ports for the dot products.)
//
// Scales and mins: the rows' 16-byte block heads (d|dmin, 3 dwords of packed scales) are
// transposed to one dword per lane the same way, ggml's utmp unpacking (lanes::unpack_scales_k4)
// runs lane by lane (its 32-bit shifts only move bits that its byte masks then keep within a
// byte, so 16-bit shifts compute it), and each 6-bit value becomes an f32 lane vector.
//
// Tokens: a tile takes up to 8 (two groups of 4 from one moving pointer each); the first
// n_gemm of them use the gemm granule, the next n_gemv the gemv granule (the entry's grid gives
// the tokens past the last whole 4 to the gemv, as the contract splits them). Float
// accumulators and per-token/per-block factors live in an aligned frame buffer (the W vectors
// fill half the register file). Rows past nrows - 1 re-read row nrows - 1 (never past the
// buffer); their lanes are not stored.
//
// Q2_K (84-byte blocks: 16 scale bytes, 64 bytes of 2-bit quants, d, dmin). Sub-blocks of 16:
// sub-block j = 8h + 2g + (d >= 4) of 128-element half h holds, in bits 2g..2g+1 of dword d of
// the rows' 32 quant bytes at 32h, elements 16j + 4(d % 4) .. +3; one transpose per half gives
// the same Q_d, and W_d = (Q_d >> 2g) & 3 per group g: a "unit" (what a q4_K chunk is) is the
// pair of sub-blocks 2u, 2u + 1 (u = 4h + g), 4 vpdpbusd each. Granules: the gemv's is the
// super-block (16 sub-blocks), the gemm's a half (8 sub-blocks, 4 units); imin pairs m_j with
// the 16-element bsums[j]. Every integer is small enough for the f32 chains: |s_j| <= 16*3*128,
// sc_j, m_j <= 15, |bsums[j]| <= 2048, so sum_j sc_j * s_j over 16 sub-blocks is < 2^21 and
// sum_j m_j * bsums[j] < 2^19: exact. d, dmin of a row sit at byte 80: the rows' 16 bytes at 68
// are transposed for their last dword.
#include "jit/gen_linear_q4_K.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "jit/gen_rows16.h"
#include "jit/gen_tile.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int kABlock = int(sizeof(block_q8_K));  // 292
constexpr int kAQs = int(offsetof(block_q8_K, qs));
constexpr int kABsums = int(offsetof(block_q8_K, bsums));
static_assert(offsetof(block_q4_K, d) == 0 && offsetof(block_q4_K, dmin) == 2 &&
              offsetof(block_q4_K, scales) == 4 && offsetof(block_q8_K, d) == 0);
static_assert(offsetof(block_q2_K, scales) == 0 && offsetof(block_q2_K, d) == 80 &&
              offsetof(block_q2_K, dmin) == 82);

// The two formats of the tile.
struct X8Format {
  bool q2;
  const char* name;  // in ids and contracts
  int block;         // bytes of a weight block
  int qs;            // offset of the quants
  int units;         // pairs of sub-blocks per super-block (q4_K: chunks of 64)
  int sub_dwords;    // dwords of one sub-block (of a row's quant bytes, of activations)
  int gemm_units;    // units per gemm granule
};
constexpr X8Format kQ4Kx8{false, "q4_K", int(sizeof(block_q4_K)), int(offsetof(block_q4_K, qs)), 4,
                          8,     1};
constexpr X8Format kQ2Kx8{true, "q2_K", int(sizeof(block_q2_K)), int(offsetof(block_q2_K, qs)), 8,
                          4,    4};
// Prefetch (gen_tile.h): row-major tiles read 8 streams a row apart, prefetched a tile ahead
// (decode streams weights from DRAM ~1.2x faster with it, on a Xeon); the r16 copy is one
// stream, prefetched kStreamPrefetchAhead on.

// Frame buffer slots of one vector each: the super-block's f32 scales sc_j and mins m_j
// (one slot per sub-block each), the AVX2 tile's W_hi (q4_K: it keeps only W_lo in registers;
// q2_K: the half's Q_d), a store scratch, then per token: acc, accmin, fl(d_w*d_a),
// fl(dmin_w*d_a), two partial isums (the gemv's two half chains; the gemm's unit between the
// AVX2 passes), and the bsums as f32 (two slots: q4_K the 8 bsum32_j; q2_K the 16 bsums[j],
// even j then odd j).
constexpr int kAcc = 0, kAccMin = 1, kD = 2, kDMin = 3, kPartA = 4, kPartB = 5, kB32 = 6,
              kTokSlots = 8;

class Tile {
 public:
  // r16: the weights are the q4_K_r16 / q2_K_r16 copy (kernels/formats/layouts.h): w is the
  // 16-row group, each super-block already transposed, so no transposes run. AVX2: each
  // super-block's two 8-row halves in turn, each the AVX2 tile on its 32 bytes of every
  // 64-byte line of the copy (rows 0-7 first), so every line is read whole, once.
  Tile(kir::Module& m, const std::string& name, const X8Format& f, bool avx512, int n_gemm,
       int n_gemv, bool r16 = false)
      : b_(open_tile(m, name)),
        a_(begin_tile(b_)),
        f_(f),
        nsub_(2 * f.units),
        kSc(0),
        kMn(nsub_),
        kWhi(2 * nsub_),
        kScratch(2 * nsub_ + 8),
        kTok0(2 * nsub_ + 9),
        avx512_(avx512),
        rows_(avx512 ? 16 : 8),
        bits_(avx512 ? 512 : 256),
        n_gemm_(n_gemm),
        tokens_(n_gemm + n_gemv),
        r16_(r16),
        vnni_(m.uses("avxvnni")),
        halves_(r16 && !avx512 ? 2 : 1) {
    if (tokens_ < 1 || tokens_ > 8) throw std::logic_error("kir: q4_K tile takes 1..8 tokens");
  }

  int build();

 private:
  void super_block();
  int vb() const { return bits_ / 8; }
  Mem slot(int s, int disp = 0) const { return Mem{frame_, {}, 1, s * vb() + disp}; }
  Mem tok(int t, int s, int disp = 0) const {
    return slot(kTok0 + t * kTokSlots + s, half_ * half_stride() + disp);
  }
  // Bytes of the frame of one half (halves_ == 2: half 1's frame follows half 0's).
  int half_frame() const { return (kTok0 + tokens_ * kTokSlots) * vb(); }
  // From half 0's token slots to half 1's: unrolled, right after them (the layout measured
  // fastest; the scratch slots are shared), in a loop a whole half frame on.
  int half_stride() const { return tokens_ == 8 ? tokens_ * kTokSlots * vb() : half_frame(); }
  Mem act(int t, int32_t disp) const { return tr_.at(t, disp); }
  Mem row(int r, int32_t disp) const { return Mem{wb_, roff_[size_t(r)], 1, disp}; }
  // The group's super-block (AVX2: of this half's rows).
  Mem r16(int32_t disp) const { return Mem{wb_, {}, 1, 32 * half_ + disp}; }
  // Weight bytes a super-block.
  int wblock() const { return !r16_ ? f_.block : f_.q2 ? kQ2KR16Block : kQ4KR16Block; }
  V vec(const char* n, Cls c = Cls::I) { return b_.vec(bits_, c, n); }
  V splat(const char* n, uint32_t v) {
    V x = vec(n);
    b_.vsplat32(x, v);
    return x;
  }
  bool gemm(int t) const { return t < n_gemm_; }
  // Units per granule of token t; the two chains of a gemv granule (units below and from
  // units / 2); where a unit's partial isum waits.
  int gran(int t) const { return gemm(t) ? f_.gemm_units : f_.units; }
  bool chain_start(int t, int u) const {
    return u % gran(t) == 0 || (!gemm(t) && u == f_.units / 2);
  }
  int part_slot(int t, int u) const { return gemm(t) || u < f_.units / 2 ? kPartA : kPartB; }
  // Displacement of bsums of sub-block j in a token's bsum slots.
  int bsum_disp(int j) const { return f_.q2 ? (j % 2 ? 32 : 0) + 4 * (j / 2) : 4 * j; }
  int act_disp(int j, int d) const { return kAQs + 4 * f_.sub_dwords * j + 4 * d; }

  void transpose16(int off, V out[4]);
  void heads();
  void scales(V u0, V u1, V u2);
  void scales_q2(const V u[4]);
  void token_factors();
  void transpose_chunk(int qoff, V q[8]);
  void unit_avx512(int u, V w[2][8]);
  void unit_avx2(int u, const V q[8]);
  V start_part(int t, int u);
  void finish(int t, int u, V part, const V fmn[2]);
  void store(V nrows, V y);  // the rows [0, nrows) (of the half frame_ is at) at y

  Builder b_;
  TileArgs a_;
  const X8Format& f_;
  const int nsub_, kSc, kMn, kWhi, kScratch, kTok0;
  bool avx512_;
  int rows_, bits_, n_gemm_, tokens_;
  bool r16_;
  bool vnni_;  // AVX2 tile with AVX-VNNI: vpdpbusd (ymm) in place of vpmaddubsw + vpmaddwd
  std::vector<V> roff_;
  // AVX2 on the r16 copy: a super-block's two 8-row halves in turn, each with a frame of its
  // own after the other's: the code of each (half_ 0, 1), or one half's code in a loop that
  // moves wb_ by 32 bytes and frame_ to the next half's frame (half_ 0).
  int halves_, half_ = 0;
  V frame_, wb_, dw_, dminw_, even_odd_;
  TokenRows8 tr_;
};

int Tile::build() {
  Builder& b = b_;
  // Byte offsets of the rows from w, clamped to nrows - 1 (the r16 copy: none).
  if (!r16_) {
    V last = b.i64("last"), i = b.i64("i");
    b.addi(last, a_.nrows, -1);
    for (int r = 0; r < rows_; ++r) {
      roff_.push_back(b.i64("roff"));
      b.movi(i, r);
      b.min(i, i, last);
      b.mul(roff_.back(), i, a_.rb);
    }
  }
  // Aligned to the vector size: its loads and stores split no cache line.
  frame_ = b.ptr("frame");
  static_assert(kB32 + 2 <= kTokSlots);
  b.ptr_align(frame_, b.stack(kTok0 * vb() + halves_ * half_stride() + vb(), "frame_raw"), vb());
  tr_ = token_rows8(b, a_.a, a_.as, tokens_);
  {
    V z = vec("z", Cls::F);
    b.vzero(z);
    for (int h = 0; h < halves_; ++h)
      for (int t = 0; t < tokens_; ++t) {
        b.vstore(tok(t, kAcc, h * half_stride()), z);
        b.vstore(tok(t, kAccMin, h * half_stride()), z);
      }
  }

  {
    const uint32_t n = uint32_t(rows_);  // f32 lanes per vector
    std::vector<uint32_t> eo;
    for (uint32_t l = 0; l < n; ++l) eo.push_back(l < n / 2 ? 2 * l : 2 * (l - n / 2) + 1);
    even_odd_ = vec("even_odd");
    b.vconst32(even_odd_, eo);
  }
  V off = b.i64("off"), end = b.i64("end");
  wb_ = b.ptr("wb");
  b.muli(end, a_.n, wblock());
  const RowPrefetch pf = row_prefetch(b, a_, rows_);
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(wblock(), "block_bytes"));
  b.ptr_add(wb_, a_.w, off, 1);  // this super-block of row 0 (r16: of the group)
  if (r16_) {
    if (stream_prefetch(tokens_))
      for (int l = 0; l < wblock(); l += 64) b.vprefetch(r16(kStreamPrefetchAhead + l));
  } else {
    V ahead = b.ptr("ahead");
    b.ptr_add(ahead, wb_, pf.dist, 1);
    for (int r = 0; r < rows_; ++r)
      for (int l = 0; l < f_.block; l += 64) b.vprefetch(Mem{ahead, roff_[size_t(r)], 1, l});
  }
  if (halves_ == 1) {
    super_block();
  } else {
    // The full tile (the one prefill runs) with the code of each half (a loop over the
    // halves measured slower, 65 GMAC/s against up to 83 for q4_K on one Zen 5 core capped to
    // AVX2, though these tiles' speed swings between runs: the map's note); the rest tiles
    // in a loop: half the code to compile.
    if (tokens_ == 8) {
      for (half_ = 0; half_ < 2; ++half_) super_block();  // rows 8-15: bytes 32-63 of a line
      half_ = 0;
    } else {
      V h = b.i64("half");
      b.for_(h, b.imm(0, "zero_h"), b.imm(2, "two_h"), b.imm(1, "one_h"));
      super_block();
      b.addi(wb_, wb_, 32);  // rows 8-15: the second 32 bytes of each 64-byte line
      b.addi(frame_, frame_, half_stride());
      b.end_for();
      b.addi(frame_, frame_, -2 * half_stride());
    }
  }
  tr_.advance(b, kABlock);
  b.end_for();
  if (halves_ == 1) {
    store(a_.nrows, a_.y);
    return b.index();
  }
  V n = b.i64("nrows_lo"), eight = b.imm(8, "eight");
  b.min(n, a_.nrows, eight);
  store(n, a_.y);
  b.if_(a_.nrows, kir::Cmp::GT, 8);  // a group's last rows may end in its first half
  {
    V n_hi = b.i64("nrows_hi"), y_hi = b.ptr("y_hi");
    b.addi(n_hi, a_.nrows, -8);
    b.mov(y_hi, a_.y);
    b.addi(y_hi, y_hi, 32);
    b.addi(frame_, frame_, half_stride());
    store(n_hi, y_hi);
  }
  b.end_if();
  return b.index();
}

// One super-block of the tile's rows (AVX2 r16: of the half at wb_ / frame_) for every token.
void Tile::super_block() {
  Builder& b = b_;
  heads();
  token_factors();
  V q[8];
  for (int u = 0; u < f_.units; ++u) {
    if (r16_ && !f_.q2) {
      for (int d = 0; d < 8; ++d) {
        q[d] = vec("Q");
        b.vload(q[d], r16(256 + 512 * u + 64 * d));  // lane r = dword d of row r's chunk u
      }
    } else if (!f_.q2) {
      transpose_chunk(f_.qs + 32 * u, q);
    } else if (u % 4 == 0) {  // q2_K: one transpose (r16: 8 loads) per half, kept for its 4
      if (r16_) {             // groups
        for (int d = 0; d < 8; ++d) {
          q[d] = vec("Q");
          b.vload(q[d], r16(320 + 512 * (u / 4) + 64 * d));  // lane r = dword d of row r's half
        }
      } else {
        transpose_chunk(f_.qs + 32 * (u / 4), q);
      }
      if (!avx512_)
        for (int d = 0; d < 8; ++d) b.vstore(slot(kWhi + d), q[d]);
    }
    if (!avx512_) {
      unit_avx2(u, q);
      continue;
    }
    V w[2][8];
    if (f_.q2) {  // W of sub-block 2u + h: (Q_{4h + d} >> 2g) & 3
      V three = splat("three", 0x03030303u);
      const int g = u % 4;
      for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 4; ++d) {
          w[h][d] = vec("W");
          if (g) b.vsrl_i16(w[h][d], q[4 * h + d], 2 * g);
          b.vand(w[h][d], g ? w[h][d] : q[4 * h + d], three);
        }
    } else {
      V nib = splat("nib", 0x0F0F0F0Fu);
      for (int d = 0; d < 8; ++d) {
        w[0][d] = vec("Wlo");
        w[1][d] = vec("Whi");
        b.vand(w[0][d], q[d], nib);
        b.vsrl_i16(w[1][d], q[d], 4);
        b.vand(w[1][d], w[1][d], nib);
      }
    }
    unit_avx512(u, w);
  }
}

// The rows' 16 bytes at `off`, one dword per lane: H_i's 128-bit block k = row 4k + i; the
// 4x4 dword transposes within 128-bit blocks give out[d] lane r = dword d of row r (outputs
// left invalid by the caller are not computed).
void Tile::transpose16(int off, V out[4]) {
  Builder& b = b_;
  const int blocks = rows_ / 4;
  V H[4];
  for (int i = 0; i < 4; ++i) {
    H[i] = vec("H");
    b.vbcast128(H[i], row(i, off));
    for (int k = 1; k < blocks; ++k) {
      V x = b.vec(128, Cls::I, "head");
      b.vload(x, row(4 * k + i, off));
      b.vinsert(H[i], H[i], x, k);
    }
  }
  const bool lo = out[0].valid() || out[1].valid(), hi = out[2].valid() || out[3].valid();
  V lo01, hi01, lo23, hi23;
  if (lo) {
    lo01 = vec("lo01");
    lo23 = vec("lo23");
    b.vunpack_lo32(lo01, H[0], H[1]);
    b.vunpack_lo32(lo23, H[2], H[3]);
  }
  if (hi) {
    hi01 = vec("hi01");
    hi23 = vec("hi23");
    b.vunpack_hi32(hi01, H[0], H[1]);
    b.vunpack_hi32(hi23, H[2], H[3]);
  }
  if (out[0].valid()) b.vunpack_lo64(out[0], lo01, lo23);
  if (out[1].valid()) b.vunpack_hi64(out[1], lo01, lo23);
  if (out[2].valid()) b.vunpack_lo64(out[2], hi01, hi23);
  if (out[3].valid()) b.vunpack_hi64(out[3], hi01, hi23);
}

// The block heads: d and dmin as f32 lanes, the scales and mins into the frame.
void Tile::heads() {
  Builder& b = b_;
  V dd = vec("d_dmin"), u[4];  // dd lane r: d | dmin << 16 of row r
  if (f_.q2) {
    for (V& x : u) x = vec("scales");  // scale bytes 4i..4i+3
    if (r16_) {
      for (int i = 0; i < 4; ++i) b.vload(u[i], r16(64 * i));  // lane r = row r's dword i
      b.vload(dd, r16(256));
    } else {
      transpose16(0, u);
      V t[4] = {V{}, V{}, V{}, dd};  // bytes 80-83 of the rows
      transpose16(80 - 12, t);
    }
  } else {
    u[0] = dd;
    for (int i = 1; i < 4; ++i) u[i] = vec("u");  // scale bytes 4(i-1)..4(i-1)+3
    if (r16_) {
      for (int i = 0; i < 4; ++i) b.vload(u[i], r16(64 * i));  // lane r = row r's dword i
    } else {
      transpose16(0, u);
    }
  }

  // d and dmin: the fp16 pairs of each half as f32 [d, dmin, d, dmin, ...], split by vpermd
  // into [d of the half | dmin of the half], then the halves joined by 128-bit shuffles.
  const int hb = bits_ / 2;
  V ddh = b.vec(hb, Cls::I, "d_dmin_hi"), f0 = vec("f0", Cls::F), f1 = vec("f1", Cls::F),
    p0 = vec("p0", Cls::F), p1 = vec("p1", Cls::F);
  b.vextract(ddh, dd, 1);
  b.vcvt_f16_f32(f0, b.view(dd, hb, Cls::I));
  b.vcvt_f16_f32(f1, ddh);
  b.vperm_d(p0, f0, even_odd_);  // [d rows of half 0, dmin rows of half 0]
  b.vperm_d(p1, f1, even_odd_);
  dw_ = vec("dw", Cls::F);
  dminw_ = vec("dminw", Cls::F);
  if (avx512_) {
    b.vshuf128(dw_, p0, p1, 0x44);
    b.vshuf128(dminw_, p0, p1, 0xEE);
  } else {
    b.vcombine128(dw_, p0, p1, 0);
    b.vcombine128(dminw_, p0, p1, 3);
  }
  if (f_.q2)
    scales_q2(u);
  else
    scales(u[1], u[2], u[3]);
}

// q2_K: sub-block j's scale byte is byte j % 4 of u[j / 4]: sc_j its low nibble, m_j its high.
void Tile::scales_q2(const V u[4]) {
  Builder& b = b_;
  V k0f = splat("k0f", 0x0F0F0F0Fu), kff = splat("kff", 0x000000FFu);
  for (int i = 0; i < 4; ++i)
    for (int mins = 0; mins < 2; ++mins) {
      V nib = vec(mins ? "mn4" : "sc4");
      if (mins) {
        b.vsrl_i32(nib, u[i], 4);
        b.vand(nib, nib, k0f);
      } else {
        b.vand(nib, u[i], k0f);
      }
      for (int k = 0; k < 4; ++k) {
        V v = vec("byte"), f = vec(mins ? "fm" : "fsc", Cls::F);
        if (k == 0) {
          b.vand(v, nib, kff);
        } else {
          b.vsrl_i32(v, nib, 8 * k);
          if (k < 3) b.vand(v, v, kff);
        }
        b.vcvt_i32_f32(f, v);
        b.vstore(slot((mins ? kMn : kSc) + 4 * i + k), f);
      }
    }
}

// ggml's utmp unpacking, per lane: sc 0-3, sc 4-7, m 0-3, m 4-7 (a byte each), then each
// 6-bit value as an f32 lane vector in the frame.
void Tile::scales(V u0, V u1, V u2) {
  Builder& b = b_;
  V k3f = splat("k3f", 0x3F3F3F3Fu), k0f = splat("k0f", 0x0F0F0F0Fu),
    k03 = splat("k03", 0x03030303u), kff = splat("kff", 0x000000FFu);
  V sc_a = vec("sc03"), sc_b = vec("sc47"), mn_a = vec("mn03"), mn_b = vec("mn47");
  V t1 = vec("t1"), t2 = vec("t2");
  b.vand(sc_a, u0, k3f);
  b.vsrl_i16(t1, u0, 6);
  b.vand(t1, t1, k03);
  b.vsll_i16(t1, t1, 4);
  b.vand(sc_b, u2, k0f);
  b.vor(sc_b, sc_b, t1);
  b.vand(mn_a, u1, k3f);
  b.vsrl_i16(t1, u1, 6);
  b.vand(t1, t1, k03);
  b.vsll_i16(t1, t1, 4);
  b.vsrl_i16(t2, u2, 4);
  b.vand(t2, t2, k0f);
  b.vor(mn_b, t2, t1);
  for (int j = 0; j < 8; ++j)
    for (int mins = 0; mins < 2; ++mins) {
      const V src = mins ? (j < 4 ? mn_a : mn_b) : (j < 4 ? sc_a : sc_b);
      const int k = j % 4;
      V v = vec("byte"), f = vec(mins ? "fm" : "fsc", Cls::F);
      if (k == 0) {
        b.vand(v, src, kff);
      } else {
        b.vsrl_i32(v, src, 8 * k);
        if (k < 3) b.vand(v, v, kff);
      }
      b.vcvt_i32_f32(f, v);
      b.vstore(slot((mins ? kMn : kSc) + j), f);
    }
}

// Per token: fl(d_w * d_a), fl(dmin_w * d_a), and bsum32_j = bsums[2j] + bsums[2j+1] as f32.
void Tile::token_factors() {
  Builder& b = b_;
  V ones;
  if (!f_.q2) {
    ones = b.vec(256, Cls::I, "ones16");
    b.vsplat32(ones, 0x00010001u);
  }
  for (int t = 0; t < tokens_; ++t) {
    V da = vec("da", Cls::F), d = vec("d", Cls::F);
    b.vbcast_f32(da, act(t, 0));
    b.vmul_f(d, dw_, da);
    b.vstore(tok(t, kD), d);
    b.vmul_f(d, dminw_, da);
    b.vstore(tok(t, kDMin), d);
    V bs = b.vec(256, Cls::I, "bsums"), b32 = b.vec(256, Cls::I, "bsum32"),
      fb = b.vec(256, Cls::F, "fbsum32");
    b.vload(bs, act(t, kABsums));
    if (f_.q2) {  // the 16 bsums as f32: even j (the word times 1, its neighbour times 0), odd j
      for (int odd = 0; odd < 2; ++odd) {
        V sel = b.vec(256, Cls::I, "sel");
        b.vsplat32(sel, odd ? 0x00010000u : 0x00000001u);
        b.vmadd_wd(b32, bs, sel);
        b.vcvt_i32_f32(fb, b32);
        b.vstore(tok(t, kB32, 32 * odd), fb);
      }
      continue;
    }
    b.vmadd_wd(b32, bs, ones);  // exact: |sum| <= 4096
    b.vcvt_i32_f32(fb, b32);
    b.vstore(tok(t, kB32), fb);
  }
}

// The rows' 32 quant bytes at qoff as Q_d = dword d of rows 0..rows-1.
//   AVX-512: Z_p = [row p | row p + 4] and Z_{4+p} = [row 8 + p | row 12 + p]; the 4x4 dword
//   transposes within 128-bit blocks give T_k = [rows 0-3 dword k, rows 0-3 dword 4+k, rows
//   4-7 dword k, rows 4-7 dword 4+k] (and rows 8-15), one 128-bit shuffle each Q_d.
//   AVX2: Y_r = row r; T_k = [rows 0-3 dword k | rows 0-3 dword 4+k] (and rows 4-7), one
//   128-bit combine each Q_d.
void Tile::transpose_chunk(int qoff, V q[8]) {
  Builder& b = b_;
  V Z[8];
  for (int p = 0; p < 8; ++p) {
    Z[p] = vec("Z");
    if (avx512_) {
      const int r0 = p < 4 ? p : 4 + p;  // rows r0 and r0 + 4
      V y = b.vec(256, Cls::I, "rowq");
      b.vbcast256(Z[p], row(r0, qoff));
      b.vload(y, row(r0 + 4, qoff));
      b.vinsert(Z[p], Z[p], y, 1);
    } else {
      b.vload(Z[p], row(p, qoff));
    }
  }
  V T[2][4];
  for (int h = 0; h < 2; ++h) {
    const V* z = Z + 4 * h;
    V lo01 = vec("lo01"), hi01 = vec("hi01"), lo23 = vec("lo23"), hi23 = vec("hi23");
    b.vunpack_lo32(lo01, z[0], z[1]);
    b.vunpack_hi32(hi01, z[0], z[1]);
    b.vunpack_lo32(lo23, z[2], z[3]);
    b.vunpack_hi32(hi23, z[2], z[3]);
    for (int k = 0; k < 4; ++k) T[h][k] = vec("T");
    b.vunpack_lo64(T[h][0], lo01, lo23);
    b.vunpack_hi64(T[h][1], lo01, lo23);
    b.vunpack_lo64(T[h][2], hi01, hi23);
    b.vunpack_hi64(T[h][3], hi01, hi23);
  }
  for (int d = 0; d < 8; ++d) {
    q[d] = vec("Q");
    if (avx512_)
      b.vshuf128(q[d], T[0][d % 4], T[1][d % 4], d < 4 ? 0x88 : 0xDD);
    else
      b.vcombine128(q[d], T[0][d % 4], T[1][d % 4], d < 4 ? 0 : 3);
  }
}

// A unit's isum part starts a chain from +0, or continues its granule's chain.
V Tile::start_part(int t, int u) {
  V part = vec("isum", Cls::F);
  if (chain_start(t, u))
    b_.vzero(part);
  else
    b_.vload(part, tok(t, part_slot(t, u)));
  return part;
}

// After both sub-blocks of unit u: a chain waits until its granule ends; a granule's end
// updates acc and accmin (fmn: the unit's two mins in registers, or none).
void Tile::finish(int t, int u, V part, const V fmn[2]) {
  Builder& b = b_;
  if (u % gran(t) != gran(t) - 1) {
    b.vstore(tok(t, part_slot(t, u)), part);
    return;
  }
  if (!gemm(t)) {  // isum = chain A + chain B, rounded once (= vcvtdq2ps(isum))
    V pa = vec("isum_a", Cls::F);
    b.vload(pa, tok(t, kPartA));
    b.vadd_f(part, pa, part);
  }
  V acc = vec("acc", Cls::F);
  b.vload(acc, tok(t, kAcc));
  b.vfma_m(acc, part, tok(t, kD));
  b.vstore(tok(t, kAcc), acc);
  // imin of the granule's sub-blocks, an exact chain.
  V mn = vec("imin", Cls::F);
  b.vzero(mn);
  const int jb = 2 * (u + 1 - gran(t)), je = 2 * u + 2;
  for (int j = jb; j < je; ++j) {
    V bj = vec("bsum32", Cls::F);
    b.vbcast_f32(bj, tok(t, kB32, bsum_disp(j)));
    if (gemm(t) && fmn && fmn[0].valid() && je - jb == 2)
      b.vfma(mn, bj, fmn[j - jb]);
    else
      b.vfma_m(mn, bj, slot(kMn + j));
  }
  V accm = vec("accmin", Cls::F);
  b.vload(accm, tok(t, kAccMin));
  b.vfma_m(accm, mn, tok(t, kDMin));
  b.vstore(tok(t, kAccMin), accm);
}

// AVX-512: the unit's W (q4_K: W_lo and W_hi, 16 zmm) in registers; the sums of kInterleave
// tokens at a time, their 2 * kInterleave vpdpbusd chains interleaved (latency 5; two issue
// per cycle).
void Tile::unit_avx512(int u, V w[2][8]) {
  constexpr int kInterleave = 4;
  Builder& b = b_;
  const int j0 = 2 * u;  // sub-blocks j0 (W[0]) and j0 + 1 (W[1])
  V fsc[2], fmn[2];      // their f32 scales and mins, for every token
  for (int h = 0; h < 2; ++h) {
    fsc[h] = vec("fsc", Cls::F);
    b.vload(fsc[h], slot(kSc + j0 + h));
    if (n_gemm_ > 0 && f_.gemm_units == 1) {  // other granules read their mins at the end
      fmn[h] = vec("fmn", Cls::F);
      b.vload(fmn[h], slot(kMn + j0 + h));
    }
  }
  V s[8][2];
  for (int t0 = 0; t0 < tokens_; t0 += kInterleave) {
    const int te = std::min(tokens_, t0 + kInterleave);
    for (int t = t0; t < te; ++t)
      for (int h = 0; h < 2; ++h) {
        s[t][h] = vec(h ? "s_hi" : "s_lo");
        b.vzero(s[t][h]);
      }
    for (int d = 0; d < f_.sub_dwords; ++d)
      for (int t = t0; t < te; ++t)
        for (int h = 0; h < 2; ++h) {
          // the activation dword broadcast as the instruction's memory operand
          b.vdpbusd_b(s[t][h], w[h][d], act(t, act_disp(j0 + h, d)));
        }
    for (int t = t0; t < te; ++t) {
      V part = start_part(t, u);
      for (int h = 0; h < 2; ++h) {
        V f = vec("f", Cls::F);
        b.vcvt_i32_f32(f, s[t][h]);
        b.vfma(part, f, fsc[h]);
      }
      finish(t, u, part, fmn);
    }
  }
}

// AVX2 (16 ymm): one sub-block pass at a time with its W in registers (q4_K: W_hi waits in
// the frame; q2_K: the half's Q_d wait there), one token at a time: 8 (q2_K: 4) vpmaddubsw,
// vpaddw, vpmaddwd by 1s.
void Tile::unit_avx2(int u, const V q[8]) {
  Builder& b = b_;
  const int nd = f_.sub_dwords;
  V w[8];
  if (!f_.q2) {
    V nib = splat("nib", 0x0F0F0F0Fu);
    for (int d = 0; d < 8; ++d) {
      V hi = vec("Whi");
      b.vsrl_i16(hi, q[d], 4);
      b.vand(hi, hi, nib);
      b.vstore(slot(kWhi + d), hi);
      w[d] = vec("W");
      b.vand(w[d], q[d], nib);
    }
  }
  for (int h = 0; h < 2; ++h) {
    if (f_.q2) {  // W_d = (Q_{4h + d} >> 2g) & 3
      V three = splat("three", 0x03030303u);
      const int g = u % 4;
      for (int d = 0; d < nd; ++d) {
        w[d] = vec("W");
        b.vload(w[d], slot(kWhi + 4 * h + d));
        if (g) b.vsrl_i16(w[d], w[d], 2 * g);
        b.vand(w[d], w[d], three);
      }
    } else if (h == 1) {
      for (int d = 0; d < 8; ++d) {
        w[d] = vec("W");
        b.vload(w[d], slot(kWhi + d));
      }
    }
    const int j = 2 * u + h;
    V ones = vnni_ ? V{} : splat("ones16", 0x00010001u);
    for (int t = 0; t < tokens_; ++t) {
      V s = vec("s");
      if (vnni_) {
        // AVX-VNNI: the same int32 sums, one vpdpbusd per activation dword, in two chains
        // (even and odd dwords; integer adds, so exact), so the one-token gemv does not wait
        // on one chain of nd dependent vpdpbusd.
        V s1 = vec("s1");
        b.vzero(s);
        b.vzero(s1);
        for (int d = 0; d < nd; ++d) {
          V ad = vec("ad");
          b.vbcast_f32(ad, act(t, act_disp(j, d)));
          b.vdpbusd(d % 2 ? s1 : s, w[d], ad);
        }
        b.vadd_i32(s, s, s1);
      } else {
        V p = vec("p16");
        for (int d = 0; d < nd; ++d) {
          V ad = vec("ad"), x = d ? vec("x16") : p;
          b.vbcast_f32(ad, act(t, act_disp(j, d)));  // activation dword (bits)
          b.vmaddubs_w(x, w[d], ad);                 // no saturation: |pair| <= 2 * 15 * 128
          if (d) b.vadd_i16(p, p, x);                // |16 products| <= 30720: no wrap
        }
        b.vmadd_wd(s, p, ones);
      }
      V f = vec("f", Cls::F), part;
      b.vcvt_i32_f32(f, s);
      if (h == 0) {
        part = start_part(t, u);
      } else {
        part = vec("isum", Cls::F);
        b.vload(part, tok(t, part_slot(t, u)));
      }
      b.vfma_m(part, f, slot(kSc + j));
      if (h == 0)
        b.vstore(tok(t, part_slot(t, u)), part);
      else
        finish(t, u, part, nullptr);
    }
  }
}

// y = acc - accmin, rows [0, nrows).
void Tile::store(V nrows, V y) {
  Builder& b = b_;
  V yt = b.ptr("yt");
  b.mov(yt, y);
  V mask;
  if (avx512_) {
    mask = b.mask("store");
    b.kfirst_n(mask, nrows);
  }
  for (int t = 0; t < tokens_; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a_.ys, 1);
    V acc = vec("acc", Cls::F), o = vec("o", Cls::F);
    b.vload(acc, tok(t, kAcc));
    b.vload(o, tok(t, kAccMin));
    b.vsub_f(o, acc, o);
    if (avx512_) {
      b.vstore_mk(Mem{yt, {}, 1, 0}, o, mask);
      continue;
    }
    b.if_(nrows, kir::Cmp::EQ, rows_);
    b.vstore(Mem{yt, {}, 1, 0}, o);
    b.end_if();
    b.if_(nrows, kir::Cmp::LT, rows_);  // lane by lane through the frame
    b.vstore(slot(kScratch), o);
    for (int r = 0; r < rows_; ++r) {
      if (r > 0) b.if_(nrows, kir::Cmp::GT, r);
      V x = b.vec(128, Cls::F, "y1");
      b.vload_ss(x, slot(kScratch, 4 * r));
      b.vstore_ss(Mem{yt, {}, 1, 4 * r}, x);
      if (r > 0) b.end_if();
    }
    b.end_if();
  }
}

bool build_x8(const X8Format& f, Isa isa, const GeneratorParams& params, kir::Module* m,
              std::string* err, bool avx_vnni = false) {
  const std::string name =
      fmt::format("linear_{}x8__{}", f.name, avx_vnni ? "avxvnni" : isa_suffix(isa));
  const char* gen = name.c_str();
  const bool avx512 = isa != Isa::Avx2;
  const int want_rows = avx512 ? 16 : 8;
  int rows = want_rows, tokens = 1, gemv = 0;
  if (!int_params(params, gen, {{"rows", &rows}, {"tokens", &tokens}, {"gemv", &gemv}}, err))
    return false;
  if (rows != want_rows || (tokens != 1 && tokens != 4 && tokens != 8) ||
      (gemv != 0 && gemv != 1)) {
    *err = fmt::format(
        "generator '{}': tile {}x{} (gemv {}) is not one it can emit (rows {}, tokens 1, 4 or 8, "
        "gemv 0 or 1)",
        gen, rows, tokens, gemv, want_rows);
    return false;
  }
  m->isa = isa_features(isa);
  if (avx_vnni) m->isa.push_back("avxvnni");  // Tile reads it
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}{}: ggml's repacked {}_8x8 {} arithmetic of "
      "contract linear.{}x8.ggml, one lane per row\n(activations: Q8_K rows from the plan's "
      "act_quant step)",
      gen, rows, tokens, gemv ? ", gemv 1" : "", f.name, gemv ? "gemv (every token)" : "gemm/gemv",
      f.name);
  Builder e = open_linear_entry(*m, m->name);
  auto tile = [&](const std::string& name, int n_gemm, int n_gemv) {
    return Tile(*m, name, f, avx512, n_gemm, n_gemv).build();
  };
  Grid g;
  g.R = rows;
  g.G = tokens;
  if (tokens == 1) {
    // Decode: one token, the gemv granule (the map's phase is decode only: T = 1).
    g.full_fn = tile(m->name + "_gemv1", 0, 1);
  } else if (gemv) {
    // Every token through the gemv granule, `tokens` at a time (the expert matmuls: ggml's
    // mul_mat_id calls its repacked gemv once per pair, never the gemm).
    // A rest of 4 or more: 4 tokens, then the others (fewer functions to compile).
    g.full_fn = tile(fmt::format("{}_gemv{}", m->name, tokens), 0, tokens);
    if (tokens == 8) {
      g.head = 4;
      g.head_fn = tile(fmt::format("{}_gemv4", m->name), 0, 4);
    }
    for (int r = 1; r < 4; ++r) g.rem_fn[r] = tile(fmt::format("{}_gemv{}", m->name, r), 0, r);
  } else {
    // Whole groups through the gemm; a group's last r tokens: the 4 of a whole 4 (if any)
    // through the gemm, the T % 4 after them through the gemv.
    g.full_fn = tile(fmt::format("{}_gemm{}", m->name, tokens), tokens, 0);
    if (tokens == 8) {
      g.head = 4;
      g.head_fn = tile(fmt::format("{}_gemm4", m->name), 4, 0);
    }
    for (int r = 1; r < 4; ++r) g.rem_fn[r] = tile(fmt::format("{}_gemv{}", m->name, r), 0, r);
  }
  emit_linear_entry(e, g, {kQK_K, f.block, kABlock});
  return true;
}

// q4_K / q2_K on its q4_K_r16 / q2_K_r16 copy, AVX-512 VNNI: the tiles of build_x8 reading
// the transposed super-blocks directly (q4_K's decode: its own integer gemv). At AVX2 /
// AVX-VNNI (isa Avx2): the prefill tile only, 8 tokens on each 8-row half in turn (the decode
// gemvs are gen_linear_q2_K_r16_avx2.cpp's and gen_linear_q4_K_r16_avx2.cpp's).
bool build_r16(const X8Format& f, Isa isa, bool avx_vnni, const GeneratorParams& params,
               kir::Module* m, std::string* err) {
  const bool avx512 = isa != Isa::Avx2;
  const std::string name =
      fmt::format("linear_{}_r16__{}", f.name, avx_vnni ? "avxvnni" : isa_suffix(isa));
  const char* gen = name.c_str();
  int rows = 16, tokens = avx512 ? 1 : 8, decode_group = 8;
  if (!int_params(params, gen,
                  {{"rows", &rows}, {"tokens", &tokens}, {"decode_group", &decode_group}}, err))
    return false;
  if (rows != 16 || (tokens != 8 && (tokens != 1 || !avx512))) {
    *err = fmt::format("generator '{}': tile {}x{} is not one it can emit (rows 16, tokens {})",
                       gen, rows, tokens, avx512 ? "1 or 8" : "8");
    return false;
  }
  if (decode_group < 1 || decode_group > 8 || (tokens != 1 && decode_group != 8)) {
    *err = fmt::format("generator '{}': decode_group {} (1..8, with tokens 1 only)", gen,
                       decode_group);
    return false;
  }
  m->isa = isa_features(isa);
  if (avx_vnni) m->isa.push_back("avxvnni");  // Tile reads it
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}: ggml's repacked {}_8x8 gemm/gemv arithmetic of "
      "contract linear.{}x8.ggml on the\n{}_r16 weight copy, one lane per row "
      "(activations: Q8_K rows from the plan's act_quant step)",
      gen, rows, tokens, f.name, f.name, f.name);
  Builder e = open_linear_entry(*m, m->name);
  auto tile = [&](const std::string& fn, int n_gemm, int n_gemv) {
    if (avx512 && !f.q2 && n_gemm == 0 && n_gemv == 1) return emit_q4_K_r16_gemv1(*m, fn);
    return Tile(*m, fn, f, avx512, n_gemm, n_gemv, true).build();
  };
  Grid g;
  g.R = 16;
  g.G = 8;
  if (tokens == 1) {
    // Decode: one token is the gemv. A batch of decode tokens (decode_batch) runs in groups
    // of up to decode_group (8; 1 where the plan never batches: generators.h plan_params)
    // gemv tokens: each token's bits as alone, the weights read once a group.
    g.G = decode_group;
    for (int r = 1; r < g.G; ++r) g.rem_fn[r] = tile(fmt::format("{}_gemv{}", m->name, r), 0, r);
    g.full_fn = tile(fmt::format("{}_gemv{}", m->name, g.G), 0, g.G);
  } else {
    // The rest of r tokens: the gemm of its whole 4 (if any), then the gemv of r % 4.
    g.full_fn = tile(fmt::format("{}_gemm{}", m->name, tokens), tokens, 0);
    g.head = 4;
    g.head_fn = tile(fmt::format("{}_gemm4", m->name), 4, 0);
    for (int r = 1; r < 4; ++r) g.rem_fn[r] = tile(fmt::format("{}_gemv{}", m->name, r), 0, r);
  }
  emit_r16_entry(e, g, {kQK_K, f.block, kABlock});
  return true;
}

}  // namespace

bool build_linear_q4_Kx8_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_x8(kQ4Kx8, Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q4_Kx8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_x8(kQ4Kx8, Isa::Avx2, p, m, err);
}
bool build_linear_q4_Kx8_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_x8(kQ4Kx8, Isa::Avx2, p, m, err, true);
}
bool build_linear_q2_Kx8_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_x8(kQ2Kx8, Isa::Avx2, p, m, err, true);
}
bool build_linear_q2_Kx8_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_x8(kQ2Kx8, Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q2_Kx8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_x8(kQ2Kx8, Isa::Avx2, p, m, err);
}
bool build_linear_q4_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_r16(kQ4Kx8, Isa::Avx512Vnni, false, p, m, err);
}
bool build_linear_q2_K_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_r16(kQ2Kx8, Isa::Avx512Vnni, false, p, m, err);
}
bool build_linear_q4_K_r16_gemm_avx2(bool vnni, const GeneratorParams& p, kir::Module* m,
                                     std::string* err) {
  return build_r16(kQ4Kx8, Isa::Avx2, vnni, p, m, err);
}
bool build_linear_q2_K_r16_gemm_avx2(bool vnni, const GeneratorParams& p, kir::Module* m,
                                     std::string* err) {
  return build_r16(kQ2Kx8, Isa::Avx2, vnni, p, m, err);
}

}  // namespace cke::jit::gen
