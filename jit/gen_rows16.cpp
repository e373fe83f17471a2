// The 16-row kernels' row loop (gen_rows16.h).
#include "jit/gen_rows16.h"

#include <fmt/format.h>

#include <stdexcept>

#include "jit/gen_tile.h"

namespace cke::jit::gen {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Mem;
using kir::V;

namespace {

// Calls the tiles of every group of `g` for the 16-row tile at wn (rows, outputs at yn, `yo`
// bytes between tokens, `ystep` between groups); `after` (if any) runs after each call.
void emit_group_calls(Builder& e, const Rows16Args& r, const Rows16Groups& g, V wn, V rows, V yn,
                      V yo, V ystep, const std::function<void(int tokens)>& after) {
  V gi = e.i64("gi"), pkg = e.ptr("pk_g"), yg = e.ptr("y_g"), none = e.imm(0, "none");
  V wstride = r.layout == Rows16Weights::R16 ? r.gs : r.rb;
  e.mov(pkg, g.pk);
  e.mov(yg, yn);
  e.for_(gi, e.imm(0, "zero_g"), g.n_full, e.imm(1, "one_g"));
  e.call(g.full_tile, {wn, wstride, rows, pkg, none, yg, yo, r.nb});
  if (after) after(g.full_tokens);
  e.ptr_add(pkg, pkg, g.pk_step, 1);
  e.ptr_add(yg, yg, ystep, 1);
  e.end_for();
  if (g.tail_tile >= 0) {
    e.if_(g.has_tail, Cmp::NE, 0);
    e.call(g.tail_tile, {wn, wstride, rows, pkg, none, yg, yo, r.nb});
    if (after) after(g.tail_tokens);
    e.end_if();
  }
}

}  // namespace

// Every row tile of the groups `g` (outputs from y = row 0, token 0 of the first group): per
// 16 rows [n, n + 16) of [n0, n1), every group's tile, so the tile's weights are read from
// memory once for all the groups. The r16 copy runs whole groups: a first row group that
// starts at n0 % 16 != 0 goes through tmp (64 bytes a token) and its rows are copied out.
void emit_rows16(Builder& e, const Rows16Args& r, const Rows16Groups& g, V y) {
  V n = e.i64("n"), rows = e.i64("rows"), left = e.i64("left"), tmp = e.i64("tmp");
  V wn = e.ptr("wn"), yn = e.ptr("yn"), step = e.imm(kRows16, "R");
  V start = e.i64("start");
  e.mov(start, r.n0);
  if (r.layout == Rows16Weights::RowMajor) {
    e.mul(tmp, r.n0, r.rb);
    e.ptr_add(wn, r.w, tmp, 1);
    e.ptr_add(yn, y, r.n0, 4);
  } else {
    V grp = e.i64("grp"), r0 = e.i64("r0");
    e.sari(grp, r.n0, 4);
    e.mul(tmp, grp, r.gs);
    e.ptr_add(wn, r.w, tmp, 1);
    e.andi(r0, r.n0, kRows16 - 1);
    e.sub(start, r.n0, r0);  // the group's first row
    e.ptr_add(yn, y, start, 4);
    e.if_(r0, Cmp::NE, 0);
    {
      // Each token group into tmp, then rows [r0, min(16, n1 - start)) out to its y.
      V sixteen = e.imm(kRows16, "sixteen"), t64 = e.imm(4 * kRows16, "t64"), rend = e.i64("rend");
      V ri = e.i64("ri"), ys_t = e.ptr("ys_t"), tmp_t = e.ptr("tmp_t");
      e.sub(rend, r.n1, start);
      e.min(rend, rend, sixteen);
      // Every group's tile writes tmp; `after` copies the rows to that group's outputs.
      V y_of_group = e.ptr("y_of_group");
      e.mov(y_of_group, yn);
      emit_group_calls(e, r, g, wn, sixteen, r.tmp, t64, e.imm(0, "same_tmp"), [&](int tokens) {
        e.mov(ys_t, y_of_group);
        e.mov(tmp_t, r.tmp);
        for (int t = 0; t < tokens; ++t) {
          e.for_(ri, r0, rend, e.imm(1, "one"));
          V f = e.vec(128, Cls::F, "row_out");
          e.vload_ss(f, Mem{tmp_t, ri, 4, 0});
          e.vstore_ss(Mem{ys_t, ri, 4, 0}, f);
          e.end_for();
          e.ptr_add(ys_t, ys_t, r.ys, 1);
          e.addi(tmp_t, tmp_t, 4 * kRows16);
        }
        e.ptr_add(y_of_group, y_of_group, g.y_step, 1);
      });
      e.addi(start, start, kRows16);
      e.ptr_add(wn, wn, r.gs, 1);
      e.addi(yn, yn, 4 * kRows16);
    }
    e.end_if();
  }
  e.for_(n, start, r.n1, step);
  e.sub(left, r.n1, n);
  e.min(rows, step, left);
  emit_group_calls(e, r, g, wn, rows, yn, r.ys, g.y_step, {});
  if (r.layout == Rows16Weights::R16) {
    e.ptr_add(wn, wn, r.gs, 1);
  } else {
    e.muli(tmp, r.rb, kRows16);
    e.ptr_add(wn, wn, tmp, 1);
  }
  e.addi(yn, yn, 4 * kRows16);
  e.end_for();
}

// A row tile of the grid is a group: row n's outputs come from lane n % 16 of group n / 16,
// so rows [first, n1) with first = n0 rounded down to 16 run as the row-major grid does
// (w + (n / 16) * gs = w + n * rb with gs = 16 rb, rb = nb * l.w_block_bytes). A range
// starting inside a group (n0 % 16 != 0, a thread's split) first computes that whole group,
// 8 tokens at a time, into a frame buffer and keeps rows [n0, ...) of it.
void emit_r16_entry(Builder& e, const Grid& g, const LinearLayout& l) {
  const auto [x, w, y, K, N, T, n0, n1, nb] = linear_entry_prologue(e, l.block_elems);
  V rb = e.i64("row_bytes"), as = e.i64("act_stride"), ys = e.i64("y_stride"), tmp = e.i64("tmp");
  V first = e.i64("first"), r0 = e.i64("r0"), wf = e.ptr("w_first"), yf = e.ptr("y_first");
  e.muli(rb, nb, l.w_block_bytes);
  e.muli(as, nb, l.a_block_bytes);
  e.muli(ys, N, 4);
  e.andi(r0, n0, kRows16 - 1);
  e.sub(first, n0, r0);
  e.mul(tmp, first, rb);
  e.ptr_add(wf, w, tmp, 1);
  e.ptr_add(yf, y, first, 4);
  e.if_(r0, Cmp::NE, 0);
  {
    V buf = e.ptr("group_out"), t0 = e.i64("t0"), cnt = e.i64("cnt"), rend = e.i64("rend");
    V xt = e.ptr("xt"), yt = e.ptr("yt"), ri = e.i64("ri"), t = e.i64("t");
    V sixteen = e.imm(kRows16, "sixteen"), row_out = e.imm(4 * kRows16, "row_out");
    V g_end = e.i64("g_end"), eight = e.imm(8, "eight");
    e.ptr_align(buf, e.stack(8 * 4 * kRows16 + 64, "group_raw"), 64);
    e.addi(g_end, first, kRows16);
    e.sub(rend, n1, first);
    e.min(rend, rend, sixteen);
    e.for_(t0, e.imm(0, "zero_t"), T, eight);
    {
      e.sub(cnt, T, t0);
      e.min(cnt, cnt, eight);
      e.mul(tmp, t0, as);
      e.ptr_add(xt, x, tmp, 1);
      // The group's 16 rows of these tokens (the grid's own tiles, 64 bytes a token).
      emit_grid(e, g, wf, rb, first, g_end, xt, as, cnt, buf, row_out, nb);
      e.mul(tmp, t0, ys);
      e.ptr_add(yt, y, tmp, 1);
      e.ptr_add(yt, yt, first, 4);
      e.for_(t, e.imm(0, "zero_c"), cnt, e.imm(1, "one_t"));
      {
        V src = e.ptr("src");
        e.muli(tmp, t, 4 * kRows16);
        e.ptr_add(src, buf, tmp, 1);
        e.for_(ri, r0, rend, e.imm(1, "one_r"));
        V f = e.vec(128, Cls::F, "row_y");
        e.vload_ss(f, Mem{src, ri, 4, 0});
        e.vstore_ss(Mem{yt, ri, 4, 0}, f);
        e.end_for();
        e.ptr_add(yt, yt, ys, 1);
      }
      e.end_for();
    }
    e.end_for();
    e.addi(first, first, kRows16);
    e.muli(tmp, rb, kRows16);
    e.ptr_add(wf, wf, tmp, 1);
    e.addi(yf, yf, 4 * kRows16);
  }
  e.end_if();
  emit_grid(e, g, wf, rb, first, n1, x, as, T, yf, ys, nb);
}

void emit_has_min8(Builder& e, V amin, V bits) {
  V amin512 = e.vec(512, Cls::I, "amin512"), am = e.vec(512, Cls::I, "amin_abs"),
    zero512 = e.vec(512, Cls::I, "zero512");
  V k = e.mask("has_min8");
  e.vzero(zero512);
  e.vinsert(amin512, zero512, amin, 0);
  e.vabs_i8(am, amin512);  // |min| keeps its sign bit only for -128
  e.kfrom_bytes(k, am);
  e.kto_i64(bits, k);
}

std::vector<uint32_t> dword_shuffle(std::initializer_list<int> bytes, int blocks) {
  std::vector<uint32_t> c;
  for (uint32_t l = 0; l < 4 * uint32_t(blocks); ++l) {
    uint32_t v = 0, i = 0;
    for (int s : bytes) v |= (s < 0 ? 0x80u : 4 * (l % 4) + uint32_t(s)) << (8 * i++);
    c.push_back(v);
  }
  return c;
}

bool build_r16_avx2(
    const char* gen, bool vnni, const std::string& what, const LinearLayout& l, int max_tokens,
    const std::function<int(kir::Module&, const std::string&, bool, int)>& emit_tile,
    const GeneratorParams& p, kir::Module* m, std::string* err) {
  int rows = 16, tokens = 1;
  if (!int_params(p, gen, {{"rows", &rows}, {"tokens", &tokens}}, err)) return false;
  if (rows != 16 || (tokens != 1 && tokens != max_tokens)) {
    *err = fmt::format(
        "generator '{}': tile {}x{} is not one it can emit (rows 16, tokens 1: decode{})", gen,
        rows, tokens, max_tokens > 1 ? fmt::format(", or {}", max_tokens) : "");
    return false;
  }
  m->isa = isa_features(Isa::Avx2);
  if (vnni) m->isa.push_back("avxvnni");
  m->comment = fmt::format("generator {}, rows 16, tokens {}: {}", gen, tokens, what);
  Builder e = open_linear_entry(*m, m->name);
  auto tile = [&](int k) { return emit_tile(*m, fmt::format("{}_t{}", m->name, k), vnni, k); };
  Grid g;
  g.R = kRows16;
  g.G = tokens;
  g.full_fn = tile(tokens);
  if (tokens == 4) {
    // A rest of 3 is the 2-token tile and the 1-token one (each token's bits are its own in
    // these tiles, whichever tile computes it): less code to compile than a 3-token tile.
    g.head = 2;
    g.head_fn = tile(2);
    g.rem_fn[1] = tile(1);
  } else {
    for (int r = 1; r < tokens; ++r) g.rem_fn[r] = tile(r);
  }
  emit_r16_entry(e, g, l);
  return true;
}

bool build_r16_lanes(
    const char* gen, const std::string& what, const LinearLayout& l, int max_tokens,
    const std::function<int(kir::Module&, const std::string&, int, bool)>& emit_tile,
    const GeneratorParams& p, kir::Module* m, std::string* err) {
  int rows = 16, tokens = 1, decode_group = max_tokens;
  if (!int_params(p, gen, {{"rows", &rows}, {"tokens", &tokens}, {"decode_group", &decode_group}},
                  err))
    return false;
  if (rows != 16 || tokens < 1 || tokens > max_tokens) {
    *err = fmt::format("generator '{}': tile {}x{} is not one it can emit (rows 16, tokens 1..{})",
                       gen, rows, tokens, max_tokens);
    return false;
  }
  if (decode_group < 1 || decode_group > max_tokens ||
      (tokens != 1 && decode_group != max_tokens)) {
    *err = fmt::format("generator '{}': decode_group {} (1..{}, with tokens 1 only)", gen,
                       decode_group, max_tokens);
    return false;
  }
  m->isa = isa_features(Isa::Avx512Vnni);
  m->comment = fmt::format("generator {}, rows {}, tokens {}: {}", gen, rows, tokens, what);
  Builder e = open_linear_entry(*m, m->name);
  const bool decode = tokens == 1;
  const Grid g =
      token_grid(m->name, kRows16, decode ? decode_group : tokens,
                 [&](const std::string& fn, int k) { return emit_tile(*m, fn, k, decode); });
  emit_r16_entry(e, g, l);
  return true;
}

namespace {
constexpr int kLaneDRegs = 4;  // tokens whose fl(d_a * d_w) stay in registers
}  // namespace

int LaneAccs::slots(int tokens) {
  return (tokens == 1 ? 0 : 8 * tokens) + (tokens <= kLaneDRegs ? 0 : tokens);
}

LaneAccs::LaneAccs(Builder& b, int tokens, V frame, int first)
    : b_(b),
      tokens_(tokens),
      first_(first),
      acc_regs_(tokens == 1),
      d_regs_(tokens <= kLaneDRegs),
      frame_(frame) {
  if (tokens < 1 || tokens > 8) throw std::logic_error("gen: lane accumulators of 1..8 tokens");
}

Mem LaneAccs::slot(int i) const {
  return Mem{frame_, {}, 1, 64 * (first_ + i)};
}

void LaneAccs::zero() {
  V z;
  if (!acc_regs_) {
    z = b_.vec(512, Cls::F, "zero");
    b_.vzero(z);
  }
  for (int t = 0; t < tokens_; ++t)
    for (int l = 0; l < 8; ++l) {
      if (acc_regs_) {
        acc_[l] = b_.vec(512, Cls::F, "acc");
        b_.vzero(acc_[l]);
      } else {
        b_.vstore(slot(8 * t + l), z);
      }
    }
}

void LaneAccs::set_d(int t, V d) {
  if (d_regs_)
    d_[t] = d;
  else
    b_.vstore(slot((acc_regs_ ? 0 : 8 * tokens_) + t), d);
}

void LaneAccs::fma(int t, int l, V isum) {
  V f = b_.vec(512, Cls::F, "fsum");
  b_.vcvt_i32_f32(f, isum);
  V d = d_[t];
  if (!d_regs_) {
    d = b_.vec(512, Cls::F, "d");
    b_.vload(d, slot((acc_regs_ ? 0 : 8 * tokens_) + t));
  }
  if (acc_regs_) {
    b_.vfma(acc_[l], d, f);
    return;
  }
  V ac = b_.vec(512, Cls::F, "acc");
  b_.vload(ac, slot(8 * t + l));
  b_.vfma(ac, d, f);
  b_.vstore(slot(8 * t + l), ac);
}

V LaneAccs::hsum8(int t) {
  V lanes[8];
  for (int l = 0; l < 8; ++l) {
    if (acc_regs_) {
      lanes[l] = acc_[l];
    } else {
      lanes[l] = b_.vec(512, Cls::F, "acc");
      b_.vload(lanes[l], slot(8 * t + l));
    }
  }
  return hsum8_rows(b_, lanes);
}

void LaneAccs::store(const TileArgs& a, const std::function<void(int, V)>& finish) {
  V mask = b_.mask("store"), yt = b_.ptr("yt");
  b_.kfirst_n(mask, a.nrows);
  b_.mov(yt, a.y);
  for (int t = 0; t < tokens_; ++t) {
    if (t > 0) b_.ptr_add(yt, yt, a.ys, 1);
    V o = hsum8(t);
    if (finish) finish(t, o);
    b_.vstore_mk(Mem{yt, {}, 1, 0}, o, mask);
  }
}

void add_scaled_dot(Builder& b, V& isum, bool first, V dot, V S) {
  if (first) {
    isum = b.vec(512, Cls::I, "isum");
    b.vmadd_wd(isum, dot, S);
  } else {
    b.vdpwssd(isum, dot, S);
  }
}

YmmSlots::YmmSlots(Builder& b, int slots) : b_(b), base_(b.ptr("frame")) {
  b.ptr_align(base_, b.stack(32 * slots + 32, "frame_raw"), 32);
}

void YmmSlots::keep(int s, const std::vector<uint32_t>& lanes) const {
  V x = b_.vec(256, Cls::I, "table");
  b_.vconst32(x, lanes);
  b_.vstore((*this)(s), x);
}

V YmmSlots::table(int s) const {
  V x = b_.vec(256, Cls::I, "table");
  b_.vload(x, (*this)(s));
  return x;
}

void add_scaled_dot_avx2(Builder& b, V isum, bool first, V dot, V S, bool vnni) {
  if (first) {
    b.vmadd_wd(isum, dot, S);  // S * dot, exact
  } else if (vnni) {
    b.vdpwssd(isum, dot, S);
  } else {
    b.vmadd_wd(dot, dot, S);
    b.vadd_i32(isum, isum, dot);
  }
}

void fma_lane_acc_avx2(Builder& b, V isum, Mem acc, Mem d) {
  V f = b.vec(256, Cls::F, "fsum"), ac = b.vec(256, Cls::F, "acc"), dv = b.vec(256, Cls::F, "d");
  b.vcvt_i32_f32(f, isum);
  b.vload(ac, acc);
  b.vload(dv, d);
  b.vfma(ac, dv, f);  // acc = fma(fl(d_a * d_w), float(isum), acc)
  b.vstore(acc, ac);
}

void store_lane_accs_avx2(Builder& b, const TileArgs& a, int tokens,
                          const std::function<Mem(int, int, int)>& acc, Mem scratch,
                          const std::function<void(int, int, V)>& finish) {
  V yt = b.ptr("yt");
  b.mov(yt, a.y);
  for (int t = 0; t < tokens; ++t) {
    if (t > 0) b.ptr_add(yt, yt, a.ys, 1);
    V out[2];
    for (int h = 0; h < 2; ++h) {
      V lanes[8];
      for (int l = 0; l < 8; ++l) {
        lanes[l] = b.vec(256, Cls::F, "acc");
        b.vload(lanes[l], acc(h, l, t));
      }
      out[h] = hsum8_rows(b, lanes);
      if (finish) finish(h, t, out[h]);
    }
    store_rows16_avx2(b, yt, a.nrows, out[0], out[1], scratch);
  }
}

void store_rows8_avx2(Builder& b, V y, V count, V v, Mem scratch) {
  b.if_(count, Cmp::GE, 8);
  b.vstore(Mem{y, {}, 1, 0}, v);
  b.end_if();
  b.if_(count, Cmp::LT, 8);
  b.vstore(scratch, v);
  for (int r = 0; r < 7; ++r) {  // count < 8: row 7 is never kept
    b.if_(count, Cmp::GT, r);
    V x = b.vec(128, Cls::F, "y1");
    b.vload_ss(x, Mem{scratch.base, scratch.index, scratch.scale, scratch.disp + 4 * r});
    b.vstore_ss(Mem{y, {}, 1, 4 * r}, x);
    b.end_if();
  }
  b.end_if();
}

void store_rows16_avx2(Builder& b, V y, V nrows, V lo, V hi, Mem scratch) {
  store_rows8_avx2(b, y, nrows, lo, scratch);
  V rest = b.i64("rows_hi"), yh = b.ptr("y_hi");
  b.addi(rest, nrows, -8);
  b.ptr_add(yh, y, b.imm(32, "half_bytes"), 1);
  store_rows8_avx2(b, yh, rest, hi, scratch);
}

void emit_has_min8_avx2(Builder& e, V amin, V bits) {
  V am = e.vec(256, Cls::I, "amin_abs"), t = e.vec(256, Cls::I, "amin_t");
  e.vabs_i8(am, amin);   // |min| keeps its sign bit only for -128
  e.vsll_i32(t, am, 8);  // each byte's sign bit onto its dword's
  e.vor(am, am, t);
  e.vsll_i32(t, am, 16);
  e.vor(am, am, t);
  e.vmovmsk_f(bits, e.view(am, 256, Cls::F));
}

}  // namespace cke::jit::gen
