// Generated linear kernels for Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 weights (contracts
// linear.{q8_0,q4_0,q4_1,q5_0,q5_1}.ggml), written once in KIR (jit/kir/kir.h).
//
// The entry (linear ABI of kernels/ref/linear.h) reads activations already quantized to
// Q8_0 rows (Q8_1 for q4_1 / q5_1) by the plan's act_quant step (contracts
// act_quant.q8_{0,1}.ggml: ggml's x86 quantizers; shared by every linear reading the same
// input) and walks the grid of row tiles x token groups (gen_tile.h). No scratch, no helper
// calls: every dot product and float accumulation is generated code.
//
// Which arithmetic a provider computes is fixed by its generator, i.e. by its contract (the
// resolver picks the contract from the matrix shape; no kernel looks at N):
//   Arith::Plain    ggml_vec_dot_{q8_0,q4_0,q5_0}_q8_0 and ggml_vec_dot_{q4_1,q5_1}_q8_1
//                   (linear.<format>.ggml): 8 float lanes of 4-element int32 dots, one FMA
//                   per block, hsum8; q4_1 / q5_1 add their min term (MinTerm below).
//   Arith::Repacked ggml's repacked q4_0_8x8 (linear.q4_0x8.ggml): one float accumulator
//                   per output, one FMA per block of the full 32-element int32 dot; tokens
//                   in groups of 4 as the gemm (exact products: a = activation), the
//                   T % 4 rest as the gemv (vpsignb products: a = weight).
#pragma once

#include <string>

#include "jit/gen_formats.h"
#include "jit/gen_rows16.h"
#include "jit/gen_tile.h"
#include "jit/generators.h"
#include "jit/kir/kir.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {

enum class QArith : uint8_t { Plain, Gemv, Gemm };

inline int q_block_bytes(QFormat f) {
  return q_traits(f).block_bytes;
}

// The loop over a tile's blocks: `off` is the byte offset of the block in a weight row;
// the token rows advance by one activation block (block_q8_0: fp16 scale, 32 quants;
// block_q8_1: fp16 scale, fp16 sum, 32 quants) per iteration.
struct BlockLoop {
  kir::V off;
};
// The loop over the blocks of the tile's rows (prefetched ahead, gen_tile.h prefetch_rows).
BlockLoop open_block_loop(kir::Builder& b, const TileArgs& a, QFormat f, TokenRows& tr,
                          const std::vector<kir::V>& rows);
void close_block_loop(kir::Builder& b, TokenRows& tr, QFormat f);
// Token t's block: its 32 quants, its fp16 scale (broadcast to `bits` of f32 lanes, exact)
// at byte 0.
inline kir::Mem act_quants(const TokenRows& tr, int t, QFormat f) {
  return tr.at(t, q_traits(f).act_quants_offset);
}
kir::V act_scale(kir::Builder& b, const TokenRows& tr, int t, int bits);
// One block of one token into its float accumulator: acc = fma(fl(dw * da), float(isum),
// acc) (multiplication commutes exactly: ggml's plain and repacked kernels order the FMA's
// factors differently, the bits are the same).
void fma_block(kir::Builder& b, kir::V acc, kir::V isum, kir::V dw, kir::V da);

// The min term of q4_1 / q5_1 (ggml_vec_dot_q{4,5}_1_q8_1): a scalar f32 chain per output,
// summs = fma(m_w, s_a, summs) once per block in block order (GCC contracts ggml's
// `summs += m * s` to one FMA), added after the hsum8: y = hsum8(acc) + summs. Here one
// 128-bit (up to 4 rows) or 256-bit (up to 8) vector per token of the tile, lane i = tile row i.
struct MinTerm {
  std::vector<kir::V> summs;  // per token; empty for formats without a min
};
MinTerm open_min_term(kir::Builder& b, QFormat f, int tokens, int rows);
// Inside the block loop: the rows' m (fp16 at min_offset) and each token's s (the Q8_1 sum).
void min_term_block(kir::Builder& b, QFormat f, MinTerm& mt, const std::vector<kir::V>& rows,
                    kir::V off, const TokenRows& tr);
// h (lane 0: the hsum8 of row `row`, token t) plus the row's min term; h itself without one.
kir::V add_min_term(kir::Builder& b, const MinTerm& mt, kir::V h, int row, int t);

// One tile function (gen_tile.h ABI; n = blocks of K). Activations: rows of block_q8_0
// (block_q8_1 for q4_1 / q5_1).
//   AVX-512 VNNI: Plain tiles of 2, 4, 6 or 8 rows (two rows per zmm), Gemv/Gemm tiles of 8.
//   AVX2: Plain tiles of 1..4 rows, Gemv/Gemm tiles of 4.
int build_q_tile_avx512(kir::Module& m, const std::string& name, QFormat f, QArith a, int rows,
                        int tokens);
