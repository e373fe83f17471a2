// tinyBLAS on f32 copies (gen_linear_tinyblas_wide.h).
#include "jit/gen_linear_tinyblas_wide.h"

#include <fmt/format.h>

#include "jit/gen_linear_tinyblas.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Mem;
using kir::V;

enum class Src : uint8_t { F16, BF16 };

// The loop order, per call on rows [n0, n1):
//   for each panel of P rows (at most kPanelBytes of f32): widen it
//     for each chunk of C tokens (at most kChunkBytes of f32): widen it, then every row tile
//       of the panel runs every token group of the chunk.
// Both copies stay in L2 (512 KiB a core on Zen 1). Measured there (T = 32, one core, best of
// 5, GMAC/s): chunk/panel KiB 128/384 11.2, 64/448 11.2, 64/256 11.0, 256/256 9.9, 128/768 8.4.
constexpr int kChunkBytes = 128 * 1024;
constexpr int kPanelBytes = 384 * 1024;

struct SrcLayout {
  int block_elems;  // K elements a block (the contract's step)
  int block_bytes;  // bytes of a source block; its f32 copy is twice that
};
SrcLayout layout(Src s) {
  return s == Src::F16 ? SrcLayout{16, 32} : SrcLayout{32, 64};
}

// The f32 copy of `bytes` bytes of rows at src (whole blocks) at dst.
void widen(Builder& e, Src s, V src, V dst, V bytes) {
  const SrcLayout l = layout(s);
  V off = e.i64("off");
  V hi;
  if (s == Src::BF16) hi = VecOf{e, 256}.splat("bf_hi", 0xffff0000u);
  e.for_(off, e.imm(0, "zero"), bytes, e.imm(l.block_bytes, "block_bytes"));
  for (int h = 0; h < 2; ++h) {
    if (s == Src::F16) {  // 8 f16 -> 8 f32, in order
      V x16 = e.vec(128, Cls::I, "h16"), x32 = e.vec(256, Cls::F, "x32");
      e.vload(x16, Mem{src, off, 1, 16 * h});
      e.vcvt_f16_f32(x32, x16);
      e.vstore(Mem{dst, off, 2, 32 * h}, x32);
    } else {  // lanes 8h..8h+7 of the block: odd elements to [32h, +32), even to [64 + 32h, +32)
      V d = e.vec(256, Cls::I, "pairs"), odd = e.vec(256, Cls::I, "odd");
      e.vload(d, Mem{src, off, 1, 32 * h});
      e.vand(odd, d, hi);
      e.vsll_i32(d, d, 16);
      e.vstore(Mem{dst, off, 2, 32 * h}, odd);
      e.vstore(Mem{dst, off, 2, 64 + 32 * h}, d);
    }
  }
  e.end_for();
}

