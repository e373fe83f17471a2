// The q8_0 linear kernels on the weights' q8_0_r16 copy (kernels/formats/layouts.h) at
// AVX-512 VNNI, contract linear.q8_0.ggml: ggml_vec_dot_q8_0_q8_0's 8 float lanes per
// output, with each of them one lane of a vector of 16 rows. The entry below also runs the
// AVX2 / AVX-VNNI tiles (gen_linear_q8_0_r16_avx2.cpp: 8 rows a ymm, up to 4 tokens), and
// Q5_0 on its q5_0_r16 copy at each of those levels (contract linear.q5_0.ggml: the same
// lanes with q = x - 16; Q8_0R16Form in gen_linear_q.h), and Q4_1 / Q5_1 on theirs
// (linear.q{4,5}_1.ggml: the same lanes with unsigned weight integers, no correction, plus
// the min term summs = fma(m_w, s_a, summs) per token and block, y = hsum8(acc) + summs).
//
// Why this shape. The contract fixes, per (row, token, 32-element block), 8 int32 lane sums
// of 4 products, 8 int-to-float conversions and 8 lane FMAs with fl(d_w * d_a). The vec_dot
// form (two rows per zmm, 8 lanes each) also needs that scale product per pair and token, as
// a vector: 4 vector ops per 64 MACs. Here vector j (j = 0..7) holds lane j of 16 rows, so
// the 16 rows' scale products of a token are ONE vmulps per block, shared by its 8 lane
// vectors: vpdpbusd, vcvtdq2ps and vfmadd per 64 MACs, plus 1/8 of the vmulps. Lane j of a
// row is the dword j of its block, which the copy holds in lane r = row r at 64 j: the
// weight vectors are plain loads. hsum8 at the end is then vertical adds of the 8 lane
// vectors in ggml's order.
//
// Products. The copy holds u = q + 128 (unsigned), so vpdpbusd(u, a) = sum (q + 128) a and
// the pack's correction -128 * (sum of the lane's 4 activations) (emit_offset_pack) makes
// the exact int32 sum of q * a. ggml's vec_dot moves the weight's sign onto the activation
// (vpsignb), which differs from the exact product for an activation of -128 (only an inf or
// NaN input makes one) against a negative weight: it wraps. So a chunk of tokens holding a
// -128 runs through sign-move tiles (q = u xor 0x80, |q| times the activation with q's sign
// moved onto it, wrapping as vpsignb does): ggml's bits in both cases.
//
// What bounds it on AMD Zen 4 (measured 2026-12-06 with loops of independent ops): vpdpbusd,
// vfmadd, vpmaddubsw, vpmaddwd and vpmullw all issue on the same two FP pipes (8 of one kind
// take 8 cycles, 8 of any two kinds 16), so the contract's vpdpbusd + FMA per 64 MACs caps a
// core at 32 MACs a cycle (about 117 GMAC/s at 3.67 GHz, 109 with the scale products);
// vcvtdq2ps, vbroadcastss from memory and vpaddd partly take those pipes as well. The tile
// runs 97-101 GMAC/s. Tried and slower there: the correction as the accumulator's start
// (vbroadcastss or vpbroadcastd, 81-92), the scale product as an FMA with a {1to16} operand
// (86), the conversion as a float subtract of a 2^23 magic (85-93): each adds a register at
// the 32-register limit or a broadcast uop.
//
// Tiles: 16 rows x G tokens (G = 3 for prefill: 24 lane accumulators, the register file's
// limit with a weight vector, the tokens' scale products and temporaries; G = 1 for
// decode), activations packed per group of G tokens (the offset pack, kOffPack bytes a
// block). Every token is computed alone (the contract has no gemm/gemv split), so the
// token grouping never changes the bits. The row loop is the 16-row kernels' (gen_rows16.h):
// every group of a chunk on one tile before the next, the chunk's packs in L2.
#include <fmt/format.h>

#include "jit/gen_linear_q.h"
#include "jit/gen_rows16.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/layouts.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Mem;
using kir::V;

constexpr int kLanes = 8;      // ggml's float lanes per output
constexpr int kMaxGroup = 3;   // AVX-512 tiles
constexpr int kMaxTokens = 4;  // AVX2 tiles (kOffGroup)
static_assert(kMaxTokens <= kOffGroup);
// Frame bytes for the packs of one chunk of token groups (kOffPack bytes per block and
// group): with a tile's weights (16 * 34 bytes a block) within a 1 MiB L2.
constexpr int kPackBudget = 512 * 1024;
constexpr int kMaxBlocks = 512;  // K <= 16384 (the map's shape predicate)
static_assert(kPackBudget >= kMaxBlocks * kOffPack);