int build_q_tile_avx2(kir::Module& m, const std::string& name, QFormat f, QArith a, int rows,
                      int tokens);

// The 16-row prefill kernel of linear.q4_0x8.ggml at AVX-512 VNNI (gen_linear_q_rows16.cpp):
// one int32 lane per row, activations packed once per group of 8 tokens into a frame
// buffer. Writes the entry's body into e (function 0 of m) and its tiles into m. K is at
// most 32 * kQ4_0Rows16MaxBlocks (the map's shape predicate; a larger K returns unwritten).
// The 8-row, 4-token prefill kernel of q8_0 / q5_0 (the offset tiles, exact products) with
// activations packed once per group of 4 tokens into a frame buffer
// (gen_linear_q_avx512.cpp). Writes the entry's body into e and its tiles into m. K is at
// most 32 * kOffsetPackedMaxBlocks (the map's shape predicate).
constexpr int kOffsetPackedMaxBlocks = 512;
// Their activation pack, per group of up to kOffGroup tokens and block (kOffPack bytes):
// token t's 32 quants at 32 t, its scale as f32 (exact) at kOffPackScale + 4 t, and at
// kOffPackCorr + 32 t its 8 int32 lanes -bias * (sum of each lane's 4 quants) (q8_0: bias
// 128, q5_0: 16), the correction of the biased-weight products (q4_1, q5_1, whose weights
// need none: the block's Q8_1 s as f32 there, in the first dword).
constexpr int kOffGroup = 4;
constexpr int kOffPackScale = 32 * kOffGroup;
constexpr int kOffPackCorr = kOffPackScale + 4 * kOffGroup;
constexpr int kOffPack = kOffPackCorr + 32 * kOffGroup;
// Packs `count` (1..kOffGroup) token rows of block_q8_0 (x, as bytes apart; nb blocks) into
// pk; amin (a 256-bit vector) keeps the bytewise minimum of their quants. vnni: the lane
// sums by vpdpbusd, else by vpmaddubsw + vpmaddwd (pair sums of at most 2 * 128 * 128: exact).
void emit_offset_pack(kir::Builder& e, QFormat f, kir::V x, kir::V as, kir::V nb, kir::V count,
                      kir::V pk, kir::V amin, bool vnni);
void build_q_offset_packed_avx512(kir::Builder& e, kir::Module& m, const std::string& name,
                                  QFormat f);

// Weights: the file's row-major blocks, or their load-time copy in layout q4_0_r16
// (kernels/formats/layouts.h).
constexpr int kQ4_0Rows16MaxBlocks = 512;
// Which tokens take the gemm's products: the contract's split (the first 4 floor(T / 4)),
// or none (every token as the gemv computes it alone: a batch of decode tokens,
// selection.decode_batch).
enum class Rows16Split : uint8_t { Contract, AllGemv };
// Which tiles run it: AVX-512 VNNI (one zmm lane per row, packs of 8 tokens, the file's
// blocks or the r16 copy), or AVX2 / AVX-VNNI (two ymm halves of 8 rows, packs of 4 tokens,
// the r16 copy only, the contract's split only).
enum class Rows16Isa : uint8_t { Avx512Vnni, Avx2, AvxVnni };
void build_q4_0x8_rows16(kir::Builder& e, kir::Module& m, const std::string& name,
                         Rows16Weights layout, Rows16Split split, Rows16Isa isa);
// The kernel's activation pack, per group of up to `group` tokens and block (block()
// bytes): token t's 32 quants at 32 t, its scale as f32 (exact) at scale() + 4 t and
// -8 * sum(a) (int32) at corr() + 4 t.
struct Q4_0Pack {
  int group;
  constexpr int scale() const { return 32 * group; }
  constexpr int corr() const { return scale() + 4 * group; }
  constexpr int block() const { return corr() + 4 * group; }
};
// Tile arithmetic: the gemm's exact products, or the gemv's vpsignb products.
enum class Q4_0Products : uint8_t { Exact, SignMove };
// The AVX2 / AVX-VNNI tile of that kernel (gen_linear_q4_0_r16_avx2.cpp): one 16-row group
// of the q4_0_r16 copy x `tokens` (1..4) tokens of a pack (gen_tile.h ABI, a = the pack).
int emit_q4_0_r16_gemm_tile_avx2(kir::Module& m, const std::string& name, int tokens,
                                 Q4_0Products products, bool vnni, const Q4_0Pack& pack);

