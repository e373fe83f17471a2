// attention_f16_flash generators (gen_attention_flash.h): one body for both ISA levels.
#include "jit/gen_attention_flash.h"

#include <fmt/format.h>

#include <cmath>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

extern "C" void cke_flash_step(float* st) {
  const float s = st[0], m_old = st[1];
  float ms = 1.0f, vs = 1.0f;
  if (s > m_old) {
    st[1] = s;
    ms = std::exp(m_old - s);
  } else {
    vs = std::exp(s - m_old);
  }
  st[2] = std::fma(st[2], ms, vs);
  st[3] = ms;
  st[4] = vs;
}

extern "C" void cke_flash_finish(float* st) {
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

constexpr int kMaxHeadDim = 512;  // the stack rows qf and vkq

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

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}: contract attention.f16_flash.ggml, ggml's one-chunk FLASH_ATTN_EXT loop\n"
      "(F16 K/V, vec_dot_f16 scores, libm expf online softmax through cke_flash_step, fp16\n"
      "value accumulator rounded every cell); T < 64 only",
      generator);
  m->helpers.push_back(
      {"cke_flash_step", reinterpret_cast<const void*>(&cke_flash_step), {Kind::Ptr}});
  m->helpers.push_back(
      {"cke_flash_finish", reinterpret_cast<const void*>(&cke_flash_finish), {Kind::Ptr}});
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64,
             Kind::I64, Kind::I64, Kind::F32, Kind::I64, Kind::I64, Kind::I64});
  const V q = b.arg(0), kc = b.arg(1), vc = b.arg(2), out = b.arg(3), hd = b.arg(4), nh = b.arg(5),
          nhkv = b.arg(6), nctx = b.arg(7), pos0 = b.arg(8), T = b.arg(9), scale = b.arg(10),
          window = b.arg(11), h0 = b.arg(12), h1 = b.arg(13);

  // Shapes the plan has proved; anything else computes nothing (as the reference). The
  // shapes only the map excludes (head_dim % 64, <= 512; T < 64) return too.
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
  ret_if(b, T, Cmp::GE, 64);
  b.add(end, pos0, T);
  ret_if(b, end, Cmp::GT, nctx);
  ret_if(b, h0, Cmp::LT, 0);
  ret_if(b, h1, Cmp::GT, nh);
  ret_if(b, h0, Cmp::GE, h1);

  Lanes16 L(b, isa);
  const V qf = b.stack(kMaxHeadDim * 4, "qf"), vkq = b.stack(kMaxHeadDim * 4, "vkq"),
          st = b.stack(32, "st");
  V ninf = b.vec(128, Cls::F, "ninf"), zero1 = b.vec(128, Cls::F, "zero1");
  b.vsplat32(ninf, 0xFF800000u);
  b.vzero(zero1);

  // Byte strides: f32 rows (q, out, qf, vkq) and fp16 cache cells.
  V hd4 = b.i64("hd4"), hd2 = b.i64("hd2"), cell = b.i64("cell"), tok = b.i64("tok");
  b.muli(hd4, hd, 4);
  b.muli(hd2, hd, 2);
  b.mul(cell, nhkv, hd2);
  b.mul(tok, nh, hd4);

  V zero = b.imm(0, "zero"), one = b.imm(1, "one"), c32 = b.imm(32, "c32"), c64 = b.imm(64, "c64"),
    c128 = b.imm(128, "c128");
  V t = b.i64("t"), h = b.i64("h"), j = b.i64("j"), c = b.i64("c"), p = b.i64("p"),
    len = b.i64("len"), first = b.i64("first"), f = b.i64("f"), hk = b.i64("hk"),
    off = b.i64("off");
  V qt = b.ptr("qt"), ot = b.ptr("ot"), qh = b.ptr("qh"), oh = b.ptr("oh"), kj = b.ptr("kj"),
    vj = b.ptr("vj");

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

  b.for_(h, h0, h1, one);
  {
    b.mul(off, h, hd4);
    b.ptr_add(qh, qt, off, 1);
    b.ptr_add(oh, ot, off, 1);
    // The query in fp16 (Q_q), kept widened; the value accumulator starts at 0.
    const V16 z = L.zero("z");
    b.for_(c, zero, hd4, c64);
    {
      V16 x = L.vec("x");
      L.load(x, Mem{qh, c, 1, 0});
      round_f16(L, x);
      L.store(Mem{qf, c, 1, 0}, x);
      L.store(Mem{vkq, c, 1, 0}, z);
    }
    b.end_for();
    b.vstore_ss(Mem{st, {}, 1, 4}, ninf);   // M
    b.vstore_ss(Mem{st, {}, 1, 8}, zero1);  // S

    // Cells [first, len) of KV head h / group.
    b.div(hk, h, group);
    b.mul(off, hk, hd2);
    b.ptr_add(kj, kc, off, 1);
    b.ptr_add(vj, vc, off, 1);
    b.mul(off, first, cell);
    b.ptr_add(kj, kj, off, 1);
    b.ptr_add(vj, vj, off, 1);
    b.for_(j, first, len, one);
    {
      V16 acc[4];
      for (int a = 0; a < 4; ++a) acc[a] = L.zero("acc");
      b.for_(c, zero, hd2, c128);  // 64 fp16 per step
      for (int a = 0; a < 4; ++a) {
        V16 kx = L.vec("kx");
        load_f16(L, kx, Mem{kj, c, 1, 32 * a});
        L.fma_m(acc[a], kx, Mem{qf, c, 2, 64 * a});
      }
      b.end_for();
      V s = L.fold4_reduce_add(acc);
      b.vmul_ss(s, s, scale);
      b.vadd_ss(s, s, zero1);  // + the visible cell's mask value
      b.vstore_ss(Mem{st, {}, 1, 0}, s);
      b.call("cke_flash_step", {st});
      const V16 ms = bcast_from(L, Mem{st, {}, 1, 12}, "ms");
      const V16 vs = bcast_from(L, Mem{st, {}, 1, 16}, "vs");
      b.for_(c, zero, hd2, c32);  // 16 fp16 per step
      {
        V16 x = L.vec("x"), v = L.vec("v");
        L.load(x, Mem{vkq, c, 2, 0});
        L.mul(x, x, ms);  // ggml_vec_scale_f16 (ms = 1 when the max did not move: exact)
        round_f16(L, x);
        load_f16(L, v, Mem{vj, c, 1, 0});
        L.fma(x, v, vs);  // ggml_vec_mad_f16
        round_f16(L, x);
        L.store(Mem{vkq, c, 2, 0}, x);
      }
      b.end_for();
      b.ptr_add(kj, kj, cell, 1);
      b.ptr_add(vj, vj, cell, 1);
    }
    b.end_for();

    b.call("cke_flash_finish", {st});
    const V16 inv = bcast_from(L, Mem{st, {}, 1, 20}, "inv");
    b.for_(c, zero, hd4, c64);
    {
      V16 x = L.vec("x");
      L.load(x, Mem{vkq, c, 1, 0});
      L.mul(x, x, inv);
      L.store(Mem{oh, c, 1, 0}, x);
    }
    b.end_for();
  }
  b.end_for();  // h
  b.end_for();  // t
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
