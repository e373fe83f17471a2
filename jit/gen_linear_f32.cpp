// linear_f32 generators (gen_linear_f32.h): one tile body for both ISA levels, on 16-lane
// vectors (gen_lanes16.h).
#include "jit/gen_linear_f32.h"

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

// Element type of weights and activations: f32, or f16 widened exactly by vcvtph2ps.
enum class Elem : uint8_t { F32, F16 };

int emit_tile(kir::Module& m, const std::string& name, Isa isa, Elem el, int R, int TT) {
  Builder b = open_tile(m, name);
  Lanes16 ft(b, isa);
  const int parts = ft.parts;
  const int esz = el == Elem::F32 ? 4 : 2;
  // 8 or 16 lanes of elements at `mem` as f32.
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
  const V K = a.n;
  const std::vector<V> r = tile_rows(b, a, R);
  std::vector<V> xt = tile_tokens(b, a, TT);
  V16 acc[4][3][4];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < TT; ++t)
      for (int j = 0; j < 4; ++j) acc[i][t][j] = ft.zero("acc");

  // Main loop over the 64-element chunks: byte offsets [0, esz * (K & ~63)).
  V off = b.i64("off"), end = b.i64("end");
  b.andi(end, K, ~int64_t(63));
  b.muli(end, end, esz);
  // Decode streams the weights once: prefetched a tile ahead where the host wants it
  // (decode_stream_prefetch, gen_tile.h). Prefill tiles reread them from cache, once per
  // token group.
  const bool prefetch = TT == 1 && decode_stream_prefetch();
  RowPrefetch pf;
  if (prefetch) pf = row_prefetch(b, a, R);
  b.for_(off, b.imm(0, "zero"), end, b.imm(64 * esz, "chunk_bytes"));
  if (prefetch) prefetch_rows(b, r, off, 64 * esz, pf);
  for (int j = 0; j < 4; ++j)
    for (int h = 0; h < parts; ++h) {
      const int32_t disp = (16 * j + 8 * h) * esz;
      V xv[3];
      for (int t = 0; t < TT; ++t) {
        xv[t] = b.vec(ft.width(), Cls::F, "xv");
        load(xv[t], Mem{xt[t], off, 1, disp});
      }
      for (int i = 0; i < R; ++i) {
        if (TT == 1 && el == Elem::F32) {
          b.vfma_m(acc[i][0][j].part[h], xv[0], Mem{r[i], off, 1, disp});  // x * w + acc
          continue;
        }
        V wv = b.vec(ft.width(), Cls::F, "wv");
        load(wv, Mem{r[i], off, 1, disp});
        for (int t = 0; t < TT; ++t) b.vfma(acc[i][t][j].part[h], wv, xv[t]);
      }
    }
  b.end_for();

  // Per output: reduce, the K % 64 tail, store.
  V np = b.i64("np"), mul_end = b.i64("mul_end"), idx = b.i64("idx"), one = b.imm(1, "one");
  b.andi(np, K, ~int64_t(63));
  if (el == Elem::F32)
    b.andi(mul_end, K, ~int64_t(7));  // np + ((K - np) & ~7), as np is a multiple of 8
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < TT; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    for (int i = 0; i < R; ++i) {
      V s = ft.fold4_reduce_add(acc[i][t]);
      V p = b.vec(128, Cls::F, "p"), xs = b.vec(128, Cls::F, "xs");
      if (el == Elem::F16) {  // ggml_float sumf: the f32 sum widened, tail products in double
        V sd = b.vec(128, Cls::F, "sd"), pd = b.vec(128, Cls::F, "pd");
        V hw = b.vec(128, Cls::I, "hw"), hx = b.vec(128, Cls::I, "hx");
        b.vcvt_ss_sd(sd, s);
        b.for_(idx, np, K, one);
        b.vzero(hw);
        b.vzero(hx);
        b.vinsert_u16(hw, hw, Mem{r[i], idx, 2, 0}, 0);
        b.vinsert_u16(hx, hx, Mem{xt[t], idx, 2, 0}, 0);
        b.vcvt_f16_f32(p, hw);
        b.vcvt_f16_f32(xs, hx);
        b.vmul_ss(p, p, xs);  // fl(w * x) in f32
        b.vcvt_ss_sd(pd, p);
        b.vadd_sd(sd, sd, pd);
        b.end_for();
        b.vcvt_sd_ss(s, sd);
        if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
        b.vstore_ss(Mem{yt, {}, 1, 4 * i}, s);
        if (i > 0) b.end_if();
        continue;
      }
      b.for_(idx, np, mul_end, one);  // sumf = sumf + fl(w * x)
      b.vload_ss(p, Mem{r[i], idx, 4, 0});
      b.vload_ss(xs, Mem{xt[t], idx, 4, 0});
      b.vmul_ss(p, p, xs);
      b.vadd_ss(s, s, p);
      b.end_for();
      b.for_(idx, mul_end, K, one);  // sumf = fma(w, x, sumf)
      b.vload_ss(p, Mem{r[i], idx, 4, 0});
      b.vload_ss(xs, Mem{xt[t], idx, 4, 0});
      b.vfma_ss(s, p, xs);
      b.end_for();
      if (i > 0) b.if_(a.nrows, kir::Cmp::GT, i);
      b.vstore_ss(Mem{yt, {}, 1, 4 * i}, s);
      if (i > 0) b.end_if();
    }
  }
  return b.index();
}