// Generators (jit/generators.cpp table): impl.params rows, tokens.
bool build_linear_q8_0_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0x8_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// The same arithmetic on the q4_0_r16 copy of the weights (params rows 16, tokens 1 or 8).
bool build_linear_q4_0_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// At AVX2 and AVX-VNNI (gen_linear_q4_0_r16_avx2.cpp; params rows 16, tokens 1: the decode
// gemv, or 4: the prefill gemm).
bool build_linear_q4_0_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// q8_0 (linear.q8_0.ggml) on the q8_0_r16 copy of the weights (gen_linear_q8_0_r16.cpp;
// params rows 16, tokens 1..3; AVX2 / AVX-VNNI: 1..4).
bool build_linear_q8_0_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q8_0_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q8_0_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// q5_0 (linear.q5_0.ggml) on the q5_0_r16 copy: the same tiles, lane vectors made from the
// copy's nibbles and reordered high bits (gen_linear_q8_0_r16.cpp; params rows 16, tokens 1..3;
// AVX2 / AVX-VNNI: 1..4).
bool build_linear_q5_0_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_0_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_0_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// q4_1 / q5_1 (linear.q{4,5}_1.ggml) on their q4_1_r16 / q5_1_r16 copies: the same tiles,
// with unsigned weight integers and the min term (gen_linear_q8_0_r16.cpp; params rows 16,
// tokens 1..2).
bool build_linear_q4_1_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_1_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// At AVX2 / AVX-VNNI (gen_linear_q8_0_r16_avx2.cpp; params rows 16, tokens 1..4).
bool build_linear_q4_1_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_1_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_1_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_1_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
// The weight copy those tiles read. q8_0_r16: lane vector j is a plain load of u = q + 128.
// q5_0_r16 (Q5_0's contract is Q8_0's lanes with q = x - 16, x = nibble | high bit << 4):
// lane vector j is made in registers as u = x (0..31), and the pack's correction is
// -16 * sum(a) (emit_offset_pack of QFormat::Q5_0), so the exact sum is the same identity;
// the sign-move tiles take q = x - 16. x of vector j: the nibbles of qs dword j % 4 (low for
// j < 4, high for j >= 4), | bit 4 from the reordered qh dword (bit 8k + j = element 4j + k's
// high bit) shifted by 4 - j.
// q4_1_r16 / q5_1_r16: u = x (0..15 / 0..31) made the same way, and it is the weight integer
// itself: vpdpbusd(u, a) is the exact lane sum with no correction, so there are no sign-move
// tiles (ggml's mul_sum_us8_pairs_float has no wrap either); the pack holds each token's
// Q8_1 s in place of the corrections, for the min term summs = fma(m_w, s_a, summs).
struct Q8_0R16Form {
  QFormat f = QFormat::Q8_0;
  bool high_bit() const { return f == QFormat::Q5_0 || f == QFormat::Q5_1; }
  bool nibbles() const { return f != QFormat::Q8_0; }
  bool has_min() const { return f == QFormat::Q4_1 || f == QFormat::Q5_1; }
  int block() const {
    return f == QFormat::Q5_0   ? kQ5_0R16Block
           : f == QFormat::Q4_1 ? kQ4_1R16Block
           : f == QFormat::Q5_1 ? kQ5_1R16Block
                                : kQ8_0R16Block;
  }
  // The 16 fp16 d's, and (q4_1, q5_1) the 16 fp16 m's right after them.
  int scale() const { return f == QFormat::Q8_0 ? 512 : f == QFormat::Q4_1 ? 256 : 320; }
  int min() const { return scale() + 32; }
  int qh() const { return 256; }  // q5_0, q5_1: the reordered high-bit dwords
  QFormat pack() const { return f; }
};
// Their tile at AVX2 / AVX-VNNI (gen_linear_q8_0_r16_avx2.cpp): one 16-row group of the
// copy x `tokens` (1..4) tokens of an offset pack (gen_tile.h ABI, a = the pack), with the
// exact products (AVX-VNNI only) or ggml's sign-move ones.
enum class Q8_0Products : uint8_t { Exact, SignMove };
int emit_q8_0_r16_tile_avx2(kir::Module& m, const std::string& name, int tokens,
                            Q8_0Products products, bool vnni, Q8_0R16Form wf);
bool build_linear_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0x8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_1_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_0_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_1_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
// The AVX2 tiles with AVX-VNNI's vpdpbusd (ymm, VEX) in place of vpmaddubsw + vpmaddwd.
bool build_linear_q8_0_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_0x8_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q4_1_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_0_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_q5_1_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
