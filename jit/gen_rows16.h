// The entry side shared by the 16-row quantized linear kernels (gen_linear_q_rows16.cpp:
// q4_0 under linear.q4_0x8.ggml; gen_linear_q8_0_r16.cpp: q8_0 under linear.q8_0.ggml): the
// loop over 16-row tiles that runs every token group of a packed chunk on one tile before the
// next, so a tile's weights come from memory once per chunk, not once per group.
//
// A tile here has the gen_tile.h ABI with a = the group's pack (its stride is fixed by the
// kernel, `as` is passed 0) and n = blocks of K; w is row 0 of the row-major blocks
// (rb = row bytes) or the tile's group of a 16-row copy (rb = group bytes, unused by it).
// The K-quant copies (q2_K_r16 .. q6_K_r16) read their Q8_K activations unpacked through
// emit_r16_entry instead.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "jit/gen_tile.h"
#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

struct Grid;
struct LinearLayout;

constexpr int kRows16 = 16;

// Where the weights are: the file's row-major blocks, or a load-time copy in 16-row groups
// (layouts q4_0_r16, q8_0_r16: kernels/formats/layouts.h).
enum class Rows16Weights : uint8_t { RowMajor, R16 };

// Where the rows of a call live: row n at w + n * rb (RowMajor), or group g at w + g * gs
// (R16). tmp (R16 only): a 64-byte aligned frame buffer of 4 * 16 * (most tokens of a tile)
// bytes, for a range that starts inside a group.
struct Rows16Args {
  Rows16Weights layout;
  kir::V w, rb, gs, n0, n1, ys, nb, tmp;
};

// The token groups one pass over the rows serves: n_full groups of the full tile (pack g at
// pk + g * pk_step, outputs from y + g * y_step), then, if has_tail != 0 and tail_tile >= 0,
// one group of the tail tile after them.
struct Rows16Groups {
  int full_tile, tail_tile;  // function indices in the module; tail_tile -1: none
  int full_tokens, tail_tokens;
  kir::V pk, n_full, has_tail, pk_step, y_step;
};

// Every 16-row tile of [n0, n1) runs every group of `g` (outputs from y = row 0, token 0 of
// the first group). With R16 weights a first group that starts at n0 % 16 != 0 is computed
// whole into tmp (64 bytes a token) and its rows [n0, ...) copied out, so any split of N
// gives the same bits.
void emit_rows16(kir::Builder& e, const Rows16Args& r, const Rows16Groups& g, kir::V y);

// The linear entry (gen_tile.h's ABI) over a 16-row copy read by gen_tile.h tiles that take a
// group as their row tile and the activation rows as they are (no pack): the K-quant
// copies' kernels. `g`'s tiles get w = the group's first super-block, row_bytes = nb *
// l.w_block_bytes (a group is 16 such rows) and n = nb; any split [n0, n1) of N gives the
// same bits (a first group starting at n0 % 16 != 0 is computed whole into a frame buffer,
// 8 tokens at a time, and its rows from n0 kept).
void emit_r16_entry(kir::Builder& e, const Grid& g, const LinearLayout& l);

// vpshufb control of 8 * `blocks` dwords (`blocks` 128-bit blocks): each dword's bytes i = 0..3
// take byte bytes[i] of the same dword (-1: zero).
std::vector<uint32_t> dword_shuffle(std::initializer_list<int> bytes, int blocks);

// A linear over a 16-row copy at AVX2 (vnni: with AVX-VNNI) whose tiles take the activation
// rows as they are: generator `gen` checks its params (rows 16; tokens 1, the decode gemv,
// or max_tokens), sets the module's ISA and comment (`what`), and writes the r16 entry
// (emit_r16_entry, layout l) over the tiles `emit_tile(m, name, vnni, k)` for k tokens
// (gen_tile.h ABI): k = tokens for the full groups, 1 .. tokens - 1 for the rest.
bool build_r16_avx2(
    const char* gen, bool vnni, const std::string& what, const LinearLayout& l, int max_tokens,
    const std::function<int(kir::Module&, const std::string&, bool, int)>& emit_tile,
    const GeneratorParams& p, kir::Module* m, std::string* err);

// A linear over a 16-row copy at AVX-512 VNNI whose tiles keep ggml's 8 lanes of each row
// as 8 vectors of 16 rows (q3_K_r16, q5_K_r16, q6_K_r16): generator `gen` checks its params
// (rows 16; tokens 1..max_tokens; decode_group 1..max_tokens, with tokens 1 only), sets the
// module's ISA and comment (`what`), and writes the r16 entry (layout l) over the tiles
// `emit_tile(m, name, k, decode)` for k tokens: a prefill tile's token groups, or for tokens 1
// (decode: decode true) groups of up to decode_group (8; 1 where the plan never batches:
// generators.h plan_params), each token's bits as alone, the weights read once a group.
bool build_r16_lanes(
    const char* gen, const std::string& what, const LinearLayout& l, int max_tokens,
    const std::function<int(kir::Module&, const std::string&, int, bool)>& emit_tile,
    const GeneratorParams& p, kir::Module* m, std::string* err);