bool build_float(const char* generator, Isa isa, Elem el, const GeneratorParams& params,
                 kir::Module* m, std::string* err) {
  int rows = isa == Isa::Avx2 ? 1 : 4, tokens = 1;
  if (!int_params(params, generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  const bool ok = isa == Isa::Avx2
                      ? rows == 1 && tokens == 1
                      : rows >= 1 && rows <= 4 && tokens >= 1 && tokens <= 3 && rows * tokens <= 6;
  if (!ok) {
    *err =
        fmt::format("generator '{}': tile {}x{} is not one it can emit ({})", generator, rows,
                    tokens, isa == Isa::Avx2 ? "1x1" : "rows 1..4, tokens 1..3, rows*tokens <= 6");
    return false;
  }
  m->isa = isa_features(isa);
  m->comment = el == Elem::F32
                   ? fmt::format(
                         "generator {}, rows {}, tokens {}: contract linear.f32.ggml "
                         "(ggml_vec_dot_f32 of an AVX-512 build:\n4 x 16-lane FMA accumulators, "
                         "_mm512_reduce_add_ps tree, K % 64 tail)",
                         generator, rows, tokens)
                   : fmt::format(
                         "generator {}, rows {}, tokens {}: contract linear.f16.ggml "
                         "(ggml_vec_dot_f16 of an AVX-512 build:\nvcvtph2ps, 4 x 16-lane FMA "
                         "accumulators, reduce tree, K % 64 tail added in double)",
                         generator, rows, tokens);
  const std::string& name = m->name;
  Builder e = open_linear_entry(*m, name);
  const Grid g = token_grid(name, rows, tokens, [&](const std::string& fn, int t) {
    return emit_tile(*m, fn, isa, el, rows, t);
  });

  const int esz = el == Elem::F32 ? 4 : 2;
  emit_linear_entry(e, g, {1, esz, esz});
  return true;
}

}  // namespace

bool build_linear_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_float("linear_f32__avx512", Isa::Avx512, Elem::F32, p, m, err);
}
bool build_linear_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_float("linear_f32__avx2", Isa::Avx2, Elem::F32, p, m, err);
}
bool build_linear_f16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_float("linear_f16__avx512", Isa::Avx512, Elem::F16, p, m, err);
}
bool build_linear_f16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_float("linear_f16__avx2", Isa::Avx2, Elem::F16, p, m, err);
}

}  // namespace cke::jit::gen
