#include "jit/gen_tile.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace cke::jit::gen {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::V;

std::vector<std::string> isa_features(Isa isa) {
  switch (isa) {
    case Isa::Avx2:
      return {"avx2", "fma", "f16c"};
    case Isa::Avx512:
      return {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl"};
    case Isa::Avx512Vnni:
      return {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512vnni"};
    case Isa::Avx512Bf16:
      return {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512bf16"};
  }
  return {};
}

const char* isa_suffix(Isa isa) {
  switch (isa) {
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx512Vnni:
      return "avx512vnni";
    case Isa::Avx512Bf16:
      return "avx512bf16";
  }
  return "?";
}

Builder open_tile(kir::Module& m, const std::string& name) {
  return Builder(
      m, name,
      {Kind::Ptr, Kind::I64, Kind::I64, Kind::Ptr, Kind::I64, Kind::Ptr, Kind::I64, Kind::I64});
}

Builder open_linear_entry(kir::Module& m, const std::string& name) {
  return Builder(
      m, name,
      {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64, Kind::I64});
}

V hsum8(Builder& b, V acc) {
  using kir::Cls;
  V hi = b.vec(128, Cls::F, "hi"), s = b.vec(128, Cls::F, "s"), t = b.vec(128, Cls::F, "t");
  V out = b.vec(128, Cls::F, "h");
  b.vextract(hi, acc, 1);
  b.vadd_f(s, b.view(acc, 128, Cls::F), hi);
  b.vpermil_f(t, s, 0xEE);
  b.vadd_f(s, s, t);
  b.vmovshdup(t, s);
  b.vadd_f(out, s, t);
  return out;
}

V hsum8_rows(Builder& b, const V acc[8]) {
  using kir::Cls;
  const int bits = b.type(acc[0]).bits;
  V s04 = b.vec(bits, Cls::F, "s04"), s26 = b.vec(bits, Cls::F, "s26"),
    s15 = b.vec(bits, Cls::F, "s15"), s37 = b.vec(bits, Cls::F, "s37");
  b.vadd_f(s04, acc[0], acc[4]);
  b.vadd_f(s26, acc[2], acc[6]);
  b.vadd_f(s15, acc[1], acc[5]);
  b.vadd_f(s37, acc[3], acc[7]);
  b.vadd_f(s04, s04, s26);
  b.vadd_f(s15, s15, s37);
  b.vadd_f(s04, s04, s15);
  return s04;
}

TileArgs begin_tile(Builder& b) {
  TileArgs t;
  t.w = b.arg(0);
  t.rb = b.arg(1);
  t.nrows = b.arg(2);
  t.a = b.arg(3);
  t.as = b.arg(4);
  t.y = b.arg(5);
  t.ys = b.arg(6);
  t.n = b.arg(7);
  return t;
}

void ret_if(Builder& b, V a, kir::Cmp c, V x) {
  b.if_(a, c, x);
  b.ret();
  b.end_if();
}
void ret_if(Builder& b, V a, kir::Cmp c, int64_t x) {
  b.if_(a, c, x);
  b.ret();
  b.end_if();
}

void window_first(Builder& b, V first, V p, V window, V f) {
  b.movi(first, 0);
  b.if_(window, kir::Cmp::GT, 0);
  b.sub(f, p, window);
  b.addi(f, f, 1);
  b.if_(f, kir::Cmp::GT, 0);
  b.mov(first, f);
  b.end_if();
  b.end_if();
}

std::vector<V> tile_rows(Builder& b, const TileArgs& t, int rows) {
  std::vector<V> r{t.w};
  if (rows == 1) return r;
  V last = b.i64("last"), i = b.i64("i"), off = b.i64("roff");
  b.addi(last, t.nrows, -1);
  for (int k = 1; k < rows; ++k) {
    V p = b.ptr("row");
    b.movi(i, k);
    b.min(i, i, last);
    b.mul(off, i, t.rb);
    b.ptr_add(p, t.w, off, 1);
    r.push_back(p);
  }
  return r;
}

std::vector<V> tile_tokens(Builder& b, const TileArgs& t, int tokens) {
  std::vector<V> x{t.a};
  for (int k = 1; k < tokens; ++k) {
    V p = b.ptr("xt");
    b.ptr_add(p, x.back(), t.as, 1);
    x.push_back(p);
  }
  return x;
}

RowPrefetch row_prefetch(Builder& b, const TileArgs& t, int rows) {
  // dist = rows * rb, doubled while below kPrefetchMin (at most 3 times: no division per tile).
  RowPrefetch pf{b.i64("pf_dist")};
  b.muli(pf.dist, t.rb, rows);
  for (int i = 0; i < 3; ++i) {
    b.if_(pf.dist, kir::Cmp::LT, kPrefetchMin);
    b.add(pf.dist, pf.dist, pf.dist);
    b.end_if();
  }
  return pf;
}

void prefetch_rows(Builder& b, const std::vector<V>& rows, V off, int bytes,
                   const RowPrefetch& pf) {
  V at = b.i64("pf_at");
  b.add(at, off, pf.dist);
  for (const V& r : rows)
    for (int l = 0; l < std::max(bytes, 1); l += 64) b.vprefetch(kir::Mem{r, at, 1, l});
}

kir::Mem TokenRows::at(int t, int32_t disp) const {
  kir::Mem m{base, {}, 1, disp};
  if (t == 1 || t == 2) {
    m.index = stride;
    m.scale = uint8_t(t);
  } else if (t == 3) {
    m.index = stride3;
  } else if (t != 0) {
    throw std::logic_error("kir: a token group has at most 4 tokens");
  }
  return m;
}

TokenRows token_rows(Builder& b, V base, V stride, int tokens) {
  TokenRows r;
  r.base = b.ptr("act");
  b.mov(r.base, base);
  r.stride = stride;
  if (tokens > 3) {
    r.stride3 = b.i64("stride3");
    b.muli(r.stride3, stride, 3);
  }
  return r;
}

TokenRows8 token_rows8(Builder& b, V base, V stride, int tokens) {
  TokenRows8 r;
  r.tokens = tokens;
  r.tr[0] = token_rows(b, base, stride, std::min(tokens, 4));
  if (tokens > 4) {
    V a4 = b.ptr("act4"), s4 = b.i64("s4");
    b.muli(s4, stride, 4);
    b.ptr_add(a4, base, s4, 1);
    r.tr[1] = token_rows(b, a4, stride, tokens - 4);
  }
  return r;
}

void TokenRows8::advance(Builder& b, int bytes) const {
  b.addi(tr[0].base, tr[0].base, bytes);
  if (tokens > 4) b.addi(tr[1].base, tr[1].base, bytes);
}

void emit_grid(Builder& e, const Grid& g, V w_n0, V rb, V n0, V n1, V act, V as, V ntok, V y_n0,
               V ys, V extent) {
  V n = e.i64("n"), rows = e.i64("rows"), left = e.i64("left"), step = e.imm(g.R, "R");
  V wn = e.ptr("wn"), yn = e.ptr("yn");
  V full = e.i64("full"), rem = e.i64("rem"), t = e.i64("t"), gs = e.imm(g.G, "G");
  if (g.G < 1 || g.G > 8) throw std::logic_error("kir: token groups of 1..8 tokens");
  V at = e.ptr("at"), yt = e.ptr("yt"), tmp = e.i64("tmp");
  e.div(full, ntok, gs);  // whole groups (G need not be a power of two)
  e.mul(full, full, gs);
  bool any_rem = g.head_fn >= 0;
  for (int r = 1; r < g.G; ++r) any_rem |= g.rem_fn[r] >= 0;
  if (any_rem) e.sub(rem, ntok, full);
  e.mov(wn, w_n0);
  e.mov(yn, y_n0);
  e.for_(n, n0, n1, step);
  {
    e.sub(left, n1, n);
    e.min(rows, step, left);
    e.for_(t, e.imm(0, "zero"), full, gs);
    {
      e.mul(tmp, t, as);
      e.ptr_add(at, act, tmp, 1);
      e.mul(tmp, t, ys);
      e.ptr_add(yt, yn, tmp, 1);
      e.call(g.full_fn, {wn, rb, rows, at, as, yt, ys, extent});
    }
    e.end_for();
    if (any_rem) {
      e.mul(tmp, full, as);
      e.ptr_add(at, act, tmp, 1);
      e.mul(tmp, full, ys);
      e.ptr_add(yt, yn, tmp, 1);
      V left_t = rem;  // the rest's tokens after the head
      if (g.head_fn >= 0) {
        left_t = e.i64("rem_left");
        e.mov(left_t, rem);
        e.if_(rem, Cmp::GE, g.head);
        e.call(g.head_fn, {wn, rb, rows, at, as, yt, ys, extent});
        e.addi(left_t, left_t, -g.head);
        e.muli(tmp, as, g.head);
        e.ptr_add(at, at, tmp, 1);
        e.muli(tmp, ys, g.head);
        e.ptr_add(yt, yt, tmp, 1);
        e.end_if();
      }
      for (int r = 1; r < g.G; ++r) {
        if (g.rem_fn[r] < 0) continue;
        e.if_(left_t, Cmp::EQ, r);
        e.call(g.rem_fn[r], {wn, rb, rows, at, as, yt, ys, extent});
        e.end_if();
      }
    }
    e.mul(tmp, step, rb);
    e.ptr_add(wn, wn, tmp, 1);
    e.ptr_add(yn, yn, step, 4);
  }
  e.end_for();
}

LinearEntry linear_entry_prologue(Builder& e, int block_elems, int max_blocks) {
  LinearEntry a{e.arg(0), e.arg(1), e.arg(2), e.arg(3), e.arg(4),
                e.arg(5), e.arg(6), e.arg(7), e.arg(3)};
  ret_if(e, a.T, Cmp::LE, 0);
  ret_if(e, a.K, Cmp::LE, 0);
  ret_if(e, a.n0, Cmp::LT, 0);
  ret_if(e, a.n1, Cmp::LE, a.n0);
  ret_if(e, a.n1, Cmp::GT, a.N);
  if (block_elems > 1) {
    V tail = e.i64("k_tail");
    e.andi(tail, a.K, block_elems - 1);  // block sizes are powers of two
    ret_if(e, tail, Cmp::NE, 0);
    a.nb = e.i64("nb");
    e.div(a.nb, a.K, e.imm(block_elems, "block_elems"));
  }
  if (max_blocks > 0) ret_if(e, a.nb, Cmp::GT, max_blocks);
  return a;
}

void emit_linear_entry(Builder& e, const Grid& g, const LinearLayout& l) {
  const auto [x, w, y, K, N, T, n0, n1, nb] = linear_entry_prologue(e, l.block_elems);
  V rb = e.i64("row_bytes"), as = e.i64("act_stride"), ys = e.i64("y_stride"), tmp = e.i64("tmp");
  V w0 = e.ptr("w_n0"), y0 = e.ptr("y_n0");
  e.muli(rb, nb, l.w_block_bytes);
  e.muli(as, nb, l.a_block_bytes);
  e.muli(ys, N, 4);
  e.mul(tmp, n0, rb);
  e.ptr_add(w0, w, tmp, 1);
  e.ptr_add(y0, y, n0, 4);
  emit_grid(e, g, w0, rb, n0, n1, x, as, T, y0, ys, nb);
}

bool int_params(const GeneratorParams& p, std::string_view generator,
                std::initializer_list<std::pair<const char*, int*>> allowed, std::string* err) {
  for (const auto& [key, value] : p) {
    int* slot = nullptr;
    std::string names;
    for (const auto& [k, s] : allowed) {
      if (key == k) slot = s;
      names += (names.empty() ? "" : ", ") + std::string(k);
    }
    if (!slot) {
      *err = "generator '" + std::string(generator) + "': unknown parameter '" + key +
             "' (it takes: " + (names.empty() ? "none" : names) + ")";
      return false;
    }
    int v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size()) {
      *err = "generator '" + std::string(generator) + "': parameter '" + key + "' = '" + value +
             "' is not an integer";
      return false;
    }
    *slot = v;
  }
  return true;
}

namespace {
thread_local bool t_decode_prefetch = true;  // one build at a time per thread
}  // namespace

bool decode_stream_prefetch() {
  return t_decode_prefetch;
}
DecodePrefetchScope::DecodePrefetchScope(bool on) : saved_(t_decode_prefetch) {
  t_decode_prefetch = on;
}
DecodePrefetchScope::~DecodePrefetchScope() {
  t_decode_prefetch = saved_;
}

}  // namespace cke::jit::gen