// The float side of those tiles: per token its 8 lane accumulators (ggml's lane j of 16 rows
// in vector j; in registers for a one-token tile, else in 64-byte frame slots) and its
// fl(d_a * d_w) of the super-block (in registers for up to 4 tokens, else in slots).
class LaneAccs {
 public:
  // The frame slots it needs for `tokens` tokens; it uses slots first .. first + slots - 1 of
  // `frame` (64-byte aligned).
  static int slots(int tokens);
  LaneAccs(kir::Builder& b, int tokens, kir::V frame, int first);
  void zero();                  // before the loop over super-blocks
  void set_d(int t, kir::V d);  // token t's fl(d_a * d_w) of this super-block
  // acc[t][l] = fma(fl(d_a * d_w), float(isum), acc[t][l]): the contract's one FMA per lane and
  // super-block (isum: the lane's exact int32 sum).
  void fma(int t, int l, kir::V isum);
  // Token t's hsum8 (ggml's order) into a new vector, after the loop.
  kir::V hsum8(int t);
  // After the loop: each token's hsum8, through finish(t, v) (e.g. + a min term) when given,
  // stored to rows 0 .. a.nrows - 1 of its output (gen_tile.h's tile ABI).
  void store(const TileArgs& a, const std::function<void(int, kir::V)>& finish = {});

 private:
  kir::Mem slot(int i) const;
  kir::Builder& b_;
  int tokens_, first_;
  bool acc_regs_, d_regs_;
  kir::V frame_, acc_[8], d_[8];
};

// One product of those tiles' integer lane sums: isum += S * dot by vpdpwssd (dot the exact
// int32 dot of a lane's quants, within int16; S the rows' scale in the low word, 0 in the
// high one), the first of a chain (first) by vpmaddwd into a new isum.
void add_scaled_dot(kir::Builder& b, kir::V& isum, bool first, kir::V dot, kir::V S);

// An AVX2 tile's frame buffer: `slots` aligned slots of 32 bytes, slot(s, disp) their memory,
// keep(s, lanes) a vpshufb / vpermd table stored in one and table(s) it read back (the 16 ymm
// registers hold a tile's sums and accumulators, so its tables wait in the frame).
class YmmSlots {
 public:
  YmmSlots(kir::Builder& b, int slots);
  kir::Mem operator()(int s, int disp = 0) const { return kir::Mem{base_, {}, 1, 32 * s + disp}; }
  void keep(int s, const std::vector<uint32_t>& lanes) const;
  kir::V table(int s) const;

 private:
  kir::Builder& b_;
  kir::V base_;
};

// Their AVX2 form: isum += S * dot with dot the int16 pair sums (vpmaddwd into dot, then
// vpaddd) or, with AVX-VNNI (vnni), an int32 dot within int16 (vpdpwssd); the first of a
// chain (first) by vpmaddwd into isum. S: the rows' scale in both words (AVX2) or the low one.
void add_scaled_dot_avx2(kir::Builder& b, kir::V isum, bool first, kir::V dot, kir::V S, bool vnni);

// acc = fma(d, float(isum), acc), acc and d in the frame: the contract's one FMA per lane and
// super-block in the AVX2 lane tiles.
void fma_lane_acc_avx2(kir::Builder& b, kir::V isum, kir::Mem acc, kir::Mem d);

// The epilogue of the AVX2 lane tiles (lane l of 8 rows per ymm): per token t, each half h's
// 8 lane accumulators acc(h, l, t) summed in ggml's hsum8 order, through finish(h, t, v) when
// given (e.g. + a min term), stored to rows 0 .. a.nrows - 1 of its output.
void store_lane_accs_avx2(kir::Builder& b, const TileArgs& a, int tokens,
                          const std::function<kir::Mem(int, int, int)>& acc, kir::Mem scratch,
                          const std::function<void(int, int, kir::V)>& finish = {});

// Stores the 16 rows of an AVX2 tile (lo: rows 0-7, hi: 8-15) at y: both vectors when nrows
// is 16, else rows 0 .. nrows - 1 one by one through `scratch` (32 bytes, 32-aligned).
void store_rows16_avx2(kir::Builder& b, kir::V y, kir::V nrows, kir::V lo, kir::V hi,
                       kir::Mem scratch);
// Stores rows 0 .. min(count, 8) - 1 of an 8-row vector v at y (count <= 0: none), the
// vector itself when count >= 8, else row by row through `scratch` (32 bytes, 32-aligned).
void store_rows8_avx2(kir::Builder& b, kir::V y, kir::V count, kir::V v, kir::Mem scratch);

// bits != 0 iff a byte of `amin` (a 256-bit bytewise minimum of activation quants) is -128:
// the activation a NaN or inf makes, where ggml's vpsignb products wrap. emit_has_min8 uses
// AVX-512BW masks, emit_has_min8_avx2 a vpmovmskps of each dword's ored sign bits.
void emit_has_min8(kir::Builder& e, kir::V amin, kir::V bits);
void emit_has_min8_avx2(kir::Builder& e, kir::V amin, kir::V bits);

}  // namespace cke::jit::gen
