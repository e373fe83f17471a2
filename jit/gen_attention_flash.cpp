// attention_f16_flash generators (gen_attention_flash.h): one body for both ISA levels.
#include "jit/gen_attention_flash.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <vector>

#include "jit/gen_lanes16.h"
#include "jit/gen_libm_expf.h"
#include "jit/gen_tile.h"

// The helpers start with vzeroupper, as the rope helpers (gen_rope.cpp): they run scalar
// SSE code (libm's expf) right after AVX-512 code, and dirty upper halves would make that
// code many times slower. The kernels that call them require AVX, and every vector register
// is caller-saved across the call anyway.

extern "C" void cke_flash_finish(float* st) {
  asm volatile("vzeroupper");
  st[5] = st[2] == 0.0f ? 0.0f : 1.0f / st[2];
}

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int kMaxHeadDim = 256;  // stack rows and tiles
constexpr int kTile = 64;         // GGML_FA_TILE_Q / _KV (16 query rows per pass here)
constexpr int kAheadCells = 16;   // cells the one-chunk loop prefetches ahead

// 16 fp16 values at m, widened (exactly).
void load_f16(Lanes16& L, V16 d, Mem m) {
  Builder& b = L.b;
  for (int p = 0; p < L.parts; ++p) {
    V h = b.vec(L.parts == 1 ? 256 : 128, Cls::I, "h16");
    Mem mp = m;
    mp.disp += 16 * p;
    b.vload(h, mp);
    b.vcvt_f16_f32(d.part[p], h);
  }
}

// x = f32(f16(x)): the value an fp16 store and load would give (round to nearest even).
void round_f16(Lanes16& L, V16 x) {
  Builder& b = L.b;
  for (int p = 0; p < L.parts; ++p) {
    V h = b.vec(L.parts == 1 ? 256 : 128, Cls::I, "r16");
    b.vcvt_f32_f16(h, x.part[p]);
    b.vcvt_f16_f32(x.part[p], h);
  }
}

V16 bcast_from(Lanes16& L, Mem m, const char* name) {
  V s = L.b.vec(128, Cls::F, name);
  L.b.vload_ss(s, m);
  return L.bcast(s, name);
}

// Every lane = the f32 at m (one register for both ymm halves).
V16 bcast_mem(Lanes16& L, Mem m, const char* name) {
  V16 v;
  v.part[0] = v.part[1] = L.b.vec(L.width(), Cls::F, name);
  L.b.vbcast_f32(v.part[0], m);
  return v;
}

// Every lane = float(i) (an exact small integer).
V16 bcast_int(Lanes16& L, V i, const char* name) {
  V d = L.b.vec(128, Cls::F, name);
  L.b.vcvt_i64_sd(d, i);
  L.b.vcvt_sd_ss(d, d);
  return L.bcast(d, name);
}

// The arguments and byte strides the tiled loop uses.
struct Args {
  V q, kc, vc, out, hd, nh, group, pos0, T, scale, window, h0, h1;
  V hd4, hd2, cell;  // f32 head row, fp16 head row, cache cell
};

// The tiled loop's stack: the widened tile rows are kRowBytes apart, a constant (so a cell's
// row is a displacement from the pass's first) and not a multiple of 4 KiB's sets (rows
// 1024 bytes apart would put a 64-dim tile's lines in 16 of the L1's 64 sets).
constexpr int kRowBytes = kMaxHeadDim * 4 + 64;
// Units (query heads x 16-row groups) that share each widened tile: their states (the
// transposed query and value accumulator, hd x 16 floats each, and the rows' M, S and 1/S)
// take at most this many bytes: 15 units at head_dim 64, 7 at 128, 3 at 256.
constexpr int kUnitBudget = 128 * 1024;

// 16 mask lanes (AVX-512: one mask register; AVX2: a vector per ymm half).
struct Mask16 {
  V part[2];
};
Mask16 cmp16(Lanes16& L, V16 a, V16 x, kir::FCmp p, const char* name) {
  Mask16 m;
  for (int h = 0; h < L.parts; ++h) {
    m.part[h] = L.parts == 1 ? L.b.mask(name) : L.b.vec(L.width(), Cls::F, name);
    L.b.vcmp_f(m.part[h], a.part[h], x.part[h], p);
  }
  return m;
}
void select16(Lanes16& L, V16 d, Mask16 m, V16 a, V16 x) {  // d = m ? a : x
  for (int h = 0; h < L.parts; ++h) L.b.vselect(d.part[h], m.part[h], a.part[h], x.part[h]);
}

