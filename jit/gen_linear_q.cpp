// The entry of the generated Q8_0/Q4_0 linear kernels and their generators.
#include "jit/gen_linear_q.h"

#include <fmt/format.h>

#include <tuple>

#include "kernels/formats/blocks.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::V;

struct QSpec {
  const char* generator;
  QFormat format;
  bool repacked;
  Isa isa;
};

bool build_q(const QSpec& s, const GeneratorParams& params, kir::Module* m, std::string* err) {
  const bool avx512 = s.isa != Isa::Avx2;
  // Defaults: the tiles of the decode providers.
  int rows = s.repacked ? (avx512 ? 8 : 4) : 4, tokens = 1;
  if (!int_params(params, s.generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  const int max_tokens = s.repacked ? 4 : avx512 ? 4 : 2;
  bool rows_ok = s.repacked ? rows == (avx512 ? 8 : 4)
                            : (avx512 ? (rows == 2 || rows == 4) : (rows >= 1 && rows <= 4));
  if (!rows_ok || tokens < 1 || tokens > max_tokens || (s.repacked && tokens != 1 && tokens != 4)) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows {}, tokens 1..{}{})", s.generator,
        rows, tokens, s.repacked ? (avx512 ? "8" : "4") : (avx512 ? "2 or 4" : "1..4"), max_tokens,
        s.repacked ? ", repacked: 1 or 4" : "");
    return false;
  }
  const std::string& name = m->name;
  m->isa = isa_features(s.isa);
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}: {} arithmetic of contract {}\n"
      "(activations: Q8_0 rows from the plan's act_quant step)",
      s.generator, rows, tokens, s.repacked ? "repacked 8x8 gemm/gemv" : "ggml_vec_dot lanes",
      s.repacked ? q_traits(s.format).contract_x8 : q_traits(s.format).contract);

  Builder e(
      *m, name,
      {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
  auto tile = avx512 ? &build_q_tile_avx512 : &build_q_tile_avx2;
  Grid g;
  g.R = rows;
  if (s.repacked) {
    // Groups of 4 through the gemm, the rest through the gemv; tokens = 1 (decode) has
    // only the gemv of one token.
    g.G = tokens == 4 ? 4 : 1;
    if (tokens == 4) {
      g.full_fn = tile(*m, name + "_gemm4", s.format, QArith::Gemm, rows, 4);
      for (int r = 1; r < 4; ++r)
        g.rem_fn[r] = tile(*m, fmt::format("{}_gemv{}", name, r), s.format, QArith::Gemv, rows, r);
    } else {
      g.full_fn = tile(*m, name + "_gemv1", s.format, QArith::Gemv, rows, 1);
    }
  } else {
    g.G = tokens;
    g.full_fn =
        tile(*m, fmt::format("{}_t{}", name, tokens), s.format, QArith::Plain, rows, tokens);
    for (int r = 1; r < tokens; ++r)
      g.rem_fn[r] = tile(*m, fmt::format("{}_t{}", name, r), s.format, QArith::Plain, rows, r);
  }

  const V x = e.arg(0), w = e.arg(1), y = e.arg(2), K = e.arg(3), N = e.arg(4), T = e.arg(5),
          n0 = e.arg(6), n1 = e.arg(7);
  // A call outside the contract computes nothing (the plan never makes one).
  V nb = e.i64("nb"), rb = e.i64("row_bytes"), as = e.i64("act_stride");
  V k_tail = e.i64("k_tail");
  e.andi(k_tail, K, 31);
  for (auto [a, c, b] : {std::tuple{T, Cmp::LE, int64_t(0)},
                         {K, Cmp::LE, 0},
                         {k_tail, Cmp::NE, 0},
                         {n0, Cmp::LT, 0}}) {
    e.if_(a, c, b);
    e.ret();
    e.end_if();
  }
  for (auto [a, c, b] : {std::tuple{n1, Cmp::LE, n0}, {n1, Cmp::GT, N}}) {
    e.if_(a, c, b);
    e.ret();
    e.end_if();
  }
  e.sari(nb, K, 5);
  e.muli(rb, nb, q_block_bytes(s.format));
  e.muli(as, nb, int64_t(dtype_info(q_traits(s.format).act).type_size));
  V w0 = e.ptr("w_n0"), y0 = e.ptr("y_n0"), ys = e.i64("y_stride"), tmp = e.i64("tmp");
  e.muli(ys, N, 4);
  e.mul(tmp, n0, rb);
  e.ptr_add(w0, w, tmp, 1);
  e.ptr_add(y0, y, n0, 4);
  emit_grid(e, g, w0, rb, n0, n1, x, as, T, y0, ys, nb);
  return true;
}

}  // namespace

BlockLoop open_block_loop(kir::Builder& b, const TileArgs& a, QFormat f, TokenRows&) {
  BlockLoop l{b.i64("off")};
  V end = b.i64("end");
  b.muli(end, a.n, q_block_bytes(f));
  b.for_(l.off, b.imm(0, "zero"), end, b.imm(q_block_bytes(f), "block_bytes"));
  return l;
}
kir::V act_scale(kir::Builder& b, const TokenRows& tr, int t, int bits) {
  V h = b.vec(bits == 512 ? 256 : 128, kir::Cls::I, "dah"), d = b.vec(bits, kir::Cls::F, "da");
  b.vbcast_i16(h, tr.at(t, 0));
  b.vcvt_f16_f32(d, h);
  return d;
}

void close_block_loop(kir::Builder& b, TokenRows& tr) {
  b.addi(tr.base, tr.base, int64_t(sizeof(block_q8_0)));
  b.end_for();
}

bool build_linear_q8_0_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q8_0__avx512vnni", QFormat::Q8_0, false, Isa::Avx512Vnni}, p, m, err);
}
bool build_linear_q4_0_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_0__avx512vnni", QFormat::Q4_0, false, Isa::Avx512Vnni}, p, m, err);
}
bool build_linear_q4_0x8_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_0x8__avx512vnni", QFormat::Q4_0, true, Isa::Avx512Vnni}, p, m, err);
}
bool build_linear_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q8_0__avx2", QFormat::Q8_0, false, Isa::Avx2}, p, m, err);
}
bool build_linear_q4_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_0__avx2", QFormat::Q4_0, false, Isa::Avx2}, p, m, err);
}
bool build_linear_q4_0x8_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_0x8__avx2", QFormat::Q4_0, true, Isa::Avx2}, p, m, err);
}

}  // namespace cke::jit::gen