enum class Products : uint8_t { Exact, SignMove };

using WeightForm = Q8_0R16Form;  // gen_linear_q.h

// One tile: 16 rows (the group at w) x `tokens` tokens of a pack (gen_rows16.h).
int emit_tile(kir::Module& m, const std::string& name, int tokens, Products products,
              WeightForm wf) {
  Builder b = open_tile(m, name);
  const TileArgs a = begin_tile(b);
  const bool exact = products == Products::Exact;
  V zero, to_q;
  if (!exact) {
    zero = b.vec(512, Cls::I, "zero");
    to_q = b.vec(512, Cls::I, "to_q");
    b.vzero(zero);
    b.vsplat32(to_q, wf.high_bit() ? 0x10101010u : 0x80808080u);  // q = u - 16 / u xor 0x80
  }
  V m0f, m10;
  if (wf.nibbles()) {
    m0f = b.vec(512, Cls::I, "m0f");
    b.vsplat32(m0f, 0x0F0F0F0Fu);
  }
  if (wf.high_bit()) {
    m10 = b.vec(512, Cls::I, "m10");
    b.vsplat32(m10, 0x10101010u);
  }
  V acc[kMaxGroup][kLanes], summs[kMaxGroup];
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < kLanes; ++j) {
      acc[t][j] = b.vec(512, Cls::F, "acc");
      b.vzero(acc[t][j]);
    }
    if (wf.has_min()) {
      summs[t] = b.vec(512, Cls::F, "summs");
      b.vzero(summs[t]);
    }
  }

  V wb = b.ptr("wb"), pk = b.ptr("pk"), off = b.i64("off"), end = b.i64("end");
  b.mov(pk, a.a);
  b.muli(end, a.n, wf.block());
  b.for_(off, b.imm(0, "zero_i"), end, b.imm(wf.block(), "block_bytes"));
  b.ptr_add(wb, a.w, off, 1);  // this block of the group
  // Prefetch into L2, kStreamPrefetchAhead on (gen_tile.h).
  // q8_0 needs twice q4_0's bytes per MAC and its kernel consumes them at about the rate
  // DRAM supplies one core; without the prefetch one core streamed 13-15 GB/s, with it 18-20
  // (bench_kernels, AMD EPYC Zen 4).
  if (stream_prefetch(tokens))
    for (int l = 0; l < wf.block(); l += 64) b.vprefetch(Mem{wb, {}, 1, kStreamPrefetchAhead + l});
  // d[t] = fl(d_w * d_a) for the 16 rows: one product per row and token, as ggml's.
  V hw = b.vec(256, Cls::I, "hw"), dw = b.vec(512, Cls::F, "dw");
  b.vload(hw, Mem{wb, {}, 1, wf.scale()});
  b.vcvt_f16_f32(dw, hw);
  V d[kMaxGroup];
  for (int t = 0; t < tokens; ++t) {
    V da = b.vec(512, Cls::F, "da");
    b.vbcast_f32(da, Mem{pk, {}, 1, kOffPackScale + 4 * t});
    d[t] = b.vec(512, Cls::F, "d");
    b.vmul_f(d[t], dw, da);
  }
  if (wf.has_min()) {  // summs = fma(m_w, s_a, summs), ggml's contracted `summs += m * s`
    V mh = b.vec(256, Cls::I, "mh"), mw = b.vec(512, Cls::F, "mw");
    b.vload(mh, Mem{wb, {}, 1, wf.min()});
    b.vcvt_f16_f32(mw, mh);
    for (int t = 0; t < tokens; ++t) {
      V sa = b.vec(512, Cls::F, "sa");
      b.vbcast_f32(sa, Mem{pk, {}, 1, kOffPackCorr + 32 * t});  // the pack's s (f32, exact)
      b.vfma(summs[t], mw, sa);
    }
  }
  V qh;
  if (wf.high_bit()) {
    qh = b.vec(512, Cls::I, "qh");
    b.vload(qh, Mem{wb, {}, 1, wf.qh()});  // lane r: row r's reordered high bits
  }
  for (int j = 0; j < kLanes; ++j) {
    V u = b.vec(512, Cls::I, "u");
    if (wf.high_bit()) {  // u = x of row r's elements 4j..4j+3 (0..31)
      V hb = b.vec(512, Cls::I, "hb");
      if (j < 4) b.vsll_i32(hb, qh, 4 - j);
      if (j > 4) b.vsrl_i32(hb, qh, j - 4);
      V nib = b.vec(512, Cls::I, "nib");
      b.vload(nib, Mem{wb, {}, 1, 64 * (j % 4)});
      if (j >= 4) b.vsrl_i32(nib, nib, 4);
      b.vand(nib, nib, m0f);
      b.vternlog(u, nib, j == 4 ? qh : hb, m10, 0xF8);  // nib | (hb & 0x10)
    } else if (wf.nibbles()) {  // q4_1: u = the nibbles of elements 4j..4j+3 (0..15)
      b.vload(u, Mem{wb, {}, 1, 64 * (j % 4)});
      if (j >= 4) b.vsrl_i32(u, u, 4);
      b.vand(u, u, m0f);
    } else {
      b.vload(u, Mem{wb, {}, 1, 64 * j});  // lane r: q + 128 of row r's elements 4j..4j+3
    }
    V aq, neg;
    if (!exact) {  // |q| and q's sign, for ggml's sign move
      V q = b.vec(512, Cls::I, "q");
      if (wf.high_bit())
        b.vsub_i8(q, u, to_q);
      else
        b.vxor(q, u, to_q);
      aq = b.vec(512, Cls::I, "aq");
      b.vabs_i8(aq, q);
      neg = b.mask("neg");
      b.kfrom_bytes(neg, q);
    }
    for (int t = 0; t < tokens; ++t) {
      V isum = b.vec(512, Cls::I, "isum");
      const Mem act_m{pk, {}, 1, 32 * t + 4 * j};  // activation dword j (bits)
      if (exact) {
        // sum (q + 128) a, then + (-128 * sum(a)) = sum q a, exact. Both dwords are the
        // instructions' {1to16} memory operands: broadcasting them into registers first
        // made this loop 1.6x slower on Zen 4 (a vpbroadcastd from memory takes an FP pipe
        // slot there; 66 -> 105 GMAC/s in a port test of this block's instructions).
        b.vzero(isum);
        b.vdpbusd_b(isum, u, act_m);
        if (!wf.has_min())  // q4_1 / q5_1: u is the weight integer, no correction
          b.vadd_i32_b(isum, isum, Mem{pk, {}, 1, kOffPackCorr + 32 * t + 4 * j});
      } else {
        V act = b.vec(512, Cls::I, "act");
        b.vbcast_f32(act, act_m);
        V sy = b.vec(512, Cls::I, "sy");
        b.vcopy(sy, act);
        b.vsub_i8_mk(sy, neg, zero, act);  // 0 - a where q < 0 (-(-128) wraps, as vpsignb)
        b.vzero(isum);
        b.vdpbusd(isum, aq, sy);
      }
      V f = b.vec(512, Cls::F, "fsum");
      b.vcvt_i32_f32(f, isum);
      b.vfma(acc[t][j], d[t], f);  // acc = fma(fl(d_w * d_a), float(isum), acc)
    }
  }
  b.addi(pk, pk, kOffPack);
  b.end_for();

  // hsum8 = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), lane r = row r.
  V store = b.mask("store"), yt = b.ptr("yt");
  b.kfirst_n(store, a.nrows);
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    V h = hsum8_rows(b, acc[t]);
    if (wf.has_min()) b.vadd_f(h, h, summs[t]);  // hsum8(acc) + summs
    b.vstore_mk(Mem{yt, {}, 1, 0}, h, store);
  }
  return b.index();
}