// ggml's tiled loop (T >= 64): 16 query rows of one head per unit, one row per lane. The
// units of a pass are up to G heads of one KV group times R consecutive 16-row groups
// (within kUnitBudget); each 64-cell tile of K and V is widened to f32 once for all of them.
// Per unit and tile:
//   scores  per cell a sequential FMA chain over head_dim of K (the widened row, each value an
//           embedded broadcast) times the rows' q (a transposed stack tile), fl(· scale),
//           + mask (0, or -inf from -1 · 2^100 · 2^100 by the cell's distance to each row);
//           16 cells a pass at AVX-512 (16 chains; 8 waited on FMA latency), 4 at AVX2
//   max     lane-wise over the tile's 64 cells in order (maxps = ggml's MAX(max, x))
//   rescale skip = (max == -inf): the row ignores the tile, as ggml; else Mnew = fmaxf(M,
//           max) (maxps(max, M): M is never NaN) and ms = expf(M - Mnew) (libm's, on 16 lanes)
//           where it moved, else 1; VKQ and S times ms
//   exp     e = ggml_v_expf(score - Mnew) (skipped rows: 0); per row the four 16-cell
//           reduce_add trees, lane-wise, summed in double: S = fl(S + sum)
//   value   VKQ[d] = sequential FMA chain over the tile's cells of V[d] · e, 16 dims of
//           accumulators per pass at AVX-512, 4 at AVX2
// out = VKQ · (S == 0 ? 0 : 1/S). A unit's rows past T compute values nobody reads; a unit
// whose rows end before the tile (causal) skips it, as ggml's rows never see it.
void emit_tiled(Lanes16& L, const Args& a) {
  Builder& b = L.b;
  const int nc = L.parts == 1 ? 16 : 4;  // score cells per pass
  const int nd = L.parts == 1 ? 16 : 4;  // value dims per pass
  const V units = b.stack(kUnitBudget, "units"), kf = b.stack(kTile * kRowBytes, "kf"),
          vf = b.stack(kTile * kRowBytes, "vf"), sb = b.stack(kTile * 64, "sb");
  const ExpConsts ec = exp_consts(L);
  const LibmExpConsts lc = libm_exp_consts(L);
  const V16 zero = L.zero("zero16"), ninf = L.splat(0xFF800000u, "ninf16"),
            big = L.splat(0x71800000u, "two100"), one16 = L.splat(0x3F800000u, "one16");
  V16 lane;  // {0, 1, ..., 15}
  lane.part[0] = b.vec(L.width(), Cls::F, "lane");
  lane.part[1] = L.parts == 1 ? lane.part[0] : b.vec(L.width(), Cls::F, "lane_hi");
  for (int p = 0; p < L.parts; ++p) {
    std::vector<uint32_t> v;
    for (int i = 0; i < 16 / L.parts; ++i)
      v.push_back(std::bit_cast<uint32_t>(float(16 / L.parts * p + i)));
    b.vconst32(lane.part[p], v);
  }
  const V16 scale16 = L.bcast(a.scale, "scale16");
  V wm1 = b.i64("wm1");
  b.addi(wm1, a.window, -1);
  const V16 wm1f = bcast_int(L, wm1, "wm1f");

  V zero_i = b.imm(0, "zero_i"), one = b.imm(1, "one"), c64 = b.imm(64, "c64"),
    cnc = b.imm(nc, "cnc"), ctile = b.imm(kTile, "ctile"), crow = b.imm(kRowBytes, "crow"),
    c16 = b.imm(16, "c16");
  // Unit layout: qt [hd][16], vkq [hd][16], then M, S and 1/S of the 16 rows.
  V qtb = b.i64("qtb"), ub = b.i64("unit_bytes"), maxu = b.i64("max_units"), tmp = b.i64("tmp");
  b.muli(qtb, a.hd, 64);
  b.muli(ub, a.hd, 128);
  b.addi(ub, ub, 192);
  b.movi(maxu, kUnitBudget);
  b.div(maxu, maxu, ub);
  V h = b.i64("h"), hk = b.i64("hk"), G = b.i64("G"), R = b.i64("R"), tb = b.i64("tb"),
    tstep = b.i64("tstep"), nrg = b.i64("nrg"), nu = b.i64("nu"), un = b.i64("u_n"), r = b.i64("r"),
    g = b.i64("g"), t0 = b.i64("t0"), rows = b.i64("rows"), base = b.i64("base"),
    lenr = b.i64("lenr"), lenmax = b.i64("lenmax"), j0 = b.i64("j0"), nvalid = b.i64("nvalid"),
    nv = b.i64("nv"), nvc = b.i64("nvc"), u = b.i64("u"), d = b.i64("d"), c = b.i64("c"),
    rr = b.i64("rr"), off = b.i64("off"), hstep = b.i64("hstep");
  V kh = b.ptr("kh"), vh = b.ptr("vh"), kj = b.ptr("kj"), vj = b.ptr("vj"), kr = b.ptr("kr"),
    vr = b.ptr("vr"), up = b.ptr("up"), row = b.ptr("row"), cp = b.ptr("cp"), sp = b.ptr("sp"),
    ac = b.ptr("ac"), kp = b.ptr("kp");

  // The unit u of the pass: its state, its first token t0 and its rows' base position.
  auto unit = [&](V uu) {
    b.mul(off, uu, ub);
    b.ptr_add(up, units, off, 1);
    b.div(r, uu, G);
    b.mul(g, r, G);
    b.sub(g, uu, g);
    b.muli(t0, r, 16);
    b.add(t0, t0, tb);
    b.add(base, a.pos0, t0);
  };

  // row = base + the f32 row of token t0 + rr, head h + g ([T][n_head][head_dim]).
  auto head_row = [&](V row_ptr, V base_ptr) {
    b.add(off, t0, rr);
    b.mul(off, off, a.nh);
    b.add(off, off, h);
    b.add(off, off, g);
    b.mul(off, off, a.hd4);
    b.ptr_add(row_ptr, base_ptr, off, 1);
  };

  b.movi(hstep, 1);
  b.for_(h, a.h0, a.h1, hstep);
  {
    // G heads from h, all in h's KV group and in [h0, h1), at most max_units; R row groups.
    b.div(hk, h, a.group);
    b.mul(G, hk, a.group);
    b.add(G, G, a.group);
    b.sub(G, G, h);
    b.sub(tmp, a.h1, h);
    b.min(G, G, tmp);
    b.min(G, G, maxu);
    b.mov(hstep, G);
    b.div(R, maxu, G);
    b.addi(tmp, a.T, 15);
    b.sari(tmp, tmp, 4);
    b.min(R, R, tmp);
    b.muli(tstep, R, 16);
    b.mul(off, hk, a.hd2);
    b.ptr_add(kh, a.kc, off, 1);
    b.ptr_add(vh, a.vc, off, 1);
    b.for_(tb, zero_i, a.T, tstep);
    {
      b.sub(nrg, a.T, tb);
      b.addi(nrg, nrg, 15);
      b.sari(nrg, nrg, 4);
      b.min(nrg, nrg, R);
      b.mul(nu, nrg, G);
      // Each unit: qt[d][rr] = q of token t0 + rr, head h + g (0 for rows past T); vkq = 0;
      // M = -inf; S = 0.
      b.for_(un, zero_i, nu, one);
      {
        unit(un);
        b.ptr_add(cp, up, qtb, 1);
        b.for_(c, zero_i, qtb, c64);
        L.store(Mem{up, c, 1, 0}, zero);
        L.store(Mem{cp, c, 1, 0}, zero);
        b.end_for();
        b.ptr_add(cp, cp, qtb, 1);
        L.store(Mem{cp, {}, 1, 0}, ninf);
        L.store(Mem{cp, {}, 1, 64}, zero);
        b.sub(rows, a.T, t0);
        b.min(rows, rows, c16);
        b.for_(rr, zero_i, rows, one);
        {
          head_row(row, a.q);
          b.ptr_add(cp, up, rr, 4);
          V x = b.vec(128, Cls::F, "qx");
          b.for_(d, zero_i, a.hd, one);
          b.vload_ss(x, Mem{row, d, 4, 0});
          b.vstore_ss(Mem{cp, {}, 1, 0}, x);
          b.ptr_add(cp, cp, c64, 1);
          b.end_for();
        }
        b.end_for();
      }
      b.end_for();

      // The pass's cells: those of its last row group.
      b.muli(lenmax, nrg, 16);
      b.add(lenmax, lenmax, tb);
      b.min(lenmax, lenmax, a.T);
      b.add(lenmax, lenmax, a.pos0);
      b.for_(j0, zero_i, lenmax, ctile);
      {
        b.sub(nvalid, lenmax, j0);
        b.min(nvalid, nvalid, ctile);
        // K and V of the tile's cells, widened: kf[u][d], vf[u][d] (rows kRowBytes apart).
        b.mul(off, j0, a.cell);
        b.ptr_add(kj, kh, off, 1);
        b.ptr_add(vj, vh, off, 1);
        b.mov(kr, kf);
        b.mov(vr, vf);
        b.for_(u, zero_i, nvalid, one);
        b.for_(c, zero_i, a.hd2, b.imm(32, "c32"));
        {
          V16 x = L.vec("kx");
          load_f16(L, x, Mem{kj, c, 1, 0});
          L.store(Mem{kr, c, 2, 0}, x);
          load_f16(L, x, Mem{vj, c, 1, 0});
          L.store(Mem{vr, c, 2, 0}, x);
        }
        b.end_for();
        b.ptr_add(kj, kj, a.cell, 1);
        b.ptr_add(vj, vj, a.cell, 1);
        b.ptr_add(kr, kr, crow, 1);
        b.ptr_add(vr, vr, crow, 1);
        b.end_for();

        b.for_(un, zero_i, nu, one);
        {
          unit(un);
          b.add(lenr, base, c16);
          b.add(tmp, a.pos0, a.T);
          b.min(lenr, lenr, tmp);
          b.if_(j0, Cmp::LT, lenr);
          {
            b.sub(nv, lenr, j0);
            b.min(nv, nv, ctile);
            V st = b.ptr("st");
            b.ptr_add(st, up, qtb, 2);

            // Scores, nc cells per pass (cells past nv are overwritten with -inf after).
            b.addi(nvc, nv, nc - 1);
            b.andi(nvc, nvc, ~int64_t(nc - 1));
            b.sub(tmp, j0, base);
            V16 dj = L.vec("dj");  // j - base of the current cell, in every lane
            L.copy(dj, bcast_int(L, tmp, "dj0"));
            b.mov(kr, kf);
            b.mov(sp, sb);
            b.for_(u, zero_i, nvc, cnc);
            {
              V16 acc[16];
              for (int k = 0; k < nc; ++k) acc[k] = L.zero("sacc");
              // Pointer bumps only (the value accumulators' loop has the same shape): with
              // up + c the loop ran one register short and reloaded kp every step.
              b.mov(kp, kr);
              b.mov(cp, up);
              b.for_(c, zero_i, a.hd, one);
              {
                V16 qv = L.vec("qv");
                L.load(qv, Mem{cp, {}, 1, 0});
                for (int k = 0; k < nc; ++k) L.fma_b(acc[k], qv, Mem{kp, {}, 1, k * kRowBytes});
                b.addi(kp, kp, 4);
                b.addi(cp, cp, 64);
              }
              b.end_for();
              for (int k = 0; k < nc; ++k) {
                V16 xm = L.vec("xm"), mv = L.vec("mv");
                L.mul(acc[k], acc[k], scale16);
                L.sub(xm, lane, dj);  // r - (j - base): visible when >= 0
                L.min(mv, xm, zero);
                L.mul(mv, mv, big);
                L.mul(mv, mv, big);
                b.if_(a.window, Cmp::GT, 0);  // and base + r - j <= window - 1
                {
                  V16 y = L.vec("y");
                  L.sub(y, wm1f, xm);  // (window - 1) - (base + r - j)
                  L.min(y, y, zero);
                  L.mul(y, y, big);
                  L.mul(y, y, big);
                  L.add(mv, mv, y);
                }
                b.end_if();
                L.add(acc[k], acc[k], mv);
                L.store(Mem{sp, {}, 1, 64 * k}, acc[k]);
                L.add(dj, dj, one16);
              }
              b.addi(sp, sp, 64 * nc);
              b.addi(kr, kr, nc * kRowBytes);
            }
            b.end_for();
            b.for_(u, nv, ctile, one);
            b.muli(off, u, 64);
            L.store(Mem{sb, off, 1, 0}, ninf);
            b.end_for();

            // Tile max; skip, the new max, ms; VKQ and S rescaled.
            V16 mx = L.vec("mx");
            L.copy(mx, ninf);
            b.for_(c, zero_i, b.imm(kTile * 64, "tile_bytes"), c64);
            {
              V16 x = L.vec("sx");
              L.load(x, Mem{sb, c, 1, 0});
              L.max(mx, mx, x);
            }
            b.end_for();
            V16 m_old = L.vec("m_old"), mnew = L.vec("mnew"), ms = L.vec("ms16");
            L.load(m_old, Mem{st, {}, 1, 0});
            const Mask16 skip = cmp16(L, mx, ninf, kir::FCmp::EQ, "skip");
            // fmaxf(M, max): M is never NaN, a NaN max gives M, and a skipped row's -inf
            // max gives M too (its M stays, as ggml's skip leaves it).
            L.max(mnew, mx, m_old);
            const Mask16 moved = cmp16(L, mnew, m_old, kir::FCmp::GT, "moved");
            L.sub(ms, m_old, mnew);
            libm_expf16(L, lc, ms, ms);
            select16(L, ms, moved, ms, one16);
            L.store(Mem{st, {}, 1, 0}, mnew);
            b.mov(ac, up);
            b.ptr_add(ac, ac, qtb, 1);
            b.for_(c, zero_i, qtb, c64);
            {
              V16 x = L.vec("vx");
              L.load(x, Mem{ac, c, 1, 0});
              L.mul(x, x, ms);
              L.store(Mem{ac, c, 1, 0}, x);
            }
            b.end_for();

            // e = ggml_v_expf(score - Mnew), 0 for skipped rows; per 16 cells the reduce_add
            // tree lane-wise, the four sums added in double; S = fl(fl(S · ms) + sum).
            V sum[2][2];  // [part][half]: the rows' sums as doubles
            for (int p = 0; p < L.parts; ++p)
              for (int hh = 0; hh < 2; ++hh) {
                sum[p][hh] = b.vec(L.width(), Cls::F, "sum_d");
                b.vzero(sum[p][hh]);
              }
            for (int grp = 0; grp < kTile / 16; ++grp) {
              for (int k = 0; k < 16; ++k) {
                V16 x = L.vec("ex"), e = L.vec("e");
                L.load(x, Mem{sb, {}, 1, 64 * (16 * grp + k)});
                L.sub(x, x, mnew);
                exp16(L, ec, e, x);
                select16(L, e, skip, zero, e);
                L.store(Mem{sb, {}, 1, 64 * (16 * grp + k)}, e);
              }
              V16 t8[8], t4[4];
              for (int i = 0; i < 8; ++i) {
                V16 x = L.vec("e_hi");
                t8[i] = L.vec("t8");
                L.load(t8[i], Mem{sb, {}, 1, 64 * (16 * grp + i)});
                L.load(x, Mem{sb, {}, 1, 64 * (16 * grp + i + 8)});
                L.add(t8[i], x, t8[i]);
              }
              for (int i = 0; i < 4; ++i) {
                t4[i] = L.vec("t4");
                L.add(t4[i], t8[i + 4], t8[i]);
              }
              V16 s02 = L.vec("s02"), s13 = L.vec("s13");
              L.add(s02, t4[0], t4[2]);
              L.add(s13, t4[1], t4[3]);
              L.add(s02, s02, s13);
              for (int p = 0; p < L.parts; ++p) {
                const int hw = L.width() / 2;
                V lo = b.view(s02.part[p], hw, Cls::F), hi = b.vec(hw, Cls::F, "s_hi");
                b.vextract(hi, s02.part[p], 1);
                V xd = b.vec(L.width(), Cls::F, "s_d");
                b.vcvt_ps_pd(xd, lo);
                b.vadd_pd(sum[p][0], sum[p][0], xd);
                b.vcvt_ps_pd(xd, hi);
                b.vadd_pd(sum[p][1], sum[p][1], xd);
              }
            }
            {
              V16 S = L.vec("S");
              L.load(S, Mem{st, {}, 1, 64});
              L.mul(S, S, ms);
              for (int p = 0; p < L.parts; ++p) {
                const int hw = L.width() / 2;
                V lo = b.view(S.part[p], hw, Cls::F), hi = b.vec(hw, Cls::F, "S_hi");
                b.vextract(hi, S.part[p], 1);
                V xd = b.vec(L.width(), Cls::F, "S_d"), ylo = b.vec(hw, Cls::F, "S_lo2"),
                  yhi = b.vec(hw, Cls::F, "S_hi2");
                b.vcvt_ps_pd(xd, lo);
                b.vadd_pd(xd, xd, sum[p][0]);
                b.vcvt_pd_ps(ylo, xd);
                b.vcvt_ps_pd(xd, hi);
                b.vadd_pd(xd, xd, sum[p][1]);
                b.vcvt_pd_ps(yhi, xd);
                b.vinsert(S.part[p], S.part[p], ylo, 0);
                b.vinsert(S.part[p], S.part[p], yhi, 1);
              }
              L.store(Mem{st, {}, 1, 64}, S);
            }

            // VKQ[d] += V[d] · e over the tile's cells in order, nd dims per pass.
            b.ptr_add(ac, up, qtb, 1);
            b.for_(d, zero_i, a.hd4, b.imm(4 * nd, "cnd"));  // d: byte offset in a vf row
            {
              V16 acc[16];
              for (int k = 0; k < nd; ++k) {
                acc[k] = L.vec("vacc");
                L.load(acc[k], Mem{ac, {}, 1, 64 * k});
              }
              b.ptr_add(vr, vf, d, 1);
              b.mov(sp, sb);
              b.for_(u, zero_i, nv, one);
              {
                V16 e = L.vec("ev");
                L.load(e, Mem{sp, {}, 1, 0});
                for (int k = 0; k < nd; ++k) L.fma_b(acc[k], e, Mem{vr, {}, 1, 4 * k});
                b.addi(vr, vr, kRowBytes);
                b.addi(sp, sp, 64);
              }
              b.end_for();
              for (int k = 0; k < nd; ++k) L.store(Mem{ac, {}, 1, 64 * k}, acc[k]);
              b.addi(ac, ac, 64 * nd);
            }
            b.end_for();
          }
          b.end_if();
        }
        b.end_for();  // units
      }
      b.end_for();  // j0

      // out = VKQ · (S == 0 ? 0 : 1/S), row by row.
      b.for_(un, zero_i, nu, one);
      {
        unit(un);
        V st = b.ptr("st_out");
        b.ptr_add(st, up, qtb, 2);
        {
          V16 S = L.vec("S"), inv = L.vec("inv");
          L.load(S, Mem{st, {}, 1, 64});
          L.div(inv, one16, S);
          select16(L, inv, cmp16(L, S, zero, kir::FCmp::EQ, "s_zero"), zero, inv);
          L.store(Mem{st, {}, 1, 128}, inv);
        }
        b.sub(rows, a.T, t0);
        b.min(rows, rows, c16);
        b.for_(rr, zero_i, rows, one);
        {
          head_row(row, a.out);
          V inv = b.vec(128, Cls::F, "inv"), x = b.vec(128, Cls::F, "ox");
          b.vload_ss(inv, Mem{st, rr, 4, 128});
          b.ptr_add(cp, up, qtb, 1);
          b.ptr_add(cp, cp, rr, 4);
          b.for_(d, zero_i, a.hd, one);
          b.vload_ss(x, Mem{cp, {}, 1, 0});
          b.vmul_ss(x, x, inv);
          b.vstore_ss(Mem{row, d, 4, 0}, x);
          b.ptr_add(cp, cp, c64, 1);
          b.end_for();
        }
        b.end_for();
      }
      b.end_for();
    }
    b.end_for();  // tb
  }
  b.end_for();  // h
}

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}: contract attention.f16_flash.ggml, ggml's FLASH_ATTN_EXT loops: one-chunk\n"
      "(F16 K/V, vec_dot_f16 scores, online softmax with libm's expf on 16 cells at once, fp16\n"
      "value accumulator rounded every cell) for T < 64, 64x64-tiled for T >= 64",
      generator);
  m->helpers.push_back(
      {"cke_flash_finish", reinterpret_cast<const void*>(&cke_flash_finish), {Kind::Ptr}});
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64,
             Kind::I64, Kind::I64, Kind::F32, Kind::I64, Kind::I64, Kind::I64});
  const V q = b.arg(0), kc = b.arg(1), vc = b.arg(2), out = b.arg(3), hd = b.arg(4), nh = b.arg(5),
          nhkv = b.arg(6), nctx = b.arg(7), pos0 = b.arg(8), T = b.arg(9), scale = b.arg(10),
          window = b.arg(11), h0 = b.arg(12), h1 = b.arg(13);

  // Shapes the plan has proved; anything else computes nothing (as the reference). The
  // shapes only the map excludes (head_dim % 64, <= 256) return too.
  V tmp = b.i64("tmp"), group = b.i64("group"), end = b.i64("end");
  ret_if(b, hd, Cmp::LE, 0);
  ret_if(b, hd, Cmp::GT, int64_t(kMaxHeadDim));
  b.andi(tmp, hd, 63);
  ret_if(b, tmp, Cmp::NE, 0);
  ret_if(b, nhkv, Cmp::LE, 0);
  b.div(group, nh, nhkv);
  b.mul(tmp, group, nhkv);
  ret_if(b, tmp, Cmp::NE, nh);
  ret_if(b, pos0, Cmp::LT, 0);
  ret_if(b, T, Cmp::LE, 0);
  b.add(end, pos0, T);
  ret_if(b, end, Cmp::GT, nctx);
  ret_if(b, h0, Cmp::LT, 0);
  ret_if(b, h1, Cmp::GT, nh);
  ret_if(b, h0, Cmp::GE, h1);

  Lanes16 L(b, isa);
  const V qf = b.stack(4 * kMaxHeadDim * 4, "qf"), vkq = b.stack(4 * kMaxHeadDim * 4, "vkq"),
          st = b.stack(4 * 32, "st");
  V ninf = b.vec(128, Cls::F, "ninf"), zero1;  // zero1: the AVX2 scores' mask value
  b.vsplat32(ninf, 0xFF800000u);
  if (L.parts != 1) {
    zero1 = b.vec(128, Cls::F, "zero1");
    b.vzero(zero1);
  }

  // Byte strides: f32 rows (q, out, qf, vkq) and fp16 cache cells.
  V hd4 = b.i64("hd4"), hd2 = b.i64("hd2"), cell = b.i64("cell"), tok = b.i64("tok");
  b.muli(hd4, hd, 4);
  b.muli(hd2, hd, 2);
  b.mul(cell, nhkv, hd2);
  b.mul(tok, nh, hd4);

  V zero = b.imm(0, "zero"), one = b.imm(1, "one"), c64 = b.imm(64, "c64"),
    c128 = b.imm(128, "c128");
  V t = b.i64("t"), h = b.i64("h"), j = b.i64("j"), c = b.i64("c"), p = b.i64("p"),
    len = b.i64("len"), first = b.i64("first"), f = b.i64("f"), hk = b.i64("hk"),
    off = b.i64("off");
  V qt = b.ptr("qt"), ot = b.ptr("ot"), kj = b.ptr("kj"), vj = b.ptr("vj");

  b.if_(T, Cmp::GE, int64_t(kTile));
  emit_tiled(L,
             Args{q, kc, vc, out, hd, nh, group, pos0, T, scale, window, h0, h1, hd4, hd2, cell});
  b.end_if();

  b.if_(T, Cmp::LT, int64_t(kTile));
  // The one-chunk loop's blocks: 16 cells' scores, max before each, ms and vs per head.
  const V sb = b.stack(4 * 64, "scores"), mp = b.stack(4 * 64, "m_before"),
          msb = b.stack(4 * 64, "ms"), vsb = b.stack(4 * 64, "vs"),
          fold = L.parts == 1 ? b.stack(16 * 4 * 64, "fold") : V{};
  const V c16 = b.imm(16, "c16");
  const V16 ninf16 = L.splat(0xFF800000u, "ninf16"), one16 = L.splat(0x3F800000u, "one16");
  const LibmExpConsts ec = libm_exp_consts(L);
  b.for_(t, zero, T, one);
  b.add(p, pos0, t);
  b.addi(len, p, 1);
  window_first(b, first, p, window, f);
  b.mul(off, t, tok);
  b.ptr_add(qt, q, off, 1);
  b.ptr_add(ot, out, off, 1);

  // G heads of one KV group at a time (AVX-512: 4, 2 or 1; AVX2: 2 or 1), sharing every K
  // and V load and widening. Each head's online softmax is ggml's chain through M, S and its
  // value accumulator, cell after cell; of it only the max and the sum S stay sequential
  // here. The cells go in blocks of 16: the scores and the max before each cell first, then
  // every cell's expf at once (the max before a cell decides which expf ggml takes), then S,
  // then the values with each head's accumulator in registers across the block. Head g's
  // query, accumulator and state live at qf + g * kMaxHeadDim * 4, vkq + g * kMaxHeadDim * 4
  // and st + 32 g; per head the arithmetic is the single head's.
  auto emit_heads = [&](int G) {
    // Head g's rows are at fixed offsets from one base each (qf, vkq, st and the block
    // rows): displacements, not a pointer per head, which left the loops short of registers.
    V qg[4], og[4];
    for (int g = 0; g < G; ++g) {
      qg[g] = b.ptr("qg"), og[g] = b.ptr("og");
      b.addi(off, h, g);
      b.mul(off, off, hd4);
      b.ptr_add(qg[g], qt, off, 1);
      b.ptr_add(og[g], ot, off, 1);
    }
    auto row = [](int g) { return g * kMaxHeadDim * 4; };  // head g's qf / vkq row
    // The query in fp16 (Q_q), kept widened; the value accumulator starts at 0.
    const V16 z = L.zero("z");
    b.for_(c, zero, hd4, c64);
    for (int g = 0; g < G; ++g) {
      V16 x = L.vec("x");
      L.load(x, Mem{qg[g], c, 1, 0});
      round_f16(L, x);
      L.store(Mem{qf, c, 1, row(g)}, x);
      L.store(Mem{vkq, c, 1, row(g)}, z);
    }
    b.end_for();
    // Cells [first, len) of KV head h / group, in blocks of 16 (the last one shorter).
    b.div(hk, h, group);
    b.mul(off, hk, hd2);
    b.ptr_add(kj, kc, off, 1);
    b.ptr_add(vj, vc, off, 1);
    b.mul(off, first, cell);
    b.ptr_add(kj, kj, off, 1);
    b.ptr_add(vj, vj, off, 1);
    // Per head, the running max M and the sum S stay in registers; the block's scores,
    // the max before each cell and each cell's ms and vs go through 16-float rows.
    V M[4], S[4];
    for (int g = 0; g < G; ++g) {
      M[g] = b.vec(128, Cls::F, "M");
      S[g] = b.vec(128, Cls::F, "S");
      b.vcopy(M[g], ninf);
      b.vzero(S[g]);
      L.store(Mem{mp, {}, 1, 64 * g}, z);  // tail lanes: defined
    }
    V ahead = b.i64("ahead"), kp = b.ptr("kp"), vp = b.ptr("vp"), vrow = b.ptr("vrow");
    V jb = b.i64("jb"), n = b.i64("n"), moved = b.i64("moved"), c2 = b.i64("c2");
    // AVX-512: each cell's folded dot product goes to a row of `fold` (cell-major, head
    // minor); after the block's cells one reduce_add16 per head gives its 16 scores as one
    // vector, the same additions as 16 reduce_adds (Lanes16::reduce_add16). Rows of cells
    // past n hold zeros or an earlier block's values: their lanes become -inf, as the scalar
    // path leaves them, so they never count as a moved max (no step reads them; a moved max
    // would only take the slower rescale loop). Measured per TinyLlama layer at 2048 cells:
    // 525-585 -> 498-536 us, together with the per-head displacements above.
    const bool vec_scores = L.parts == 1;
    const V fp = vec_scores ? b.ptr("fp") : V{};  // this cell's row of `fold`
    V16 scale16, iota;
    if (vec_scores) {
      scale16 = L.bcast(scale, "scale16");
      iota = L.vec("iota");
      std::vector<uint32_t> lanes;
      for (int l = 0; l < 16; ++l) lanes.push_back(std::bit_cast<uint32_t>(float(l)));
      b.vconst32(iota.part[0], lanes);
      for (int r = 0; r < 16 * G; ++r) L.store(Mem{fold, {}, 1, 64 * r}, z);
    }
    b.muli(ahead, cell, kAheadCells);
    b.for_(jb, first, len, c16);
    b.addi(n, jb, 16);
    b.min(n, n, len);
    b.sub(n, n, jb);

    // 1. The block's scores (vec_dot_f16 of the fp16 query and K row, times the scale, plus
    // the visible cell's mask 0), and before each the max so far: M = s > M ? s : M
    // (maxss), as ggml's `if (s > M)`. Lanes past n stay -inf, so they never move the max.
    if (vec_scores)
      b.mov(fp, fold);
    else
      for (int g = 0; g < G; ++g) L.store(Mem{sb, {}, 1, 64 * g}, ninf16);
    b.for_(j, zero, n, one);
    {
      // A long cache is read from DRAM every token: K and V rows are prefetched
      // kAheadCells cells ahead.
      b.ptr_add(kp, kj, ahead, 1);
      b.ptr_add(vp, vj, ahead, 1);
      b.for_(c, zero, hd2, c64);
      b.vprefetch(Mem{kp, c, 1, 0});
      b.vprefetch(Mem{vp, c, 1, 0});
      b.end_for();
      V16 acc[4][4];
      for (int g = 0; g < G; ++g)
        for (int a = 0; a < 4; ++a) acc[g][a] = L.zero("acc");
      b.for_(c, zero, hd2, c128);  // 64 fp16 per step
      for (int a = 0; a < 4; ++a) {
        V16 kx = L.vec("kx");
        load_f16(L, kx, Mem{kj, c, 1, 32 * a});
        for (int g = 0; g < G; ++g) L.fma_m(acc[g][a], kx, Mem{qf, c, 2, row(g) + 64 * a});
      }
      b.end_for();
      for (int g = 0; g < G; ++g) {
        if (vec_scores) {
          L.store(Mem{fp, {}, 1, 64 * g}, L.fold4(acc[g]));
          continue;
        }
        V s = L.fold4_reduce_add(acc[g]);
        b.vmul_ss(s, s, scale);
        b.vadd_ss(s, s, zero1);  // + the visible cell's mask value
        b.vstore_ss(Mem{mp, j, 4, 64 * g}, M[g]);
        b.vmax_f(M[g], s, M[g]);
        b.vstore_ss(Mem{sb, j, 4, 64 * g}, s);
      }
      b.ptr_add(kj, kj, cell, 1);
      if (vec_scores) b.addi(fp, fp, 64 * G);
    }
    b.end_for();
    if (vec_scores) {
      V live = b.mask("live");  // lanes [0, n)
      b.vcmp_f(live, iota.part[0], bcast_int(L, n, "n16").part[0], kir::FCmp::LT);
      for (int g = 0; g < G; ++g) {
        V16 v[16];
        for (int r = 0; r < 16; ++r) {
          v[r] = L.vec("folded");
          L.load(v[r], Mem{fold, {}, 1, 64 * (G * r + g)});
        }
        V16 sc = L.reduce_add16(v);
        L.mul(sc, sc, scale16);
        L.add(sc, sc, z);  // + the visible cells' mask value
        b.vselect(sc.part[0], live, sc.part[0], ninf16.part[0]);
        L.store(Mem{sb, {}, 1, 64 * g}, sc);
      }
      b.for_(j, zero, n, one);
      for (int g = 0; g < G; ++g) {
        V s = b.vec(128, Cls::F, "s");
        b.vload_ss(s, Mem{sb, j, 4, 64 * g});
        b.vstore_ss(Mem{mp, j, 4, 64 * g}, M[g]);
        b.vmax_f(M[g], s, M[g]);
      }
      b.end_for();
    }

    // 2. Each cell's weights, 16 cells at once: where s > M_before ("up"), the max moved:
    // ms = expf(M_before - s), vs = 1; else ms = 1, vs = expf(s - M_before). libm's expf,
    // bit for bit (libm_expf16). `moved` is nonzero when any head's max moved in the block.
    const bool masks = L.parts == 1;
    V any = masks ? b.mask("any_up") : b.vec(L.width(), Cls::F, "any_up");
    if (masks)
      b.kimm(any, 0);
    else
      b.vzero(any);
    for (int g = 0; g < G; ++g) {
      V16 x = L.vec("s"), m = L.vec("m_before"), up_arg = L.vec("arg_up"), arg = L.vec("arg");
      L.load(x, Mem{sb, {}, 1, 64 * g});
      L.load(m, Mem{mp, {}, 1, 64 * g});
      L.sub(up_arg, m, x);
      L.sub(arg, x, m);
      V16 e = L.vec("e"), ms = L.vec("ms"), vs = L.vec("vs");
      V ups[2];
      for (int p = 0; p < L.parts; ++p) {
        V up = masks ? b.mask("up") : b.vec(L.width(), Cls::F, "up");
        b.vcmp_f(up, x.part[p], m.part[p], kir::FCmp::GT);
        b.vselect(arg.part[p], up, up_arg.part[p], arg.part[p]);
        if (masks)
          b.kor(any, any, up);
        else
          b.vor(any, any, up);
        ups[p] = up;
      }
      libm_expf16(L, ec, e, arg);
      for (int p = 0; p < L.parts; ++p) {
        b.vselect(ms.part[p], ups[p], e.part[p], one16.part[p]);
        b.vselect(vs.part[p], ups[p], one16.part[p], e.part[p]);
      }
      L.store(Mem{msb, {}, 1, 64 * g}, ms);
      L.store(Mem{vsb, {}, 1, 64 * g}, vs);
    }
    if (masks)
      b.kto_i64(moved, any);
    else
      b.vmovmsk_f(moved, any);

    // 3. S = fma(S, ms, vs), cell after cell (ggml's S = S*ms + vs).
    b.for_(j, zero, n, one);
    for (int g = 0; g < G; ++g) {
      V t = b.vec(128, Cls::F, "vs1"), u = b.vec(128, Cls::F, "ms1");
      b.vload_ss(t, Mem{vsb, j, 4, 64 * g});
      b.vload_ss(u, Mem{msb, j, 4, 64 * g});
      b.vfma_ss(t, S[g], u);
      b.vcopy(S[g], t);
    }
    b.end_for();

    // 4. The value accumulators, kChunk floats of each head at a time in registers over the
    // block's cells: VKQ = fp16(fp16(VKQ * ms) + v * vs) (ggml_vec_scale_f16, then
    // ggml_vec_mad_f16). A block where no max moved has ms = 1 everywhere, and fp16(x * 1)
    // is x for the fp16 values VKQ holds: that loop leaves the scale out.
    const int chunk = L.parts == 1 ? 64 : 32, nv = chunk / 16;
    auto values = [&](bool rescale) {
      V cb = b.imm(4 * chunk, "chunk_bytes");
      b.for_(c, zero, hd4, cb);
      V16 acc[4][4];
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < nv; ++k) {
          acc[g][k] = L.vec("vkq");
          L.load(acc[g][k], Mem{vkq, c, 1, row(g) + 64 * k});
        }
      b.sari(c2, c, 1);  // fp16 bytes of the chunk's offset
      b.ptr_add(vrow, vj, c2, 1);
      b.for_(j, zero, n, one);
      {
        V16 v[4];
        for (int k = 0; k < nv; ++k) {
          v[k] = L.vec("v");
          load_f16(L, v[k], Mem{vrow, {}, 1, 32 * k});
        }
        for (int g = 0; g < G; ++g) {
          const V16 vs = bcast_mem(L, Mem{vsb, j, 4, 64 * g}, "vs");
          V16 ms;
          if (rescale) ms = bcast_mem(L, Mem{msb, j, 4, 64 * g}, "ms");
          for (int k = 0; k < nv; ++k) {
            if (rescale) {
              L.mul(acc[g][k], acc[g][k], ms);  // ggml_vec_scale_f16
              round_f16(L, acc[g][k]);
            }
            L.fma(acc[g][k], v[k], vs);  // ggml_vec_mad_f16
            round_f16(L, acc[g][k]);
          }
        }
        b.ptr_add(vrow, vrow, cell, 1);
      }
      b.end_for();
      for (int g = 0; g < G; ++g)
        for (int k = 0; k < nv; ++k) L.store(Mem{vkq, c, 1, row(g) + 64 * k}, acc[g][k]);
      b.end_for();
    };
    b.if_(moved, Cmp::EQ, 0);
    values(false);
    b.end_if();
    b.if_(moved, Cmp::NE, 0);
    values(true);
    b.end_if();
    b.mul(off, n, cell);
    b.ptr_add(vj, vj, off, 1);
    b.end_for();  // jb
    for (int g = 0; g < G; ++g) b.vstore_ss(Mem{st, {}, 1, 32 * g + 8}, S[g]);

    for (int g = 0; g < G; ++g) {
      V stg = b.ptr("stg");
      b.movi(off, 32 * g);
      b.ptr_add(stg, st, off, 1);
      b.call("cke_flash_finish", {stg});
      const V16 inv = bcast_from(L, Mem{stg, {}, 1, 20}, "inv");
      b.for_(c, zero, hd4, c64);
      {
        V16 x = L.vec("x");
        L.load(x, Mem{vkq, c, 1, row(g)});
        L.mul(x, x, inv);
        L.store(Mem{og[g], c, 1, 0}, x);
      }
      b.end_for();
    }
  };

  V hstep = b.i64("hstep"), hn = b.i64("hn"), ga = b.i64("ga"), gb = b.i64("gb");
  b.movi(hstep, 1);
  b.for_(h, h0, h1, hstep);
  {
    // The most heads (AVX-512: 4, else 2, else 1; AVX2: 2, else 1) from h that are in
    // [h0, h1) and in h's KV group.
    b.movi(hstep, 1);
    const int max_group = L.parts == 1 ? 4 : 2;
    for (int G : {2, 4}) {
      if (G > max_group) continue;
      b.addi(hn, h, G - 1);
      b.if_(hn, Cmp::LT, h1);
      b.div(ga, h, group);
      b.div(gb, hn, group);
      b.if_(ga, Cmp::EQ, gb);
      b.movi(hstep, G);
      b.end_if();
      b.end_if();
    }
    for (int G : {1, 2, 4}) {
      if (G > max_group) continue;
      b.if_(hstep, Cmp::EQ, G);
      emit_heads(G);
      b.end_if();
    }
  }
  b.end_for();  // h
  b.end_for();  // t
  b.end_if();
  return true;
}

}  // namespace

bool build_attention_f16_flash_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("attention_f16_flash__avx512", Isa::Avx512, p, m, err);
}
bool build_attention_f16_flash_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("attention_f16_flash__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
