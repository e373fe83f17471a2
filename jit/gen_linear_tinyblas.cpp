// tinyBLAS linear generators (gen_linear_tinyblas.h): one tile body for both ISA levels,
// on 16-lane vectors (gen_lanes16.h).
#include "jit/gen_linear_tinyblas.h"

#include <fmt/format.h>

#include <vector>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Kind;
using kir::Mem;
using kir::V;

enum class Elem : uint8_t { F32, F16 };

constexpr int kMaxTile = 8;

// Registers a tile needs: accumulators, one activation vector per token, one weight vector.
int vector_registers(Isa isa, int R, int TT) {
  return (isa == Isa::Avx2 ? 2 : 1) * R * TT + TT + 1;
}

int emit_tile(kir::Module& m, const std::string& name, Isa isa, Elem el, int R, int TT) {
  Builder b = open_tile(m, name);
  Lanes16 ft(b, isa);
  const int esz = el == Elem::F32 ? 4 : 2;
  // 8 or 16 elements at `mem` as f32 (f16 widened exactly).
  const auto load = [&](V d, Mem mem) {
    if (el == Elem::F32) {
      b.vload(d, mem);
      return;
    }
    V h = b.vec(ft.width() / 2, Cls::I, "h16");
    b.vload(h, mem);
    b.vcvt_f16_f32(d, h);
  };
  const TileArgs a = begin_tile(b);
  const std::vector<V> r = tile_rows(b, a, R);
  std::vector<V> xt = tile_tokens(b, a, TT);
  V16 acc[kMaxTile][kMaxTile];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < TT; ++t) acc[i][t] = ft.zero("acc");

  // Over the 16-element steps of K (a.n of them): byte offsets [0, 16 * esz * n).
  V off = b.i64("off"), end = b.i64("end");
  b.muli(end, a.n, 16 * esz);
  b.for_(off, b.imm(0, "zero"), end, b.imm(16 * esz, "step_bytes"));
  for (int h = 0; h < ft.parts; ++h) {
    const int32_t disp = 8 * h * esz;
    V xv[kMaxTile];
    for (int t = 0; t < TT; ++t) {
      xv[t] = b.vec(ft.width(), Cls::F, "xv");
      load(xv[t], Mem{xt[t], off, 1, disp});
    }
    for (int i = 0; i < R; ++i) {
      V wv = b.vec(ft.width(), Cls::F, "wv");
      load(wv, Mem{r[i], off, 1, disp});
      for (int t = 0; t < TT; ++t) b.vfma(acc[i][t].part[h], wv, xv[t]);  // w * x + acc
    }
  }
  b.end_for();

  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < TT; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < R; ++i) {
      V s = ft.reduce_add(acc[i][t]);
      if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, s);
      if (i > 0) b.end_if();
    }
  }
  return b.index();
}

bool build(const char* generator, Isa isa, Elem el, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  int rows = isa == Isa::Avx2 ? 3 : 4, tokens = isa == Isa::Avx2 ? 2 : 6;
  if (!int_params(params, generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  const int budget = isa == Isa::Avx2 ? 16 : 32;
  if (rows < 1 || rows > kMaxTile || tokens < 1 || tokens > kMaxTile ||
      vector_registers(isa, rows, tokens) > budget) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows, tokens in 1..{}; {} "
        "accumulators + tokens + 1 <= {} vector registers)",
        generator, rows, tokens, kMaxTile, isa == Isa::Avx2 ? "2 * rows * tokens" : "rows * tokens",
        budget);
    return false;
  }
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}: contract linear.{}_tinyblas.ggml (llamafile's "
      "tinyBLAS<16, __m512>:\none 16-lane FMA accumulator per output{}, _mm512_reduce_add_ps "
      "tree, K % 16 == 0)",
      generator, rows, tokens, el == Elem::F32 ? "f32" : "f16",
      el == Elem::F16 ? " over vcvtph2ps-widened f16" : "");
  Builder e = open_linear_entry(*m, m->name);
  const Grid g = token_grid(m->name, rows, tokens, [&](const std::string& fn, int t) {
    return emit_tile(*m, fn, isa, el, rows, t);
  });
  const int esz = el == Elem::F32 ? 4 : 2;
  // Blocks of 16 elements: the entry rejects K % 16 != 0 and hands the tiles K / 16.
  emit_linear_entry(e, g, {16, 16 * esz, 16 * esz});
  return true;
}

}  // namespace

bool build_linear_f32_tinyblas_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_f32_tinyblas__avx512", Isa::Avx512, Elem::F32, p, m, err);
}
bool build_linear_f32_tinyblas_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_f32_tinyblas__avx2", Isa::Avx2, Elem::F32, p, m, err);
}
bool build_linear_f16_tinyblas_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_f16_tinyblas__avx512", Isa::Avx512, Elem::F16, p, m, err);
}
bool build_linear_f16_tinyblas_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_f16_tinyblas__avx2", Isa::Avx2, Elem::F16, p, m, err);
}

}  // namespace cke::jit::gen
