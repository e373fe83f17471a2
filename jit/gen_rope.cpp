// rope generators (gen_rope.h): one body for both modes and both ISA levels.
#include "jit/gen_rope.h"

#include "jit/gen_lanes16.h"
#include "jit/gen_op.h"
#include "jit/gen_tile.h"
#include "kernels/ref/ops_ggml_math.h"

// The helpers start with vzeroupper: they run scalar SSE code (the reference's, and libm's
// cosf/sinf), which on these CPUs runs ~25x slower while the AVX-512 caller's upper register
// halves are dirty (measured: 23 us instead of 0.9 us per 64-pair cache). Safe: every vector
// register is caller-saved across a call, and only AVX2 kernels call them.
extern "C" void cke_rope_cache_normal(float* cache, int64_t n_rot, int64_t pos, const float* freq) {
  asm volatile("vzeroupper");
  float cs[cke::jit::gen::kRopeMaxRot];
  cke::ref::rope_cache(cs, n_rot, pos, freq[0], freq[1]);
  float* neg = cache + n_rot;
  for (int64_t k = 0; k < n_rot / 2; ++k) {
    const float c = cs[2 * k], s = cs[2 * k + 1];
    cache[2 * k] = c;
    cache[2 * k + 1] = s;
    neg[2 * k] = -s;
    neg[2 * k + 1] = c;
  }
}

extern "C" void cke_rope_cache_neox(float* cache, int64_t n_rot, int64_t pos, const float* freq) {
  asm volatile("vzeroupper");
  float cs[cke::jit::gen::kRopeMaxRot];
  cke::ref::rope_cache(cs, n_rot, pos, freq[0], freq[1]);
  const int64_t h = n_rot / 2;
  for (int64_t k = 0; k < h; ++k) {
    cache[k] = cs[2 * k];
    cache[h + k] = cs[2 * k + 1];
    cache[2 * h + k] = -cs[2 * k + 1];
  }
}

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr int64_t kCacheBytes = 2 * kRopeMaxRot * 4;  // normal: 2 n_rot floats; neox: 1.5

