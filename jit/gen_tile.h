// The skeleton every linear generator shares, written in KIR: ISA levels, the tile
// function's frame and arguments, the tile's row pointers, token rows, and the grid of
// (row tile x token group) calls the entry makes.
//
// A tile function computes `rows` (a generator parameter) consecutive output rows for a
// group of `tokens` tokens:
//   void tile(const uint8_t* w, int64 row_bytes, int64 nrows, const uint8_t* a,
//             int64 a_stride, float* y, int64 y_stride, int64 n)
// w: first weight row; nrows (1..rows) rows are valid and stored, tile rows past nrows-1
// read row nrows-1 again (never past the buffer); a: the group's first activation row,
// a_stride bytes apart; y: (row 0, token 0), y_stride bytes between tokens; n: the
// generator's extent (blocks of K, or K).
#pragma once

#include <string>
#include <vector>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// ISA levels a generator is written for. The level decides the vector width and which
// instructions exist; the features it needs are isa_features(level).
enum class Isa : uint8_t { Avx2, Avx512, Avx512Vnni, Avx512Bf16 };

// requires.isa names of a level. AVX-512 levels also name the AVX2-era features: asmjit
// (and the C compiler) encode 128/256-bit ops on registers 0-15 with VEX when they can.
std::vector<std::string> isa_features(Isa isa);
const char* isa_suffix(Isa isa);  // "avx2", "avx512", "avx512vnni", "avx512bf16"

// Fresh vectors of one width for a tile's body: integer, float, and an integer splat of a
// dword.
struct VecOf {
  kir::Builder& b;
  int bits;
  kir::V i(const char* n) const { return b.vec(bits, kir::Cls::I, n); }
  kir::V f(const char* n) const { return b.vec(bits, kir::Cls::F, n); }
  kir::V splat(const char* n, uint32_t v) const {
    kir::V x = i(n);
    b.vsplat32(x, v);
    return x;
  }
};

struct TileArgs {
  kir::V w, rb, nrows, a, as, y, ys, n;
};
// A new tile function `name` in m (the ABI above); begin_tile names its arguments.
kir::Builder open_tile(kir::Module& m, const std::string& name);
// A new function `name` in m with the linear entry's ABI, every linear map's call_abi:
//   void linear(const void* x, const void* w, float* y, int64 K, int64 N, int64 T,
//               int64 begin, int64 end)
kir::Builder open_linear_entry(kir::Module& m, const std::string& name);
TileArgs begin_tile(kir::Builder& b);

// hsum8 of an 8-lane (256-bit) float accumulator into lane 0 of the result, in ggml's
// order: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
kir::V hsum8(kir::Builder& b, kir::V acc);
// The same order lane by lane over 8 vectors (acc[j] lane r = ggml lane j of row r: the
// 16-row copies' kernels), into a new vector.
kir::V hsum8_rows(kir::Builder& b, const kir::V acc[8]);

// A guard of an entry: `if (a c x) return;` (a call outside the contract writes nothing).
void ret_if(kir::Builder& b, kir::V a, kir::Cmp c, kir::V x);
void ret_if(kir::Builder& b, kir::V a, kir::Cmp c, int64_t x);

// The attentions' causal window: first = the first cache cell a token at position p sees,
// max(0, p - window + 1) when window > 0, else 0 (f: scratch).
void window_first(kir::Builder& b, kir::V first, kir::V p, kir::V window, kir::V f);

// r[i] = w + min(i, nrows - 1) * row_bytes.
std::vector<kir::V> tile_rows(kir::Builder& b, const TileArgs& t, int rows);
// x[k] = a + k * a_stride, the group's `tokens` activation rows (k = 0 is t.a itself).
std::vector<kir::V> tile_tokens(kir::Builder& b, const TileArgs& t, int tokens);