// isa: the tiles' (Avx2 / AvxVnni: gen_linear_q8_0_r16_avx2.cpp; plain AVX2 has only the
// sign-move tiles, ggml's bits for every input, so it runs them without the -128 check).
void build_entry(Builder& e, kir::Module& m, const std::string& name, int group, Rows16Isa isa,
                 WeightForm wf) {
  const bool avx512 = isa == Rows16Isa::Avx512Vnni, vnni = isa != Rows16Isa::Avx2;
  // Tiles: G tokens and the 1 .. G-1 of a last group, exact and sign-move.
  int exact[kMaxTokens + 1], sign[kMaxTokens + 1];
  for (int k = 1; k <= group; ++k) {
    const std::string t = fmt::format("{}_t{}", name, k);
    if (avx512) {
      exact[k] = emit_tile(m, t, k, Products::Exact, wf);
      sign[k] = wf.has_min() ? exact[k] : emit_tile(m, t + "_sign", k, Products::SignMove, wf);
    } else {
      if (wf.has_min()) {  // unsigned weights: exact products at either level, no sign move
        exact[k] = sign[k] = emit_q8_0_r16_tile_avx2(m, t, k, Q8_0Products::Exact, vnni, wf);
        continue;
      }
      sign[k] = emit_q8_0_r16_tile_avx2(m, t + "_sign", k, Q8_0Products::SignMove, vnni, wf);
      exact[k] = vnni ? emit_q8_0_r16_tile_avx2(m, t, k, Q8_0Products::Exact, true, wf) : sign[k];
    }
  }
  const auto [x, w, y, K, N, T, n0, n1, nb] = linear_entry_prologue(e, kQK8_0, kMaxBlocks);
  Rows16Args ra{Rows16Weights::R16, w, {}, e.i64("group_bytes"), n0, n1, e.i64("y_stride"), nb,
                e.ptr("group_tmp")};
  e.muli(ra.gs, nb, wf.block());
  e.muli(ra.ys, N, 4);
  e.ptr_align(ra.tmp, e.stack(4 * kRows16 * group + 64, "tmp_raw"), 64);
  V as = e.i64("act_stride"), tmp = e.i64("tmp");
  e.muli(as, nb, q_traits(wf.pack()).act_block_bytes);  // block_q8_0, or block_q8_1
  V pk = e.ptr("pack");
  e.ptr_align(pk, e.stack(kPackBudget + 64, "pack_raw"), 64);

  // Tokens in chunks of C groups of G (as many groups as kPackBudget holds; the last chunk
  // may end in a group of fewer): the chunk's groups are packed, then every row tile runs
  // all of them.
  V gbytes = e.i64("gbytes"), C = e.i64("C"), chunk = e.i64("chunk");
  V t0 = e.i64("t0"), cnt = e.i64("cnt"), xt = e.ptr("xt"), yt = e.ptr("yt");
  V gi = e.i64("gi"), gc = e.i64("gcnt"), pkg = e.ptr("pkg"), xg = e.ptr("xg");
  V G = e.imm(group, "G"), rem = group > 1 ? e.i64("rem") : V{}, bits = e.i64("min8_bits");
  e.muli(gbytes, nb, kOffPack);
  e.movi(C, kPackBudget);
  e.div(C, C, gbytes);
  e.muli(chunk, C, group);
  Rows16Groups groups{exact[group],
                      -1,
                      group,
                      0,
                      pk,
                      e.i64("n_full"),
                      group > 1 ? e.i64("has_tail") : V{},
                      gbytes,
                      e.i64("y_step")};
  e.muli(groups.y_step, ra.ys, group);
  e.for_(t0, e.imm(0, "zero"), T, chunk);
  {
    e.sub(cnt, T, t0);
    e.min(cnt, cnt, chunk);
    e.mul(tmp, t0, as);
    e.ptr_add(xt, x, tmp, 1);
    e.mul(tmp, t0, ra.ys);
    e.ptr_add(yt, y, tmp, 1);
    e.mov(pkg, pk);
    e.mov(xg, xt);
    V cmin = e.vec(256, Cls::I, "chunk_min");
    e.vsplat32(cmin, 0x7F7F7F7Fu);
    e.for_(gi, e.imm(0, "zero_p"), cnt, G);
    e.sub(gc, cnt, gi);
    e.min(gc, gc, G);
    emit_offset_pack(e, wf.pack(), xg, as, nb, gc, pkg, cmin, vnni);
    e.ptr_add(pkg, pkg, gbytes, 1);
    e.muli(tmp, as, group);
    e.ptr_add(xg, xg, tmp, 1);
    e.end_for();
    if (wf.has_min()) {
      e.movi(bits, 0);  // exact products for every activation (no sign-move tiles)
    } else if (avx512) {
      emit_has_min8(e, cmin, bits);
    } else if (vnni) {
      emit_has_min8_avx2(e, cmin, bits);
    } else {
      e.movi(bits, 0);  // the sign-move tiles either way
    }
    e.movi(groups.n_full, group);
    e.div(groups.n_full, cnt, groups.n_full);
    if (group > 1) {
      e.muli(tmp, groups.n_full, group);
      e.sub(rem, cnt, tmp);
      e.movi(groups.has_tail, 1);
    }
    // One row loop per (products, size of the last group): the tail tile is fixed per loop.
    for (int s = 0; s < (vnni && !wf.has_min() ? 2 : 1); ++s) {
      e.if_(bits, s ? Cmp::NE : Cmp::EQ, 0);
      const int* tiles = s ? sign : exact;
      for (int r = 0; r < group; ++r) {
        if (group > 1) e.if_(rem, Cmp::EQ, r);
        Rows16Groups g = groups;
        g.full_tile = tiles[group];
        g.tail_tile = r > 0 ? tiles[r] : -1;
        g.tail_tokens = r;
        emit_rows16(e, ra, g, yt);
        if (group > 1) e.end_if();
      }
      e.end_if();
    }
  }
  e.end_for();
}

}  // namespace

