// The entry of the generated Q8_0/Q4_0/Q4_1/Q5_0/Q5_1 linear kernels and their generators.
#include "jit/gen_linear_q.h"

#include <fmt/format.h>

#include <stdexcept>

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
  bool avx_vnni = false;  // AVX2 tiles with AVX-VNNI's vpdpbusd (ymm, VEX)
};

bool build_q(const QSpec& s, const GeneratorParams& params, kir::Module* m, std::string* err) {
  const bool avx512 = s.isa != Isa::Avx2;
  // Defaults: the tiles of the decode providers.
  int rows = s.repacked ? (avx512 ? 8 : 4) : 4, tokens = 1;
  if (!int_params(params, s.generator, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  // The 16-row repacked prefill kernel (one lane per row, packed activations) at AVX-512.
  const bool rows16 = s.repacked && avx512 && rows == 16;
  const int max_tokens = s.repacked ? 4 : avx512 ? 4 : 2;
  // Plain AVX-512 tiles hold two rows per zmm; 6 and 8 rows take the offset form (q8_0,
  // q5_0) or, for the unsigned formats (q4_1, q5_1), four pairs of the plain tile.
  const bool offset_rows = avx512 && s.format != QFormat::Q4_0 && (rows == 6 || rows == 8);
  bool rows_ok =
      s.repacked ? rows == (avx512 ? 8 : 4)
                 : (avx512 ? (rows == 2 || rows == 4 || offset_rows) : (rows >= 1 && rows <= 4));
  const bool tokens_ok =
      rows16 ? tokens == 8
             : tokens >= 1 && tokens <= max_tokens && (!s.repacked || tokens == 1 || tokens == 4);
  if (!(rows16 || rows_ok) || !tokens_ok) {
    *err =
        fmt::format("generator '{}': tile {}x{} is not one it can emit (rows {}, tokens 1..{}{})",
                    s.generator, rows, tokens,
                    s.repacked ? (avx512 ? "8 (tokens 1 or 4) or 16 (tokens 8)" : "4")
                               : (avx512 ? "2 or 4, not q4_0 also 6 or 8" : "1..4"),
                    max_tokens, s.repacked ? ", repacked: 1 or 4" : "");
    return false;
  }
  const std::string& name = m->name;
  m->isa = isa_features(s.isa);
  if (s.avx_vnni) m->isa.push_back("avxvnni");  // the AVX2 tiles read it (gen_linear_q_avx2)
  m->comment = fmt::format(
      "generator {}, rows {}, tokens {}: {} arithmetic of contract {}\n"
      "(activations: {} rows from the plan's act_quant step)",
      s.generator, rows, tokens, s.repacked ? "repacked 8x8 gemm/gemv" : "ggml_vec_dot lanes",
      s.repacked ? q_traits(s.format).contract_x8 : q_traits(s.format).contract,
      dtype_info(q_traits(s.format).act).name);

  Builder e = open_linear_entry(*m, name);
  auto tile = avx512 ? &build_q_tile_avx512 : &build_q_tile_avx2;
  if (rows16) {
    build_q4_0x8_rows16(e, *m, name, Rows16Weights::RowMajor, Rows16Split::Contract,
                        Rows16Isa::Avx512Vnni);
    return true;
  }
  if (offset_rows && rows == 8 && tokens == 4 && q_traits(s.format).is_signed()) {
    build_q_offset_packed_avx512(e, *m, name, s.format);  // q8_0, q5_0 prefill
    return true;
  }
  Grid g;
  if (s.repacked) {
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
  const RowPrefetch pf = row_prefetch(b, a, int(rows.size()));
  b.for_(l.off, b.imm(0, "zero"), end, b.imm(q_block_bytes(f), "block_bytes"));
  prefetch_rows(b, rows, l.off, q_block_bytes(f), pf);
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

void close_block_loop(kir::Builder& b, TokenRows& tr, QFormat f) {
  b.addi(tr.base, tr.base, q_traits(f).act_block_bytes);
  b.end_for();
}

MinTerm open_min_term(Builder& b, QFormat f, int tokens, int rows) {
  MinTerm mt;
  if (q_traits(f).min_offset < 0) return mt;
  if (rows > 8) throw std::logic_error("kir: a min term of at most 8 rows");
  for (int t = 0; t < tokens; ++t) {
    mt.summs.push_back(b.vec(rows > 4 ? 256 : 128, kir::Cls::F, "summs"));
    b.vzero(mt.summs.back());
  }
  return mt;
}

void min_term_block(Builder& b, QFormat f, MinTerm& mt, const std::vector<V>& rows, V off,
                    const TokenRows& tr) {
  if (mt.summs.empty()) return;
  const QFormatTraits& q = q_traits(f);
  const int bits = b.type(mt.summs[0]).bits;
  if (int(rows.size()) > bits / 32) throw std::logic_error("kir: min term rows");
  // m of row i in lane i (lanes past the tile's rows hold row 0's: never stored).
  V h = b.vec(128, kir::Cls::I, "mh"), mw = b.vec(bits, kir::Cls::F, "mw");
  b.vbcast_i16(h, kir::Mem{rows[0], off, 1, q.min_offset});
  for (size_t i = 1; i < rows.size(); ++i)
    b.vinsert_u16(h, h, kir::Mem{rows[i], off, 1, q.min_offset}, int(i));
  b.vcvt_f16_f32(mw, h);
  for (size_t t = 0; t < mt.summs.size(); ++t) {
    V sh = b.vec(128, kir::Cls::I, "sh"), sa = b.vec(bits, kir::Cls::F, "sa");
    b.vbcast_i16(sh, tr.at(int(t), q.act_sum_offset));
    b.vcvt_f16_f32(sa, sh);
    b.vfma(mt.summs[t], mw, sa);  // fma(m, s, summs): the product commutes exactly
  }
}

V add_min_term(Builder& b, const MinTerm& mt, V h, int row, int t) {
  if (mt.summs.empty()) return h;
  V s = mt.summs[size_t(t)];
  if (b.type(s).bits == 256) {
    if (row >= 4) {
      V hi = b.vec(128, kir::Cls::F, "summs_hi");
      b.vextract(hi, s, 1);
      s = hi;
      row -= 4;
    } else {
      s = b.view(s, 128, kir::Cls::F);
    }
  }
  if (row > 0) {
    V lane = b.vec(128, kir::Cls::F, "summs_row");
    b.vpermil_f(lane, s, row * 0x55);
    s = lane;
  }
  V out = b.vec(128, kir::Cls::F, "y");
  b.vadd_f(out, h, s);  // hsum8(acc) + summs
  return out;
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
bool build_linear_q4_0_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  int rows = 16, tokens = 8;
  if (!int_params(p, "linear_q4_0_r16__avx512vnni", {{"rows", &rows}, {"tokens", &tokens}}, err))
    return false;
  if (rows != 16 || (tokens != 1 && tokens != 8)) {
    *err = fmt::format(
        "generator 'linear_q4_0_r16__avx512vnni': tile {}x{} is not one it can emit (rows 16, "
        "tokens 1 for decode or 8)",
        rows, tokens);
    return false;
  }
  m->isa = isa_features(Isa::Avx512Vnni);
  m->comment = fmt::format(
      "generator linear_q4_0_r16__avx512vnni, rows 16, tokens {}: repacked 8x8 gemm/gemv "
      "arithmetic of contract linear.q4_0x8.ggml\n(weights: the q4_0_r16 copy made at load; "
      "activations: q8_0 rows from the plan's act_quant step)",
      tokens);
  Builder e = open_linear_entry(*m, m->name);
  // The decode provider (tokens 1) may run a batch of decode tokens (decode_batch): each
  // as the gemv.
  build_q4_0x8_rows16(e, *m, m->name, Rows16Weights::R16,
                      tokens == 1 ? Rows16Split::AllGemv : Rows16Split::Contract,
                      Rows16Isa::Avx512Vnni);
  return true;
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
bool build_linear_q8_0_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q8_0__avxvnni", QFormat::Q8_0, false, Isa::Avx2, true}, p, m, err);
}
bool build_linear_q4_0_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_0__avxvnni", QFormat::Q4_0, false, Isa::Avx2, true}, p, m, err);
}
bool build_linear_q4_0x8_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_0x8__avxvnni", QFormat::Q4_0, true, Isa::Avx2, true}, p, m, err);
}
bool build_linear_q4_1_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_1__avxvnni", QFormat::Q4_1, false, Isa::Avx2, true}, p, m, err);
}
bool build_linear_q5_0_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q5_0__avxvnni", QFormat::Q5_0, false, Isa::Avx2, true}, p, m, err);
}
bool build_linear_q5_1_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q5_1__avxvnni", QFormat::Q5_1, false, Isa::Avx2, true}, p, m, err);
}
bool build_linear_q4_1_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_1__avx512vnni", QFormat::Q4_1, false, Isa::Avx512Vnni}, p, m, err);
}
bool build_linear_q5_0_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q5_0__avx512vnni", QFormat::Q5_0, false, Isa::Avx512Vnni}, p, m, err);
}
bool build_linear_q5_1_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q5_1__avx512vnni", QFormat::Q5_1, false, Isa::Avx512Vnni}, p, m, err);
}
bool build_linear_q4_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q4_1__avx2", QFormat::Q4_1, false, Isa::Avx2}, p, m, err);
}
bool build_linear_q5_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q5_0__avx2", QFormat::Q5_0, false, Isa::Avx2}, p, m, err);
}
bool build_linear_q5_1_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build_q({"linear_q5_1__avx2", QFormat::Q5_1, false, Isa::Avx2}, p, m, err);
}

}  // namespace cke::jit::gen
