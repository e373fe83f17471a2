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

// The tiled loop's per-row scalars, 16 rows (lanes) at a time: st = {M[16], Mnew[16],
// ms[16], S[16], inv[16], skip[16]}; e = the tile's 64 x 16 weights (cell-major).
// rescale: on entry Mnew holds the tile max; a row whose tile max is -inf skips the tile (as
// ggml: nothing changes), else Mnew = fmaxf(M, max) and ms = expf(M - Mnew) if it moved.
extern "C" void cke_flash_rescale16(float* st) {
  asm volatile("vzeroupper");
  for (int r = 0; r < 16; ++r) {
    const float m_old = st[r], tile_max = st[16 + r];
    const bool skip = tile_max == -INFINITY;
    const float m_new = skip ? m_old : std::fmax(m_old, tile_max);
    st[32 + r] = !skip && m_new > m_old ? std::exp(m_old - m_new) : 1.0f;
    st[80 + r] = skip ? 1.0f : 0.0f;
    st[r] = st[16 + r] = m_new;
  }
}
// rowsum: S = fl(S + double sum of the four 16-cell groups, each by the reduce_add tree);
// a skipped row's weights become 0 (its V products then add nothing).
extern "C" void cke_flash_rowsum16(float* st, float* e) {
  asm volatile("vzeroupper");
  for (int r = 0; r < 16; ++r) {
    if (st[80 + r] != 0.0f) {
      for (int u = 0; u < 64; ++u) e[16 * u + r] = 0.0f;
      continue;
    }
    double sum = 0;
    for (int g = 0; g < 64; g += 16) {
      float t8[8], t4[4];
      for (int i = 0; i < 8; ++i) t8[i] = e[16 * (g + i + 8) + r] + e[16 * (g + i) + r];
      for (int i = 0; i < 4; ++i) t4[i] = t8[i + 4] + t8[i];
      sum += static_cast<double>((t4[0] + t4[2]) + (t4[1] + t4[3]));
    }
    st[48 + r] = static_cast<float>(static_cast<double>(st[48 + r]) + sum);
  }
}
extern "C" void cke_flash_inv16(float* st) {
  asm volatile("vzeroupper");
  for (int r = 0; r < 16; ++r) st[64 + r] = st[48 + r] == 0.0f ? 0.0f : 1.0f / st[48 + r];
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

// ggml's tiled loop (T >= 64), 16 query rows of one head per pass, one row per lane:
//   scores  per cell a sequential FMA chain over head_dim of K (widened into a stack tile,
//           broadcast) times the rows' q (a transposed stack tile), fl(· scale), + mask
//           (0, or -inf from -1 · 2^100 · 2^100 by the cell's distance to each row)
//   max     lane-wise over the tile's 64 cells in order (maxps = ggml's MAX(max, x)), then
//           fmaxf(M, max) as maxps(max, M)
//   rescale ms = expf(M - Mnew) where the max moved (libm, cke_flash_rescale16)
//   exp     ggml_v_expf(score - Mnew) in place; per row the four 16-cell reduce_add trees,
//           S = fl(S + double sum) (cke_flash_rowsum16)
//   value   VKQ[d] = sequential FMA chain over the tile's cells of V[d] · e
// A row whose tile max is -inf skips the tile, as in ggml (its weights are zeroed). Padded
// lanes (rows past T) compute values nobody reads.
void emit_tiled(Lanes16& L, const Args& a) {
  Builder& b = L.b;
  const V qt = b.stack(kMaxHeadDim * 64, "qt"), vkq = b.stack(kMaxHeadDim * 64, "vkq_t"),
          kf = b.stack(kTile * kMaxHeadDim * 4, "kf"), vf = b.stack(kTile * kMaxHeadDim * 4, "vf"),
          sb = b.stack(kTile * 64, "sb"), st = b.stack(6 * 64, "st16");
  const ExpConsts ec = exp_consts(L);
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

  V zero_i = b.imm(0, "zero_i"), one = b.imm(1, "one"), c4 = b.imm(4, "c4"), c16 = b.imm(16, "c16"),
    c32 = b.imm(32, "c32"), c64 = b.imm(64, "c64"), c256 = b.imm(256, "c256"),
    c512 = b.imm(512, "c512"), c32b = b.imm(kTile * 64, "tile_bytes");
  V h = b.i64("h"), hk = b.i64("hk"), t0 = b.i64("t0"), rows = b.i64("rows"), base = b.i64("base"),
    lenmax = b.i64("lenmax"), j0 = b.i64("j0"), nvalid = b.i64("nvalid"), nv4 = b.i64("nv4"),
    u = b.i64("u"), d = b.i64("d"), c = b.i64("c"), r = b.i64("r"), off = b.i64("off"),
    tmp = b.i64("tmp"), qtb = b.i64("qtb");
  V kh = b.ptr("kh"), vh = b.ptr("vh"), kj = b.ptr("kj"), vj = b.ptr("vj"), kr = b.ptr("kr"),
    vr = b.ptr("vr"), row = b.ptr("row"), cp = b.ptr("cp"), sp = b.ptr("sp"), ac = b.ptr("ac"),
    k1 = b.ptr("k1"), k2 = b.ptr("k2"), k3 = b.ptr("k3");
  b.muli(qtb, a.hd, 64);  // bytes of a [head_dim][16] stack tile

  b.for_(h, a.h0, a.h1, one);
  b.div(hk, h, a.group);
  b.mul(off, hk, a.hd2);
  b.ptr_add(kh, a.kc, off, 1);
  b.ptr_add(vh, a.vc, off, 1);
  b.for_(t0, zero_i, a.T, c16);
  {
    b.sub(rows, a.T, t0);
    b.min(rows, rows, c16);
    b.add(base, a.pos0, t0);
    b.add(lenmax, base, rows);
    // qt[d][r] = q of token t0 + r, head h (0 for padded rows); vkq = 0; M = -inf; S = 0.
    b.for_(c, zero_i, qtb, c64);
    L.store(Mem{qt, c, 1, 0}, zero);
    L.store(Mem{vkq, c, 1, 0}, zero);
    b.end_for();
    L.store(Mem{st, {}, 1, 0}, ninf);
    L.store(Mem{st, {}, 1, 192}, zero);
    b.for_(r, zero_i, rows, one);
    {
      b.add(off, t0, r);
      b.mul(off, off, a.nh);
      b.add(off, off, h);
      b.mul(off, off, a.hd4);
      b.ptr_add(row, a.q, off, 1);
      b.ptr_add(cp, qt, r, 4);
      V x = b.vec(128, Cls::F, "qx");
      b.for_(d, zero_i, a.hd, one);
      b.vload_ss(x, Mem{row, d, 4, 0});
      b.vstore_ss(Mem{cp, {}, 1, 0}, x);
      b.ptr_add(cp, cp, c64, 1);
      b.end_for();
    }
    b.end_for();

    b.for_(j0, zero_i, lenmax, b.imm(kTile, "ctile"));
    {
      b.sub(nvalid, lenmax, j0);
      b.movi(tmp, kTile);
      b.min(nvalid, nvalid, tmp);
      // K and V of the tile's cells, widened: kf[u][d], vf[u][d].
      b.mul(off, j0, a.cell);
      b.ptr_add(kj, kh, off, 1);
      b.ptr_add(vj, vh, off, 1);
      b.mov(kr, kf);
      b.mov(vr, vf);
      b.for_(u, zero_i, nvalid, one);
      b.for_(c, zero_i, a.hd2, c32);
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
      b.ptr_add(kr, kr, a.hd4, 1);
      b.ptr_add(vr, vr, a.hd4, 1);
      b.end_for();

      // Scores, four cells per pass (cells past nvalid are overwritten with -inf after).
      b.addi(nv4, nvalid, 3);
      b.andi(nv4, nv4, ~int64_t(3));
      b.sub(tmp, j0, base);
      V16 dj = L.vec("dj");  // j - base of the current cell, in every lane
      L.copy(dj, bcast_int(L, tmp, "dj0"));
      b.mov(kr, kf);
      b.mov(sp, sb);
      b.for_(u, zero_i, nv4, c4);
      {
        b.ptr_add(k1, kr, a.hd4, 1);
        b.ptr_add(k2, k1, a.hd4, 1);
        b.ptr_add(k3, k2, a.hd4, 1);
        const V kk[4] = {kr, k1, k2, k3};
        V16 acc[4];
        for (int k = 0; k < 4; ++k) acc[k] = L.zero("sacc");
        b.mov(cp, qt);
        b.for_(d, zero_i, a.hd, one);
        {
          V16 qv = L.vec("qv");
          L.load(qv, Mem{cp, {}, 1, 0});
          for (int k = 0; k < 4; ++k) L.fma(acc[k], bcast_mem(L, Mem{kk[k], d, 4, 0}, "kb"), qv);
          b.ptr_add(cp, cp, c64, 1);
        }
        b.end_for();
        for (int k = 0; k < 4; ++k) {
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
        b.ptr_add(sp, sp, c256, 1);
        b.ptr_add(kr, k3, a.hd4, 1);
      }
      b.end_for();
      b.for_(u, nvalid, b.imm(kTile, "ctile2"), one);
      b.muli(off, u, 64);
      L.store(Mem{sb, off, 1, 0}, ninf);
      b.end_for();

      // Tile max, the new max, the rescale of VKQ and S.
      V16 mx = L.vec("mx");
      L.copy(mx, ninf);
      b.for_(c, zero_i, c32b, c64);
      {
        V16 x = L.vec("sx");
        L.load(x, Mem{sb, c, 1, 0});
        L.max(mx, mx, x);
      }
      b.end_for();
      L.store(Mem{st, {}, 1, 64}, mx);
      b.call("cke_flash_rescale16", {st});  // skip flags, Mnew, ms
      V16 ms = L.vec("ms16");
      L.load(ms, Mem{st, {}, 1, 128});
      b.for_(c, zero_i, qtb, c64);
      {
        V16 x = L.vec("vx");
        L.load(x, Mem{vkq, c, 1, 0});
        L.mul(x, x, ms);
        L.store(Mem{vkq, c, 1, 0}, x);
      }
      b.end_for();
      {
        V16 x = L.vec("sx");
        L.load(x, Mem{st, {}, 1, 192});
        L.mul(x, x, ms);
        L.store(Mem{st, {}, 1, 192}, x);
      }
      V16 mnew = L.vec("mnew");
      L.load(mnew, Mem{st, {}, 1, 64});

      // e = ggml_v_expf(score - Mnew) in place; the per-row sums (16-cell reduce_add trees,
      // a double sum) and the zeroing of skipped rows in cke_flash_rowsum16.
      b.for_(c, zero_i, c32b, c64);
      {
        V16 x = L.vec("ex"), e = L.vec("e");
        L.load(x, Mem{sb, c, 1, 0});
        L.sub(x, x, mnew);
        exp16(L, ec, e, x);
        L.store(Mem{sb, c, 1, 0}, e);
      }
      b.end_for();
      b.call("cke_flash_rowsum16", {st, sb});

      // VKQ[d] += V[d] · e over the tile's cells in order, 8 dims per pass.
      b.mov(ac, vkq);
      b.for_(d, zero_i, a.hd4, c32);  // d: byte offset of 8 dims in a vf row
      {
        V16 acc[8];
        for (int k = 0; k < 8; ++k) {
          acc[k] = L.vec("vacc");
          L.load(acc[k], Mem{ac, {}, 1, 64 * k});
        }
        b.ptr_add(vr, vf, d, 1);
        b.mov(sp, sb);
        b.for_(u, zero_i, nvalid, one);
        {
          V16 e = L.vec("ev");
          L.load(e, Mem{sp, {}, 1, 0});
          for (int k = 0; k < 8; ++k) L.fma(acc[k], bcast_mem(L, Mem{vr, {}, 1, 4 * k}, "vb"), e);
          b.ptr_add(vr, vr, a.hd4, 1);
          b.ptr_add(sp, sp, c64, 1);
        }
        b.end_for();
        for (int k = 0; k < 8; ++k) L.store(Mem{ac, {}, 1, 64 * k}, acc[k]);
        b.ptr_add(ac, ac, c512, 1);
      }
      b.end_for();
    }
    b.end_for();  // j0

    // out = VKQ · (S == 0 ? 0 : 1/S), row by row.
    b.call("cke_flash_inv16", {st});
    b.for_(r, zero_i, rows, one);
    {
      b.add(off, t0, r);
      b.mul(off, off, a.nh);
      b.add(off, off, h);
      b.mul(off, off, a.hd4);
      b.ptr_add(row, a.out, off, 1);
      V inv = b.vec(128, Cls::F, "inv"), x = b.vec(128, Cls::F, "ox");
      b.vload_ss(inv, Mem{st, r, 4, 256});
      b.ptr_add(cp, vkq, r, 4);
      b.for_(d, zero_i, a.hd, one);
      b.vload_ss(x, Mem{cp, {}, 1, 0});
      b.vmul_ss(x, x, inv);
      b.vstore_ss(Mem{row, d, 4, 0}, x);
      b.ptr_add(cp, cp, c64, 1);
      b.end_for();
    }
    b.end_for();
  }
  b.end_for();  // t0
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
  m->helpers.push_back(
      {"cke_flash_rescale16", reinterpret_cast<const void*>(&cke_flash_rescale16), {Kind::Ptr}});
  m->helpers.push_back({"cke_flash_rowsum16",
                        reinterpret_cast<const void*>(&cke_flash_rowsum16),
                        {Kind::Ptr, Kind::Ptr}});
  m->helpers.push_back(
      {"cke_flash_inv16", reinterpret_cast<const void*>(&cke_flash_inv16), {Kind::Ptr}});
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
  b.movi(first, 0);
  b.if_(window, Cmp::GT, 0);
  b.sub(f, p, window);
  b.addi(f, f, 1);
  b.if_(f, Cmp::GT, 0);
  b.mov(first, f);
  b.end_if();
  b.end_if();
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