namespace {

bool build(const char* gen, Rows16Isa isa, const GeneratorParams& p, kir::Module* m,
           std::string* err, WeightForm wf = {}) {
  const bool avx512 = isa == Rows16Isa::Avx512Vnni;
  // q4_1 / q5_1 at AVX-512: 2 tokens (8 lane accumulators, a min sum and a scale product
  // per token, within the 32 registers; 3 would spill).
  const int most = avx512 ? (wf.has_min() ? 2 : kMaxGroup) : kMaxTokens;
  int rows = 16, tokens = most;
  if (!int_params(p, gen, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows != 16 || tokens < 1 || tokens > most) {
    *err = fmt::format("generator '{}': tile {}x{} is not one it can emit (rows 16, tokens 1..{})",
                       gen, rows, tokens, most);
    return false;
  }
  m->isa = isa_features(avx512 ? Isa::Avx512Vnni : Isa::Avx2);
  if (isa == Rows16Isa::AvxVnni) m->isa.push_back("avxvnni");
  m->comment = fmt::format(
      "generator {}, rows 16, tokens {}: ggml_vec_dot lanes of contract linear.{}.ggml\n"
      "(weights: the {}_r16 copy made at load; activations: rows from the plan's "
      "act_quant step)",
      gen, tokens, q_traits(wf.f).name, q_traits(wf.f).name);
  Builder e = open_linear_entry(*m, m->name);
  build_entry(e, *m, m->name, tokens, isa, wf);
  return true;
}

}  // namespace

bool build_linear_q8_0_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q8_0_r16__avx512vnni", Rows16Isa::Avx512Vnni, p, m, err);
}
bool build_linear_q5_0_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q5_0_r16__avx512vnni", Rows16Isa::Avx512Vnni, p, m, err,
               WeightForm{QFormat::Q5_0});
}
bool build_linear_q4_1_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_1_r16__avx512vnni", Rows16Isa::Avx512Vnni, p, m, err,
               WeightForm{QFormat::Q4_1});
}
bool build_linear_q5_1_r16_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q5_1_r16__avx512vnni", Rows16Isa::Avx512Vnni, p, m, err,
               WeightForm{QFormat::Q5_1});
}
bool build_linear_q4_1_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_1_r16__avx2", Rows16Isa::Avx2, p, m, err, WeightForm{QFormat::Q4_1});
}
bool build_linear_q4_1_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q4_1_r16__avxvnni", Rows16Isa::AvxVnni, p, m, err,
               WeightForm{QFormat::Q4_1});
}
bool build_linear_q5_1_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q5_1_r16__avx2", Rows16Isa::Avx2, p, m, err, WeightForm{QFormat::Q5_1});
}
bool build_linear_q5_1_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q5_1_r16__avxvnni", Rows16Isa::AvxVnni, p, m, err,
               WeightForm{QFormat::Q5_1});
}
bool build_linear_q8_0_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q8_0_r16__avx2", Rows16Isa::Avx2, p, m, err);
}
bool build_linear_q8_0_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q8_0_r16__avxvnni", Rows16Isa::AvxVnni, p, m, err);
}
bool build_linear_q5_0_r16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q5_0_r16__avx2", Rows16Isa::Avx2, p, m, err, WeightForm{QFormat::Q5_0});
}
bool build_linear_q5_0_r16_avxvnni(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("linear_q5_0_r16__avxvnni", Rows16Isa::AvxVnni, p, m, err,
               WeightForm{QFormat::Q5_0});
}

}  // namespace cke::jit::gen