// Software prefetch for weight rows streamed from memory. A tile of R row-major rows reads R
// streams side by side, and what it reads next lies R * row_bytes further: the same offset in
// the next tile's rows. So the prefetch distance is a power-of-two number of tiles, the first
// at least kPrefetchMin bytes (a prefetch past a buffer's end never faults).
// Measured (Q8_0 decode, 4-row tiles): a fixed 2 KiB within the row lands in the tile's own
// next row, already streamed, and decodes at the speed of no prefetch at all; a tile ahead
// (8-9 KiB) is 1.5x faster, and F16/BF16 decode, which had no prefetch, 1.15x.
// The prefetch fills L2 (prefetcht1), not L1: on an AMD EPYC (Zen 4), 2 threads, F16 decode
// 13.2-13.5 tok/s against 10.8 with prefetcht0, Q6_K 30-33 against 26-28 (the L2 stream
// prefetcher follows 4 interleaved rows poorly there; L1 fills competed with the loads).
constexpr int kPrefetchMin = 8192;
struct RowPrefetch {
  kir::V dist;  // bytes between a prefetched line and the line read now
};
// Before the loop: the distance for a tile of `rows` rows of t.rb bytes.
RowPrefetch row_prefetch(kir::Builder& b, const TileArgs& t, int rows);
// In a loop that consumes `bytes` of each row per iteration at row + off.
void prefetch_rows(kir::Builder& b, const std::vector<kir::V>& rows, kir::V off, int bytes,
                   const RowPrefetch& pf);
// Layouts that are one stream (rows interleaved into 16-row groups: q4_0_r16, q4_K_r16,
// q8_0_r16, q2_K_r16, q3_K_r16, q5_K_r16) prefetch each line kStreamPrefetchAhead on, into L2
// (q6_K_r16 two super-blocks on: gen_linear_q6_K_r16.cpp). Measured, decode tg32, 2 threads:
//  - Intel Xeon (AVX512-FP16, AVX-VNNI; 2026-12-02): no prefetch 21.6-24.0 tok/s Q4_0 and
//    26.0-28.6 Q4_K_M; prefetcht1 8 KiB on 26.9-33.6 and 31.3-33.9; 2 KiB 25-31 (t1) and
//    27.5-31.9 (t0), 4 KiB 28-33; prefill alike or faster (Q4_0 pp128 163-166 vs 152-159).
//  - AMD EPYC Zen 4 (2026-12-01): prefetcht0 2 KiB on made Q4_K_M decode 1.6x slower than
//    none (26 vs 42 tok/s), Q4_0 1.15x; prefetcht1 8 KiB on made q8_0_r16 faster (one core
//    13-15 -> 18-20 GB/s). prefetcht1 8 KiB for q4_0_r16 / q4_K_r16 is not yet measured there.
//  - AMD EPYC Zen 4 (2026-12-06), the engine's copies now in 2 MiB pages (the Intel and
//    12-01 numbers were 4 KiB pages), cke-bench tg32, distance 8 KiB vs prefetches aimed at
//    the line being loaded (no lead), alternated: decode faster WITHOUT the lead: Q4_0 1
//    thread 29-32 -> 35-39 tok/s, 2 threads 57-60 -> 67-69; Q4_K_M 32 -> 41-42, 43-46 ->
//    47-48; Q8_0 1 thread 15-16 -> 18-19 (the file's row-major q8_0 4x1 tile, --no-repack:
//    18-22), 2 threads alike. Prefill is better with the lead (Q8_0 pp128 186-196 vs
//    173-178). The F16 / BF16 / F32 one-row decode tiles (a tile ahead, row_prefetch) alike:
//    BF16 tg32 1 thread 9.3-10.2 -> 10.5-12.4, 2 threads 12.5-13.6 -> 17.7-21.2; F16 2
//    threads 13.6-17.4 -> 17.1-20.6 (1 thread alike); q6_K_r16's own lead (two super-blocks)
//    is faster WITH it (Q6_K 1 thread 23.5 vs 17.0) and stays.
//    So the decode tiles (one token) ask decode_stream_prefetch(): the host's
//    choice (HostCaps::decode_stream_prefetch, off on Zen 4), passed by plan_params as the
//    kernel's "decode_prefetch" parameter; generation itself never looks at the machine.
//    Prefill tiles keep the lead everywhere. The Intel host is to be measured again in
//    2 MiB pages (`cke-bench -p 0 -n 32 -t 1,2 --decode-prefetch on,off,on,off`).
//  - AMD EPYC Zen 5 (family 1Ah, 2026-12-06 evening), that command, tok/s on / off (two
//    rounds): Q4_K_M 1 thread 47-50 / 36-42, 2 threads 79-83 / 55-69; Q4_0, Q8_0, Q6_K,
//    F16, BF16 within the minute's noise of each other (e.g. Q8_0 22.7-25.3 / 22.6-26.1).
//    So Zen 5 keeps the lead (HostCaps::probe turns it off on family 19h only).
constexpr int kStreamPrefetchAhead = 8192;
// Whether the kernel being generated prefetches its weight stream in its one-token (decode)
// tiles: true unless build_kernel was given "decode_prefetch": "0" (DecodePrefetchScope,
// set on the generating thread for one build).
bool decode_stream_prefetch();
// Whether a tile of `tokens` tokens prefetches its weight stream: tiles of several tokens
// always, one-token tiles as decode_stream_prefetch() says.
inline bool stream_prefetch(int tokens) {
  return tokens > 1 || decode_stream_prefetch();
}
class DecodePrefetchScope {
 public:
  explicit DecodePrefetchScope(bool on);
  ~DecodePrefetchScope();
  DecodePrefetchScope(const DecodePrefetchScope&) = delete;
  DecodePrefetchScope& operator=(const DecodePrefetchScope&) = delete;