bool build(const char* generator, Isa isa, bool neox, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  const char* what =
      neox ? "contract rope.neox.f32.ggml (pairs (x[k], x[k + n_rot/2]); ggml's cos/sin cache\n"
             "by the reference's scalar code; y0 = fma(x0, c, fl(x1 * -s)), y1 = fma(x0, s, "
             "fl(x1 * c)))"
           : "contract rope.normal.f32.ggml (pairs (x[2k], x[2k+1]); ggml's cos/sin cache\n"
             "by the reference's scalar code; y0 = fma(x0, c, fl(x1 * -s)), y1 = fma(x0, s, "
             "fl(x1 * c)))";
  if (!op_prologue(params, generator, isa, what, m, err)) return false;
  const char* helper = neox ? "cke_rope_cache_neox" : "cke_rope_cache_normal";
  m->helpers.push_back({helper,
                        neox ? reinterpret_cast<const void*>(&cke_rope_cache_neox)
                             : reinterpret_cast<const void*>(&cke_rope_cache_normal),
                        {Kind::Ptr, Kind::I64, Kind::I64, Kind::Ptr}});
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::F32, Kind::F32,
             Kind::I64, Kind::I64});
  const V x = b.arg(0), head_dim = b.arg(1), n_heads = b.arg(2), T = b.arg(3), pos0 = b.arg(4),
          n_rot = b.arg(5), freq_base = b.arg(6), freq_scale = b.arg(7), t0 = b.arg(8),
          t1 = b.arg(9);
  // As the reference: nothing valid to rotate. Then the shapes the maps admit.
  ret_if(b, n_rot, Cmp::LE, 0);
  ret_if(b, n_rot, Cmp::GT, head_dim);
  ret_if(b, n_rot, Cmp::GT, kRopeMaxRot);
  ret_unless_multiple(b, n_rot, neox ? 32 : 16);
  ret_if(b, n_heads, Cmp::LE, 0);
  {  // tokens [t0, t1): x on t0 rows, their positions from pos0 + t0
    V row = b.i64("row_floats");
    b.mul(row, head_dim, n_heads);
    enter_range(b, T, t0, t1, row, {x});
    b.add(pos0, pos0, t0);
  }

  V freq = b.stack(16, "freq"), cache = b.stack(kCacheBytes, "cache");
  b.vstore_ss(Mem{freq, {}, 1, 0}, freq_base);
  b.vstore_ss(Mem{freq, {}, 1, 4}, freq_scale);
  // normal: A = {c, s}, B = {-s, c} pairs, n_rot floats each; neox: C, S, -S, n_rot / 2 each.
  V span = b.i64("span"), head_bytes = b.i64("head_bytes"), token_bytes = b.i64("token_bytes");
  b.muli(span, n_rot, neox ? 2 : 4);  // bytes of the vector loop: the rotated part (neox: half)
  b.muli(head_bytes, head_dim, 4);
  b.mul(token_bytes, head_bytes, n_heads);
  V c1 = b.ptr("cache1"), c2, hi;  // hi: neox's partner, n_rot / 2 floats on
  b.ptr_add(c1, cache, span, 1);
  if (neox) {
    c2 = b.ptr("cache2");
    hi = b.ptr("x_hi");
    b.ptr_add(c2, c1, span, 1);
  }

  Lanes16 L(b, isa);
  auto permil = [&](V16 d, V16 a, int imm) {
    for (int p = 0; p < L.parts; ++p) b.vpermil_f(d.part[p], a.part[p], imm);
  };
  V t = b.i64("t"), h = b.i64("h"), off = b.i64("off"), pos = b.i64("pos");
  V row = b.ptr("row"), head = b.ptr("head");
  V zero = b.imm(0, "zero"), one = b.imm(1, "one"), group = b.imm(64, "group_bytes");
  b.mov(row, x);
  b.for_(t, zero, T, one);
  {
    b.add(pos, pos0, t);
    b.call(helper, {cache, n_rot, pos, freq});
    b.for_(off, zero, span, group);
    {
      if (!neox) {
        V16 A = L.vec("cs"), B = L.vec("nsc");
        L.load(A, Mem{cache, off, 1, 0});
        L.load(B, Mem{c1, off, 1, 0});
        b.mov(head, row);
        b.for_(h, zero, n_heads, one);
        {
          V16 v = L.vec("v"), ev = L.vec("x0"), od = L.vec("x1");
          L.load(v, Mem{head, off, 1, 0});
          permil(ev, v, 0xA0);  // x0 of each pair in both of its lanes
          permil(od, v, 0xF5);  // x1
          L.mul(od, od, B);     // {fl(x1 * -s), fl(x1 * c)}
          L.fma(od, ev, A);     // {fma(x0, c, .), fma(x0, s, .)}
          L.store(Mem{head, off, 1, 0}, od);
          b.ptr_add(head, head, head_bytes, 1);
        }
        b.end_for();
      } else {
        V16 C = L.vec("cos"), S = L.vec("sin"), NS = L.vec("nsin");
        L.load(C, Mem{cache, off, 1, 0});
        L.load(S, Mem{c1, off, 1, 0});
        L.load(NS, Mem{c2, off, 1, 0});
        b.mov(head, row);
        b.for_(h, zero, n_heads, one);
        {
          V16 x0 = L.vec("x0"), x1 = L.vec("x1"), y0 = L.vec("y0"), y1 = L.vec("y1");
          b.ptr_add(hi, head, span, 1);
          L.load(x0, Mem{head, off, 1, 0});
          L.load(x1, Mem{hi, off, 1, 0});
          L.mul(y0, x1, NS);  // fl(x1 * -s)
          L.mul(y1, x1, C);   // fl(x1 * c)
          L.fma(y0, x0, C);
          L.fma(y1, x0, S);
          L.store(Mem{head, off, 1, 0}, y0);
          L.store(Mem{hi, off, 1, 0}, y1);
          b.ptr_add(head, head, head_bytes, 1);
        }
        b.end_for();
      }
    }
    b.end_for();
    b.ptr_add(row, row, token_bytes, 1);
  }
  b.end_for();
  return true;
}

}  // namespace

bool build_rope_normal_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rope_normal_f32__avx512", Isa::Avx512, false, p, m, err);
}
bool build_rope_normal_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rope_normal_f32__avx2", Isa::Avx2, false, p, m, err);
}
bool build_rope_neox_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rope_neox_f32__avx512", Isa::Avx512, true, p, m, err);
}
bool build_rope_neox_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rope_neox_f32__avx2", Isa::Avx2, true, p, m, err);
}

}  // namespace cke::jit::gen
