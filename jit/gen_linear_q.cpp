// The entry of the generated Q8_0/Q4_0 linear kernels and their generators.
#include "jit/gen_linear_q.h"

#include <fmt/format.h>

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
  // The 16-row repacked gemm (one lane per row) at AVX-512: tokens 4 or 8.
  const bool rows16 = s.repacked && avx512 && rows == 16;
  const int max_tokens = s.repacked ? 4 : avx512 ? 4 : 2;
  // Plain AVX-512 tiles hold two rows per zmm; 6 and 8 rows (q8_0) take the offset form.
  const bool offset_rows = avx512 && s.format == QFormat::Q8_0 && (rows == 6 || rows == 8);
  bool rows_ok =
      s.repacked ? rows == (avx512 ? 8 : 4)
                 : (avx512 ? (rows == 2 || rows == 4 || offset_rows) : (rows >= 1 && rows <= 4));
  const bool tokens_ok =
      rows16 ? (tokens == 4 || tokens == 8)
             : tokens >= 1 && tokens <= max_tokens && (!s.repacked || tokens == 1 || tokens == 4);
  if (!(rows16 || rows_ok) || !tokens_ok) {
    *err =
        fmt::format("generator '{}': tile {}x{} is not one it can emit (rows {}, tokens 1..{}{})",
                    s.generator, rows, tokens,
                    s.repacked ? (avx512 ? "8 (tokens 1 or 4) or 16 (tokens 4 or 8)" : "4")
                               : (avx512 ? "2 or 4, q8_0 also 6 or 8" : "1..4"),
                    max_tokens, s.repacked ? ", repacked: 1 or 4" : "");
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
  if (rows16) {
    // Open the tiles of a group's last tokens first: a caller has a lower index than its
    // callees. Tokens past the last whole 4 go through the gemv (the contract's split).
    g.R = 16;
    g.G = tokens;
    std::vector<std::pair<int, Builder>> rest;
    for (int r = 1; r < tokens; ++r)
      rest.emplace_back(r, open_tile(*m, fmt::format("{}_rest{}", name, r)));
    g.full_fn = build_q4_0x8_gemm16_avx512(*m, name + "_gemm16x" + std::to_string(tokens), tokens);
    const int gemm4 =
        tokens == 4 ? g.full_fn : build_q4_0x8_gemm16_avx512(*m, name + "_gemm16x4", 4);
    int gemv[4] = {-1, -1, -1, -1};
    for (int r = 1; r < 4; ++r)
      gemv[r] = tile(*m, fmt::format("{}_gemv{}", name, r), s.format, QArith::Gemv, 8, r);
    for (auto& [r, b] : rest) {
      g.rem_fn[r] = b.index();
      fill_rows16_rest(b, r >= 4 ? gemm4 : -1, r % 4 ? gemv[r % 4] : -1);
    }
  } else if (s.repacked) {
    g.R = rows;
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
    g = token_grid(name, rows, tokens, [&](const std::string& fn, int t) {
      return tile(*m, fn, s.format, QArith::Plain, rows, t);
    });
  }

  const QFormatTraits& tr = q_traits(s.format);
  emit_linear_entry(e, g, {tr.block_elems, tr.block_bytes, int(dtype_info(tr.act).type_size)});
  return true;
}

}  // namespace

BlockLoop open_block_loop(kir::Builder& b, const TileArgs& a, QFormat f, TokenRows&,
                          const std::vector<V>& rows) {
  BlockLoop l{b.i64("off")};
  V end = b.i64("end");
  b.muli(end, a.n, q_block_bytes(f));
  b.for_(l.off, b.imm(0, "zero"), end, b.imm(q_block_bytes(f), "block_bytes"));
  prefetch_rows(b, rows, l.off, q_block_bytes(f));
  return l;
}
kir::V act_scale(kir::Builder& b, const TokenRows& tr, int t, int bits) {
  V h = b.vec(bits == 512 ? 256 : 128, kir::Cls::I, "dah"), d = b.vec(bits, kir::Cls::F, "da");
  b.vbcast_i16(h, tr.at(t, 0));
  b.vcvt_f16_f32(d, h);
  return d;
}

void fma_block(kir::Builder& b, V acc, V isum, V dw, V da) {
  const int bits = b.type(acc).bits;
  V fsum = b.vec(bits, kir::Cls::F, "fsum"), d = b.vec(bits, kir::Cls::F, "d");
  b.vcvt_i32_f32(fsum, isum);
  b.vmul_f(d, dw, da);  // fl(dw * da)
  b.vfma(acc, d, fsum);
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