 private:
  bool saved_;
};

// Token t of a group at base + t * stride: addressed as [base + stride * s] for t = 1, 2
// and through a precomputed 3 * stride for t = 3, so the loop advances one pointer.
struct TokenRows {
  kir::V base, stride, stride3;
  kir::Mem at(int t, int32_t disp) const;
};
TokenRows token_rows(kir::Builder& b, kir::V base, kir::V stride, int tokens);
// The tokens of a tile of up to 8: tokens 0-3 and 4-7 from one moving pointer each.
struct TokenRows8 {
  TokenRows tr[2];
  int tokens = 0;
  kir::Mem at(int t, int32_t disp) const { return tr[t / 4].at(t % 4, disp); }
  // Every token's row `bytes` on (the next block of each).
  void advance(kir::Builder& b, int bytes) const;
};
TokenRows8 token_rows8(kir::Builder& b, kir::V base, kir::V stride, int tokens);

// The entry's grid: for each row tile n in [n0, n1) step R, tokens [0, full) in groups of
// G through `full_fn`, then the rest (rem < G tokens) through rem_fn[rem].
// With head_fn: a rest of rem >= head tokens goes to head_fn (its first `head` tokens) and
// then rem_fn[rem - head] (if rem > head), so that tiles of `head` + k tokens need not each be
// a function of their own (their code and its JIT time grow with the tokens).
struct Grid {
  int R = 0, G = 0;
  int full_fn = -1;
  int rem_fn[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  int head = 0, head_fn = -1;
};
// The grid of a generator whose tiles take `tokens` tokens: emit(name_t<k>, k) writes the
// tile for k tokens; the full groups use k = tokens, the rest k = 1 .. tokens - 1.
template <class Emit>
Grid token_grid(const std::string& name, int rows, int tokens, Emit emit) {
  Grid g;
  g.R = rows;
  g.G = tokens;
  g.full_fn = emit(name + "_t" + std::to_string(tokens), tokens);
  for (int r = 1; r < tokens; ++r) g.rem_fn[r] = emit(name + "_t" + std::to_string(r), r);
  return g;
}

// w_n0 = weight row n0, y_n0 = output (row n0, token 0); act rows `as` bytes apart;
// `extent` is passed to the tiles as their n.
void emit_grid(kir::Builder& e, const Grid& g, kir::V w_n0, kir::V rb, kir::V n0, kir::V n1,
               kir::V act, kir::V as, kir::V ntok, kir::V y_n0, kir::V ys, kir::V extent);

// The linear entry (kernels/ref/linear.h ABI, function 0 of the module): a call outside the
// contract returns (T <= 0, K <= 0 or not whole blocks, rows outside [0, N)), then the grid
// over whole blocks of K: weight rows of nb * w_block_bytes, activation rows of
// nb * a_block_bytes, tiles get n = nb.
struct LinearLayout {
  int block_elems;    // K elements per block (1 for float weights)
  int w_block_bytes;  // bytes of a weight block
  int a_block_bytes;  // bytes of an activation block (the contract's converted type)
};
void emit_linear_entry(kir::Builder& e, const Grid& g, const LinearLayout& l);

// The linear ABI's arguments, after the entry's guards: a call outside the contract returns
// (T <= 0, K <= 0 or not whole blocks, rows outside [0, N), and more than max_blocks blocks
// when max_blocks > 0: a kernel's frame-buffer limit, which its map's shape predicate
// states). nb = K / block_elems (K itself for float weights).
struct LinearEntry {
  kir::V x, w, y, K, N, T, n0, n1, nb;
};
LinearEntry linear_entry_prologue(kir::Builder& e, int block_elems, int max_blocks = 0);

// Parses integer impl.params; every key must be in `allowed`. Missing keys keep *out.
bool int_params(const GeneratorParams& p, std::string_view generator,
                std::initializer_list<std::pair<const char*, int*>> allowed, std::string* err);

}  // namespace cke::jit::gen