void emit_entry(Builder& e, Src s, const Grid& g) {
  const SrcLayout l = layout(s);
  const int max_blocks = kPanelBytes / (2 * l.block_bytes * g.R);
  const auto [x, w, y, K, N, T, n0, n1, nb] = linear_entry_prologue(e, l.block_elems, max_blocks);
  V rb = e.i64("row_bytes"), rb32 = e.i64("row_bytes_f32"), ys = e.i64("y_stride");
  V steps = e.i64("steps");
  e.muli(rb, nb, l.block_bytes);  // weights and activations alike
  e.muli(rb32, nb, 2 * l.block_bytes);
  e.muli(ys, N, 4);
  e.muli(steps, nb, l.block_elems / 16);  // the tile's 16-lane steps
  V xb = e.ptr("x_f32"), wb = e.ptr("w_f32");
  e.ptr_align(xb, e.stack(kChunkBytes + 64, "x_raw"), 64);
  e.ptr_align(wb, e.stack(kPanelBytes + 64, "w_raw"), 64);
  // d = as many f32 rows as `budget` holds, in whole multiples of `unit` if one fits, >= 1.
  const auto fit = [&](V d, int budget, int unit, const char* name) {
    V q = e.i64(name);
    e.movi(d, budget);
    e.div(d, d, rb32);
    e.div(q, d, e.imm(unit, "unit"));
    e.if_(q, kir::Cmp::GT, 0);
    e.muli(d, q, unit);
    e.end_if();
    e.if_(d, kir::Cmp::LT, 1);
    e.movi(d, 1);
    e.end_if();
  };
  V C = e.i64("chunk"), P = e.i64("panel");
  fit(C, kChunkBytes, g.G, "groups");
  fit(P, kPanelBytes, g.R, "tiles");  // >= R: max_blocks

  V p0 = e.i64("p0"), p1 = e.i64("p1"), t0 = e.i64("t0"), cnt = e.i64("cnt"), tmp = e.i64("tmp");
  V bytes = e.i64("bytes"), src = e.ptr("src"), yc = e.ptr("y_chunk");
  e.for_(p0, n0, n1, P);
  {
    e.add(p1, p0, P);
    e.min(p1, p1, n1);
    e.mul(tmp, p0, rb);  // rows [p0, p1) are contiguous
    e.ptr_add(src, w, tmp, 1);
    e.sub(bytes, p1, p0);
    e.mul(bytes, bytes, rb);
    widen(e, s, src, wb, bytes);
    e.for_(t0, e.imm(0, "zero"), T, C);
    {
      e.sub(cnt, T, t0);
      e.min(cnt, cnt, C);
      e.mul(tmp, t0, rb);
      e.ptr_add(src, x, tmp, 1);
      e.mul(bytes, cnt, rb);
      widen(e, s, src, xb, bytes);
      e.mul(tmp, t0, ys);
      e.ptr_add(yc, y, tmp, 1);
      e.ptr_add(yc, yc, p0, 4);
      emit_grid(e, g, wb, rb32, p0, p1, xb, rb32, cnt, yc, ys, steps);
    }
    e.end_for();
  }
  e.end_for();
}

bool build(const char* generator, Src s, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  int rows = 3, tokens = 2;
  if (!int_params(params, generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows < 1 || rows > 8 || tokens < 1 || tokens > 8 ||
      tinyblas_vector_registers(Isa::Avx2, rows, tokens) > 16) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows, tokens in 1..8; 2 * rows * "
        "tokens accumulators + tokens + 1 <= 16 vector registers)",
        generator, rows, tokens);
    return false;
  }
  m->isa = isa_features(Isa::Avx2);
  m->comment =
      s == Src::F16
          ? fmt::format(
                "generator {}, rows {}, tokens {}: contract linear.f16_tinyblas.ggml (tinyBLAS<16, "
                "__m512>:\none 16-lane FMA accumulator per output, _mm512_reduce_add_ps tree), "
                "the F32 tile on\nf32 copies of a panel of rows and a chunk of tokens",
                generator, rows, tokens)
          : fmt::format(
                "generator {}, rows {}, tokens {}: contract linear.bf16_tinyblas.ggml "
                "(tinyBLAS<32, __m512bh>:\nvdpbf16ps emulated: FMAs under MXCSR DAZ|FTZ, odd "
                "pair then even), the F32 tile on f32\ncopies ([16 odd | 16 even] a block) of a "
                "panel of rows and a chunk of tokens",
                generator, rows, tokens);
  Builder e = open_linear_entry(*m, m->name);
  const Grid g = token_grid(m->name, rows, tokens, [&](const std::string& fn, int t) {
    return emit_tinyblas_f32_tile(*m, fn, Isa::Avx2, rows, t, s == Src::BF16);
  });
  emit_entry(e, s, g);
  return true;
}

}  // namespace

bool build_linear_f16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                         std::string* err) {
  return build("linear_f16_tinyblas_wide__avx2", Src::F16, p, m, err);
}
bool build_linear_bf16_tinyblas_wide_avx2(const GeneratorParams& p, kir::Module* m,
                                          std::string* err) {
  return build("linear_bf16_tinyblas_wide__avx2", Src::BF16, p, m, err);
}

}  // namespace cke::jit::gen
