// attention_f32 generators (gen_attention.h): one body for both ISA levels.
#include "jit/gen_attention.h"

#include <fmt/format.h>

#include "jit/gen_lanes16.h"
#include "jit/gen_tile.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cls;
using kir::Cmp;
using kir::Kind;
using kir::Mem;
using kir::V;

constexpr uint32_t kNegInf = 0xFF800000u;
// Query heads of one KV group computed together at AVX-512 (each K row and V^T load serves
// them all): up to 4, the register file's limit (4 heads x 4 score accumulators).
constexpr int kMaxHeads = 4;
// Rows of V^T the one-accumulator tinyBLAS KQV (AVX2, or head_dim % 16 != 0) sums together.
constexpr int kRowsTogether = 4;
static_assert(4 % kRowsTogether == 0);
// Probability rows one KQV pass shares each V^T load among at AVX-512 (kqv_rows): a block
// of kRows / H tokens times the H heads of a KV group.
constexpr int kRows = 8;
// The same at AVX2 for one head (kqv_block_avx2): a block of kRowsAvx2 tokens, each row's
// 16-lane accumulator two ymm.
constexpr int kRowsAvx2 = 4;
// Cells of K a token block's scores share before moving on (32 KiB at head_dim 128).
constexpr int kChunk = 64;
// Cells of a token block's KQV piece (kRows rows of probabilities: 16 KiB), and the
// largest head_dim whose accumulators (kRows x head_dim x 16 lanes) the frame holds.
constexpr int kKqvCells = 512;
constexpr int kMaxBlockHeadDim = 256;

struct Masks {
  Lanes16& L;
  V table;  // AVX2: 16 dwords of all-ones, then 16 of zeros

  explicit Masks(Lanes16& l) : L(l) {
    if (L.parts == 1) return;
    Builder& b = L.b;
    table = b.stack(128, "mask_table");
    V ones = b.vec(256, Cls::I, "ones"), zeros = b.vec(256, Cls::I, "zeros");
    b.vsplat32(ones, 0xFFFFFFFFu);
    b.vzero(zeros);
    for (int k = 0; k < 4; ++k) b.vstore(Mem{table, {}, 1, 32 * k}, k < 2 ? ones : zeros);
  }

  // d = the first r (0..16) floats at m, zeros after; lanes past r are not read.
  void load_first(V16 d, Mem m, V r) {
    Builder& b = L.b;
    if (L.parts == 1) {
      V k = b.mask("k");
      b.kfirst_n(k, r);
      b.vload_mz(d.part[0], m, k);
      return;
    }
    V off = b.i64("moff"), sixteen = b.imm(16, "sixteen");
    b.sub(off, sixteen, r);
    for (int h = 0; h < 2; ++h) {
      V mk = b.vec(256, Cls::I, "mk");
      b.vload(mk, Mem{table, off, 4, 32 * h});
      Mem mh = m;
      mh.disp += 32 * h;
      b.vload_mz(d.part[h], mh, mk);
    }
  }
};

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  int cells = 32768;
  if (!int_params(params, generator, {{"cells", &cells}}, err)) return false;
  if (cells < 16 || cells > (1 << 20) || cells % 16 != 0) {
    *err = fmt::format("generator '{}': cells = {} (a multiple of 16 in [16, 1048576])", generator,
                       cells);
    return false;
  }
  m->isa = isa_features(isa);
  m->comment = fmt::format(
      "generator {}, cells {}: contract attention.f32.ggml (ggml's non-flash attention:\n"
      "vec_dot_f32 scores, soft_max with ggml_v_expf and a double sum, tinyBLAS / vec_dot KQV)",
      generator, cells);
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::I64, Kind::I64,
             Kind::I64, Kind::I64, Kind::F32, Kind::I64, Kind::I64, Kind::I64});
  const V q = b.arg(0), kc = b.arg(1), vc = b.arg(2), out = b.arg(3), hd = b.arg(4), nh = b.arg(5),
          nhkv = b.arg(6), nctx = b.arg(7), pos0 = b.arg(8), T = b.arg(9), scale = b.arg(10),
          window = b.arg(11), h0 = b.arg(12), h1 = b.arg(13);

  // Shapes the plan has proved; anything else computes nothing (as the reference).
  ret_if(b, hd, Cmp::LE, 0);
  ret_if(b, nhkv, Cmp::LE, 0);
  V group = b.i64("group"), tmp = b.i64("tmp"), end = b.i64("end");
  b.div(group, nh, nhkv);
  b.mul(tmp, group, nhkv);
  ret_if(b, tmp, Cmp::NE, nh);
  ret_if(b, pos0, Cmp::LT, 0);
  ret_if(b, T, Cmp::LE, 0);
  b.add(end, pos0, T);
  ret_if(b, end, Cmp::GT, nctx);
  ret_if(b, end, Cmp::GT, int64_t(cells));
  ret_if(b, h0, Cmp::LT, 0);
  ret_if(b, h1, Cmp::GT, nh);
  ret_if(b, h0, Cmp::GE, h1);

  Lanes16 L(b, isa);
  const ExpConsts ec = exp_consts(L);
  Masks masks(L);
  // Probabilities: kRows rows of `cells` floats (kRowsAvx2 at AVX2), row r at
  // e + r * row_bytes. The 16 floats past a row's cells are the zeros a shorter row of a
  // token block shows the shared KQV loop (kqv_rows, kqv_block_avx2).
  const int64_t row_bytes = int64_t(cells) * 4 + 64;
  const V e = b.stack((L.parts == 1 ? kRows : kRowsAvx2) * row_bytes, "probs");
  const V accs = L.parts == 1 ? b.stack(int64_t(kRows) * kMaxBlockHeadDim * 64, "kqv_accs") : V{};
  const V kqv_out = L.parts == 1 ? b.stack(int64_t(kRows) * kMaxBlockHeadDim * 4, "kqv_out") : V{};
  const V16 ninf = L.splat(kNegInf, "ninf");
  V ninf1 = b.vec(128, Cls::F, "ninf1");
  b.vsplat32(ninf1, kNegInf);
  V one_d = b.vec(128, Cls::F, "one_d");
  b.vconst32(one_d, {0u, 0x3FF00000u, 0u, 0u});  // 1.0 (double) in the low 64 bits

  // KQV arithmetic: tinyBLAS (one accumulator) for T >= 2 and head_dim % 4 == 0.
  V tiny = b.imm(0, "tinyblas"), hd4 = b.i64("hd4");
  b.andi(hd4, hd, 3);
  b.if_(T, Cmp::GE, 2);
  b.if_(hd4, Cmp::EQ, 0);
  b.movi(tiny, 1);
  b.end_if();
  b.end_if();
  // ... 16 rows at a time where there are 16 lanes in one register and head_dim % 16 == 0,
  // else one row at a time.
  V tiny16, tiny1 = b.i64("tiny1");
  b.mov(tiny1, tiny);
  if (L.parts == 1) {
    tiny16 = b.imm(0, "tiny16");
    V hd16 = b.i64("hd16");
    b.andi(hd16, hd, 15);
    b.if_(tiny, Cmp::EQ, 1);
    b.if_(hd16, Cmp::EQ, 0);
    b.movi(tiny16, 1);
    b.movi(tiny1, 0);
    b.end_if();
    b.end_if();
  }

  // Byte strides.
  V hd_bytes = b.i64("hd_bytes"), kv_bytes = b.i64("kv_bytes"), tok_bytes = b.i64("tok_bytes"),
    vrow_bytes = b.i64("vrow_bytes"), vhead_bytes = b.i64("vhead_bytes");
  b.muli(hd_bytes, hd, 4);
  b.mul(kv_bytes, nhkv, hd_bytes);
  b.mul(tok_bytes, nh, hd_bytes);
  b.muli(vrow_bytes, nctx, 4);
  b.mul(vhead_bytes, vrow_bytes, hd);
  // V^T row offsets of a 16-row block: 1, 3, 5, 7, 8 and 16 rows.
  V rb, rb3, rb5, rb7, rb8, rb16;
  if (L.parts == 1) {
    rb = b.i64("rb"), rb3 = b.i64("rb3"), rb5 = b.i64("rb5"), rb7 = b.i64("rb7");
    rb8 = b.i64("rb8"), rb16 = b.i64("rb16");
    b.mov(rb, vrow_bytes);
    b.muli(rb3, vrow_bytes, 3);
    b.muli(rb5, vrow_bytes, 5);
    b.muli(rb7, vrow_bytes, 7);
    b.muli(rb8, vrow_bytes, 8);
    b.muli(rb16, vrow_bytes, 16);
  }
  V np = b.i64("np"), np_bytes = b.i64("np_bytes");
  b.andi(np, hd, ~int64_t(63));
  b.muli(np_bytes, np, 4);
  // The pair path (AVX-512, 16-row tinyBLAS KQV, no score tail): heads of a KV group go
  // together and prefill's tokens go in blocks (block, below).
  V pair_ok;
  if (L.parts == 1) {
    pair_ok = b.imm(0, "pair_ok");
    b.if_(tiny16, Cmp::EQ, 1);
    b.if_(np, Cmp::EQ, hd);
    b.movi(pair_ok, 1);
    b.end_if();
    b.end_if();
  }
  // Heads of a KV group together: the pair path, or the vec_dot KQV (kqv_heads).
  V heads_ok;
  if (L.parts == 1) {
    heads_ok = b.i64("heads_ok");
    b.mov(heads_ok, pair_ok);
    b.if_(tiny, Cmp::EQ, 0);
    b.movi(heads_ok, 1);
    b.end_if();
  }

  V zero = b.imm(0, "zero"), one = b.imm(1, "one"), c16 = b.imm(16, "c16"),
    c64b = b.imm(64, "c64b"), c256b = b.imm(256, "c256b");
  V t = b.i64("t"), h = b.i64("h"), j = b.i64("j"), g = b.i64("g"), d = b.i64("d"), c = b.i64("c"),
    i = b.i64("i");
  V lo = b.i64("lo"), hi = b.i64("hi");  // the cells [lo, hi) scores_range computes
  V p = b.i64("p"), len = b.i64("len"), len16 = b.i64("len16"), first = b.i64("first"),
    f = b.i64("f"), hk = b.i64("hk"), off = b.i64("off"), r = b.i64("r"), lim = b.i64("lim");
  V jb = b.i64("jb"), nb = b.i64("nb");
  const V16 scalev = L.bcast(scale, "scalev");
  V qt = b.ptr("qt"), ot = b.ptr("ot"), qh = b.ptr("qh"), oh = b.ptr("oh"), kh = b.ptr("kh"),
    kj = b.ptr("kj"), vh = b.ptr("vh"), vrow = b.ptr("vrow");
  V qdone = b.i64("qdone");  // scores: the q-in-registers loop ran (scores_qreg)
  V hstep = b.i64("hstep"), together = b.i64("together"), hn = b.i64("hn"), hg = b.i64("hg"),
    c8 = b.imm(8, "c8"), c4 = L.parts == 1 ? b.imm(4, "c4") : V{};

  // Token t's causal range [first, len) (len16: len rounded up to 16 cells) and its rows
  // of q and out (qh, oh: head h's).
  V hoff = b.i64("hoff");
  auto token_setup = [&](V tv) {
    b.add(p, pos0, tv);
    b.addi(len, p, 1);
    b.addi(len16, len, 15);
    b.andi(len16, len16, ~int64_t(15));
    window_first(b, first, p, window, f);
    b.mul(off, tv, tok_bytes);
    b.ptr_add(qt, q, off, 1);
    b.ptr_add(ot, out, off, 1);
    b.ptr_add(qh, qt, hoff, 1);
    b.ptr_add(oh, ot, hoff, 1);
  };

  // V^T row `row` % 8 of a block of rows at `base` (rows 8 apart share one base).
  auto row_mem = [&](int row, V base) {
    const int k = row % 8;
    switch (k) {
      case 0:
        return Mem{base, {}, 1, 0};
      case 1:
        return Mem{base, rb, 1, 0};
      case 2:
        return Mem{base, rb, 2, 0};
      case 3:
        return Mem{base, rb3, 1, 0};
      case 4:
        return Mem{base, rb, 4, 0};
      case 5:
        return Mem{base, rb5, 1, 0};
      case 6:
        return Mem{base, rb3, 2, 0};
      default:
        return Mem{base, rb7, 1, 0};
    }
  };
  // The pieces of one head (query row qx, probabilities ex, output ox), and of H together.
  // vec_dot_f32's four accumulators of the rows x . y_i (i < H, each load of x serving all
  // H) over their first `bytes` (64-element chunks): acc[i][a] += x[c + 16a ..] * y_i[c + 16a ..].
  auto dot_chunks = [&](V16(*acc)[4], int H, V x, const V* y, V bytes) {
    for (int i = 0; i < H; ++i)
      for (int a = 0; a < 4; ++a) acc[i][a] = L.zero("acc");
    b.for_(c, zero, bytes, c256b);
    for (int a = 0; a < 4; ++a) {
      V16 xa = L.vec("xa");
      L.load(xa, Mem{x, c, 1, 64 * a});
      for (int i = 0; i < H; ++i) L.fma_m(acc[i][a], xa, Mem{y[i], c, 1, 64 * a});
    }
    b.end_for();
  };
  auto scores_one_by_one = [&](V qx, V ex) {
    b.for_(j, jb, hi, one);  // one cell at a time: the rest, or all of them
    {
      V16 acc[1][4];
      dot_chunks(acc, 1, kj, &qx, np_bytes);
      V s = L.fold4_reduce_add(acc[0]);
      V x1 = b.vec(128, Cls::F, "x1"), y1 = b.vec(128, Cls::F, "y1");
      b.for_(i, np, hd, one);  // sum = sum + fl(x * y)
      b.vload_ss(x1, Mem{kj, i, 4, 0});
      b.vload_ss(y1, Mem{qx, i, 4, 0});
      b.vmul_ss(x1, x1, y1);
      b.vadd_ss(s, s, x1);
      b.end_for();
      b.vmul_ss(s, s, scale);
      b.vstore_ss(Mem{ex, j, 4, 0}, s);
    }
    b.ptr_add(kj, kj, kv_bytes, 1);
    b.end_for();
  };
  // H heads' rows of probabilities (one head, or 2 or 4 of one KV group sharing every K row
  // and V^T load): ex[i] for head i, lanes of one 16-lane result split among them.
  auto store_lanes = [&](V16 v, const V* base, V index, int H) {
    if (H == 1) {
      L.store(Mem{base[0], index, 4, 0}, v);
      return;
    }
    const int bits = 512 / H;
    b.vstore(Mem{base[0], index, 4, 0}, b.view(v.part[0], bits, Cls::F));
    for (int i = 1; i < H; ++i) {
      V x = b.vec(bits, Cls::F, "lanes_i");
      b.vextract(x, v.part[0], i);
      b.vstore(Mem{base[i], index, 4, 0}, x);
    }
  };
  // AVX-512, head_dim 64 C (C = 1, 2) and H heads whose query rows fit in 16 registers:
  // the rows stay in registers for the whole row of cells, each K row is loaded once for
  // the H heads, and 8 / H cells of each head are reduced as one 256-bit vector (half_sum,
  // then reduce_pair8 as soon as a pair exists, reduce_finish8): loads are K's only, where
  // the loop below reads q from memory for every product. The same products, folds and
  // reduction order as one cell alone (dot_chunks, fold4, reduce_add).
  auto scores_qreg = [&](const V* qx, const V* ex, int H, int C) {
    const int keys = 8 / H;
    V16 qr[kMaxHeads][8];
    for (int i = 0; i < H; ++i)
      for (int k = 0; k < 4 * C; ++k) {
        qr[i][k] = L.vec("qr");
        L.load(qr[i][k], Mem{qx[i], {}, 1, 64 * k});
      }
    // Head-outer keeps the row's 4C K vectors and one head's 4 accumulators live;
    // head-inner keeps one K vector and 4H accumulators: the fewer registers.
    const bool head_outer = 4 * C + 4 <= 4 * H + 1;
    V lane_mask[kMaxHeads];  // H = 4: lanes 2i, 2i + 1 of the result are head i's
    if (H == 4)
      for (int i = 0; i < H; ++i) {
        lane_mask[i] = b.mask("lanes");
        b.kimm(lane_mask[i], uint64_t(3) << (2 * i));
      }
    b.sub(nb, hi, lo);
    b.andi(nb, nb, -int64_t(keys));
    b.add(jb, lo, nb);
    b.for_(j, lo, jb, b.imm(keys, "keys"));
    {
      V s8[8], w[4];
      bool made[8] = {}, paired[4] = {};
      auto fold_into = [&](V16 acc[4], int i, int key) {
        s8[keys * i + key] = L.half_sum(L.fold4(acc));
        made[keys * i + key] = true;
      };
      for (int key = 0; key < keys; ++key) {
        if (head_outer) {
          V16 kx[8];
          for (int k = 0; k < 4 * C; ++k) {
            kx[k] = L.vec("kx");
            L.load(kx[k], Mem{kj, {}, 1, 64 * k});
          }
          for (int i = 0; i < H; ++i) {
            V16 acc[4];
            for (int a = 0; a < 4; ++a) acc[a] = L.zero("acc");
            for (int c = 0; c < C; ++c)
              for (int a = 0; a < 4; ++a) L.fma(acc[a], kx[4 * c + a], qr[i][4 * c + a]);
            fold_into(acc, i, key);
          }
        } else {
          V16 acc[kMaxHeads][4];
          for (int i = 0; i < H; ++i)
            for (int a = 0; a < 4; ++a) acc[i][a] = L.zero("acc");
          for (int c = 0; c < C; ++c)
            for (int a = 0; a < 4; ++a) {
              V16 kx = L.vec("kx");
              L.load(kx, Mem{kj, {}, 1, 64 * (4 * c + a)});
              for (int i = 0; i < H; ++i) L.fma(acc[i][a], kx, qr[i][4 * c + a]);
            }
          for (int i = 0; i < H; ++i) fold_into(acc[i], i, key);
        }
        b.ptr_add(kj, kj, kv_bytes, 1);
        for (int k = 0; k < 4; ++k)
          if (!paired[k] && made[k] && made[k + 4]) {
            w[k] = L.reduce_pair8(s8[k], s8[k + 4]);
            paired[k] = true;
          }
      }
      V sc = L.reduce_finish8(w);
      b.vmul_f(sc, sc, b.view(scalev.part[0], 256, Cls::F));
      if (H == 1) {
        b.vstore(Mem{ex[0], j, 4, 0}, sc);
      } else if (H == 2) {
        b.vstore(Mem{ex[0], j, 4, 0}, b.view(sc, 128, Cls::F));
        V hi = b.vec(128, Cls::F, "hi");
        b.vextract(hi, sc, 1);
        b.vstore(Mem{ex[1], j, 4, 0}, hi);
      } else {
        for (int i = 0; i < H; ++i) b.vstore_mk(Mem{ex[i], j, 4, -8 * i}, sc, lane_mask[i]);
      }
    }
    b.end_for();
  };
  // -inf for the cells [0, first) and the padding [len, len16) of H rows; the scores of
  // [first, len) overwrite the rest.
  auto scores_fill = [&](const V* ex, int H) {
    b.addi(off, len16, -16);
    for (int i = 0; i < H; ++i) L.store(Mem{ex[i], off, 4, 0}, ninf);
    b.for_(j, zero, first, one);
    for (int i = 0; i < H; ++i) b.vstore_ss(Mem{ex[i], j, 4, 0}, ninf1);
    b.end_for();
  };
  // Scores of the cells [lo, hi) (lo < hi) of H rows: each cell's arithmetic is the same
  // whatever the range, so a row's cells may be computed in pieces.
  auto scores_range = [&](const V* qx, const V* ex, int H) {
    b.mul(off, lo, kv_bytes);
    b.ptr_add(kj, kh, off, 1);
    // AVX-512 with no tail past the 64-chunks: 16 / H cells of each head at a time (each K
    // row loaded once for the H heads), their 16 folded vectors reduced as one
    // (reduce_add16: lanes 16 / H * i on for head i), scaled and stored as one vector.
    b.mov(jb, lo);
    if (L.parts == 1) {
      b.movi(qdone, 0);
      for (int C : {1, 2})
        if (4 * C * H <= 16) {
          b.if_(hd, Cmp::EQ, 64 * C);
          scores_qreg(qx, ex, H, C);
          b.movi(qdone, 1);
          b.end_if();
        }
      const int keys = 16 / H;
      b.if_(qdone, Cmp::EQ, 0);
      b.if_(np, Cmp::EQ, hd);
      b.sub(nb, hi, lo);
      b.andi(nb, nb, -int64_t(keys));
      b.add(jb, lo, nb);
      b.for_(j, lo, jb, H == 1 ? c16 : H == 2 ? c8 : c4);
      {
        V16 r[16];
        for (int key = 0; key < keys; ++key) {
          V16 acc[kMaxHeads][4];
          dot_chunks(acc, H, kj, qx, np_bytes);
          for (int i = 0; i < H; ++i) r[keys * i + key] = L.fold4(acc[i]);
          b.ptr_add(kj, kj, kv_bytes, 1);
        }
        V16 sc = L.reduce_add16(r);
        L.mul(sc, sc, scalev);
        store_lanes(sc, ex, j, H);
      }
      b.end_for();
      b.end_if();
      b.end_if();
    } else if (H == 1) {
      // AVX2: 8 cells at a time, their folded vectors reduced as one (reduce_add8): the
      // per-cell horizontal sum was most of a score's instructions.
      b.if_(np, Cmp::EQ, hd);
      b.sub(nb, hi, lo);
      b.andi(nb, nb, -int64_t(8));
      b.add(jb, lo, nb);
      b.for_(j, lo, jb, c8);
      {
        V s8[8];
        for (int key = 0; key < 8; ++key) {
          V16 acc[1][4];
          dot_chunks(acc, 1, kj, qx, np_bytes);
          s8[key] = L.half_sum(L.fold4(acc[0]));
          b.ptr_add(kj, kj, kv_bytes, 1);
        }
        V sc = L.reduce_add8(s8);
        b.vmul_f(sc, sc, scalev.part[0]);
        b.vstore(Mem{ex[0], j, 4, 0}, sc);
      }
      b.end_for();
      b.end_if();
    }
    for (int i = 0; i < H; ++i) {
      b.mul(off, jb, kv_bytes);
      b.ptr_add(kj, kh, off, 1);
      scores_one_by_one(qx[i], ex[i]);
    }
  };
  auto softmax = [&](V ex) {
    // Row max, then ex = exp(w - max) per 16-group with the group sums added in double.
    V16 mx = L.vec("mx");
    L.copy(mx, ninf);
    b.for_(g, zero, len16, c16);
    {
      V16 w = L.vec("w");
      L.load(w, Mem{ex, g, 4, 0});
      L.max(mx, mx, w);
    }
    b.end_for();
    const V16 mxv = L.bcast(L.reduce_max(mx), "mxv");
    V sum = b.vec(128, Cls::F, "sum");
    b.vzero(sum);
    exp_sub_groups(L, ec, ex, ex, len16, mxv, sum);
    scale_groups(L, ex, len16, inv_of_sum(b, one_d, sum));
  };
  // tinyBLAS on AVX-512 with head_dim % 16 == 0 for R probability rows (rows r of e: H
  // heads of one token, or a block of tokens times H heads) over cells [0, n): 16 / R rows
  // of V^T at a time, each loaded 16 cells by 16 once for all R rows; the 16 sums reduced as
  // one vector, row r's in lanes [16 / R * r, 16 / R * (r + 1)) stored at row_out(ptr, r).
  // Row i of V^T's block is at va + c (+ 8 rows for i >= 8) + a multiple of vrow_bytes.
  // A row whose own cells end before n reads zeros past them (softmax's exp(-inf) up to its
  // len16, the 16 zeros `block` stores after that): each of its sums adds +0 * v, which
  // leaves it as it is (tinyBLAS, too, runs every row over the whole cache).
  //
  // A whole token block (R = kRows) goes over the cells in pieces of kKqvCells, every
  // V^T row pair per piece, its accumulators kept in `accs` between pieces (the same sums in
  // the same order): the piece's probabilities (16 KiB) stay in L1, where the whole rows
  // (64 KiB at 2048 cells) came from L2 for every pair of V^T rows.
  auto kqv_rows = [&](int R, V rows_at, V n, auto&& row_out) {
    const int rows = 16 / R;
    const bool pieces = R == kRows;
    V full = b.i64("full"), full_bytes = b.i64("full_bytes"), va = b.ptr("va"), vb = b.ptr("vb");
    b.andi(full, n, ~int64_t(15));
    b.muli(full_bytes, full, 4);
    b.sub(r, n, full);
    V16 acc[16], px[kRows];
    for (int k = 0; k < 16; ++k) acc[k] = L.vec("acc");
    for (int i = 0; i < R; ++i) px[i] = L.vec("px");
    auto block = [&](bool tail) {
      if (rows > 8) b.ptr_add(vb, va, rb8, 1);
      for (int i = 0; i < R; ++i) {
        if (tail)
          masks.load_first(px[i], Mem{rows_at, full, 4, int32_t(i * row_bytes)}, r);
        else
          L.load(px[i], Mem{rows_at, c, 1, int32_t(i * row_bytes)});
      }
      for (int row = 0; row < rows; ++row) {
        V16 vx = L.vec("vx");
        const Mem m = row_mem(row, row < 8 ? va : vb);
        if (tail)
          masks.load_first(vx, m, r);
        else
          L.load(vx, m);
        for (int i = 0; i < R; ++i) L.fma(acc[rows * i + row], vx, px[i]);
      }
    };
    auto next_rows = [&] {
      if (rows == 16)
        b.ptr_add(vrow, vrow, rb16, 1);
      else
        b.ptr_add(vrow, vrow, rb, rows);
    };
    const V step = b.imm(rows, "rows");
    // The accumulators of V^T rows d .. d + rows - 1: zeros before the first piece, else
    // the last piece's.
    V aoff = b.i64("aoff");
    auto acc_start = [&](V started) {
      for (int k = 0; k < 16; ++k) b.vzero(acc[k].part[0]);
      if (!pieces) return;
      b.muli(aoff, d, 16 * 64 / rows);
      b.if_(started, Cmp::GT, 0);
      for (int k = 0; k < 16; ++k) L.load(acc[k], Mem{accs, aoff, 1, 64 * k});
      b.end_if();
    };
    if (pieces) {
      V cb = b.i64("cb"), cend = b.i64("cend"), piece = b.imm(kKqvCells * 4, "kqv_piece");
      b.for_(cb, zero, full_bytes, piece);
      b.add(cend, cb, piece);
      b.min(cend, cend, full_bytes);
      b.mov(vrow, vh);
      b.for_(d, zero, hd, step);
      acc_start(cb);
      b.for_(c, cb, cend, c64b);
      b.ptr_add(va, vrow, c, 1);
      block(false);
      b.end_for();
      for (int k = 0; k < 16; ++k) L.store(Mem{accs, aoff, 1, 64 * k}, acc[k]);
      next_rows();
      b.end_for();
      b.end_for();
    }
    b.mov(vrow, vh);
    b.for_(d, zero, hd, step);
    {
      if (pieces) {
        acc_start(full_bytes);
      } else {
        acc_start(zero);
        b.for_(c, zero, full_bytes, c64b);
        b.ptr_add(va, vrow, c, 1);
        block(false);
        b.end_for();
      }
      b.if_(r, Cmp::GT, 0);
      b.ptr_add(va, vrow, full_bytes, 1);
      block(true);
      b.end_if();
      const V16 sums = L.reduce_add16(acc);
      V o = b.ptr("o");
      for (int i = 0; i < R; ++i) {
        row_out(o, i);
        if (R == 1) {
          L.store(Mem{o, d, 4, 0}, sums);
          continue;
        }
        V lanes = b.mask("lanes");
        b.kimm(lanes, ((uint64_t(1) << rows) - 1) << (rows * i));
        b.vstore_mk(Mem{o, d, 4, -4 * rows * i}, sums.part[0], lanes);
      }
      next_rows();
    }
    b.end_for();
  };
  // AVX2, one head, a whole block of kRowsAvx2 tokens (rows 0.. of e) over cells [0, n):
  // per row d of V^T, each 16-cell load of it serves all the block's rows (their
  // accumulators: 8 ymm). The arithmetic of kqv's tinyBLAS rows, sum for sum; a row whose
  // cells end before n reads the zeros `block` stores past them (as kqv_rows). Per token,
  // V^T (512 KiB a KV head at head_dim 64 and 2048 cells) came from L2 for every token.
  auto kqv_block_avx2 = [&](V n, V ob) {
    V full = b.i64("fullb"), full_bytes = b.i64("fullb_bytes");
    b.andi(full, n, ~int64_t(15));
    b.muli(full_bytes, full, 4);
    b.sub(r, n, full);
    V orow[kRowsAvx2];
    for (int i = 0; i < kRowsAvx2; ++i) {
      orow[i] = b.ptr("orow");
      if (i == 0)
        b.mov(orow[i], ob);
      else
        b.ptr_add(orow[i], orow[i - 1], tok_bytes, 1);
    }
    b.mov(vrow, vh);
    b.for_(d, zero, hd, one);
    {
      V16 acc[kRowsAvx2];
      for (int i = 0; i < kRowsAvx2; ++i) acc[i] = L.zero("acc");
      b.for_(c, zero, full_bytes, c64b);
      {
        V16 vx = L.vec("vx");
        L.load(vx, Mem{vrow, c, 1, 0});
        for (int i = 0; i < kRowsAvx2; ++i)
          L.fma_m(acc[i], vx, Mem{e, c, 1, int32_t(i * row_bytes)});
      }
      b.end_for();
      b.if_(r, Cmp::GT, 0);
      {
        V16 vx = L.vec("vx");
        masks.load_first(vx, Mem{vrow, full, 4, 0}, r);
        for (int i = 0; i < kRowsAvx2; ++i) {
          V16 px = L.vec("px");
          masks.load_first(px, Mem{e, full, 4, int32_t(i * row_bytes)}, r);
          L.fma(acc[i], vx, px);
        }
      }
      b.end_if();
      for (int i = 0; i < kRowsAvx2; ++i) b.vstore_ss(Mem{orow[i], d, 4, 0}, L.reduce_add(acc[i]));
      b.ptr_add(vrow, vrow, vrow_bytes, 1);
    }
    b.end_for();
  };
  // ggml's vec_dot_f32 KQV (decode, T = 1; or head_dim % 4 != 0) for H heads (1, or the 2
  // or 4 of a KV group at AVX-512): row d of V^T is loaded once a 64-cell chunk for all H
  // heads (4 accumulators each, 4H <= 16), where one head at a time loaded V^T, from L2 or
  // memory, H times. The last chunk's cells masked; per head vec_dot_f32's fold and sum.
  auto kqv_heads = [&](int H, V ex0, V ox0) {
    V full = b.i64("fullh"), full_bytes = b.i64("fullh_bytes");
    b.andi(full, len, ~int64_t(63));
    b.muli(full_bytes, full, 4);
    V exh[kMaxHeads], oxh[kMaxHeads];
    for (int i = 0; i < H; ++i) {
      exh[i] = b.ptr("exh");
      oxh[i] = b.ptr("oxh");
      b.ptr_add(exh[i], ex0, b.imm(i * row_bytes, "row_off"), 1);
      b.muli(off, hd_bytes, i);
      b.ptr_add(oxh[i], ox0, off, 1);
    }
    b.mov(vrow, vh);
    b.for_(d, zero, hd, one);
    {
      V16 acc[kMaxHeads][4];
      dot_chunks(acc, H, vrow, exh, full_bytes);
      b.if_(len, Cmp::GT, full);  // the last chunk: groups of cells full + 16a, r valid each
      for (int a = 0; a < 4; ++a) {
        b.sub(r, len, full);
        b.addi(r, r, -16 * a);
        b.if_(r, Cmp::LT, 0);
        b.movi(r, 0);
        b.end_if();
        b.movi(lim, 16);
        b.min(r, r, lim);
        V16 vx = L.vec("vx");
        masks.load_first(vx, Mem{vrow, full, 4, 64 * a}, r);
        for (int i = 0; i < H; ++i) {
          V16 px = L.vec("px");
          masks.load_first(px, Mem{exh[i], full, 4, 64 * a}, r);
          L.fma(acc[i][a], vx, px);
        }
      }
      b.end_if();
      for (int i = 0; i < H; ++i) b.vstore_ss(Mem{oxh[i], d, 4, 0}, L.fold4_reduce_add(acc[i]));
    }
    b.ptr_add(vrow, vrow, vrow_bytes, 1);
    b.end_for();
  };
  auto kqv = [&](V ex, V ox) {
    // out[d] = V^T row d . p over cells [0, len).
    V full = b.i64("full1"), full_bytes = b.i64("full1_bytes");
    if (L.parts == 1) {
      b.if_(tiny16, Cmp::EQ, 1);
      kqv_rows(1, ex, len, [&](V o, int) { b.mov(o, ox); });
      b.end_if();
    }

    b.if_(tiny1, Cmp::EQ, 1);
    b.andi(full, len, ~int64_t(15));
    b.muli(full_bytes, full, 4);
    b.sub(r, len, full);
    b.mov(vrow, vh);
    // kRowsTogether rows of V^T at a time (tinyBLAS means head_dim % 4 == 0): each row's sum
    // is one accumulator (the contract's order), a chain of dependent FMAs; side by side they
    // overlap their latency and share each load of the probabilities.
    b.for_(d, zero, hd, b.imm(kRowsTogether, "rows_together"));
    {
      V16 acc[kRowsTogether];
      V vr[kRowsTogether];
      for (int k = 0; k < kRowsTogether; ++k) {
        acc[k] = L.zero("acc");
        vr[k] = b.ptr("vr");
        b.muli(off, vrow_bytes, k);
        b.ptr_add(vr[k], vrow, off, 1);
      }
      b.for_(c, zero, full_bytes, c64b);
      {
        V16 px = L.vec("px");
        L.load(px, Mem{ex, c, 1, 0});
        for (int k = 0; k < kRowsTogether; ++k) L.fma_m(acc[k], px, Mem{vr[k], c, 1, 0});
      }
      b.end_for();
      b.if_(r, Cmp::GT, 0);
      {
        V16 px = L.vec("px");
        masks.load_first(px, Mem{ex, full, 4, 0}, r);
        for (int k = 0; k < kRowsTogether; ++k) {
          V16 vx = L.vec("vx");
          masks.load_first(vx, Mem{vr[k], full, 4, 0}, r);
          L.fma(acc[k], vx, px);
        }
      }
      b.end_if();
      for (int k = 0; k < kRowsTogether; ++k)
        b.vstore_ss(Mem{ox, d, 4, 4 * k}, L.reduce_add(acc[k]));
      b.muli(off, vrow_bytes, kRowsTogether);
      b.ptr_add(vrow, vrow, off, 1);
    }
    b.end_for();
    b.end_if();

    b.if_(tiny, Cmp::EQ, 0);
    kqv_heads(1, ex, ox);
    b.end_if();
  };
  // Heads h .. h + H - 1 (H = together: one KV group) for tokens t .. t + nt - 1, nt <= TB
  // (AVX-512 pair path: TB = kRows / H; else 1). Probability row kb * H + i is token
  // t + kb's for head h + i. The scores go in pieces of `piece` cells (kChunk when nt > 1),
  // every token's piece before the next one's, so a piece's K rows stay in L1 for all the
  // block's tokens; each cell's arithmetic is the same whatever the piece. A whole block's
  // KQV is one pass over the kRows rows, each V^T load serving all of them. (A KV head's K,
  // and its V^T, is 1 MiB at head_dim 128 and 2048 cells: per token both streamed from L3.)
  V kb = b.i64("kb"), tk = b.i64("tk"), ib = b.i64("ib"), ob = b.ptr("ob"), cs = b.i64("cs"),
    ce = b.i64("ce"), n_block = b.i64("n_block"), piece = b.i64("piece"), TB = b.i64("TB"),
    nt = b.i64("nt"), ex1 = b.ptr("ex1"), ox1 = b.ptr("ox1"), row = b.i64("row");
  // Runs body() for each token kb of the block after token_setup.
  auto each_token = [&](auto&& body) {
    b.for_(kb, zero, nt, one);
    b.add(tk, t, kb);
    token_setup(tk);
    body();
    b.end_for();
  };
  // ... and for each of its H rows: row = kb * H + ib, ex1 = its probabilities.
  auto each_row = [&](auto&& body) {
    each_token([&] {
      b.for_(ib, zero, together, one);
      b.mul(row, kb, together);
      b.add(row, row, ib);
      b.muli(off, row, row_bytes);
      b.ptr_add(ex1, e, off, 1);
      body();
      b.end_for();
    });
  };
  // Row pointers of token kb's H rows and its H query rows.
  auto head_rows = [&](V* ex, V* qx, int H) {
    ex[0] = b.ptr("ex0");
    b.muli(off, kb, H * row_bytes);
    b.ptr_add(ex[0], e, off, 1);
    qx[0] = qh;
    for (int i = 1; i < H; ++i) {
      ex[i] = b.ptr("exi");
      b.ptr_add(ex[i], ex[0], b.imm(i * row_bytes, "row_off"), 1);
      qx[i] = b.ptr("qxi");
      b.muli(off, hd_bytes, i);
      b.ptr_add(qx[i], qh, off, 1);
    }
  };
  // The heads' dispatch: body(H) for together == H.
  auto for_heads = [&](auto&& body) {
    for (int H : {1, 2, kMaxHeads}) {
      if (H > 1 && L.parts != 1) break;
      b.if_(together, Cmp::EQ, H);
      body(H);
      b.end_if();
    }
  };
  auto block = [&] {
    each_row([&] { scores_fill(&ex1, 1); });
    b.add(n_block, pos0, t);  // the last token's len: the longest row
    b.add(n_block, n_block, nt);
    b.mov(piece, n_block);
    b.if_(nt, Cmp::GT, 1);
    b.movi(piece, kChunk);
    b.end_if();
    b.for_(cs, zero, n_block, piece);
    b.add(ce, cs, piece);
    each_token([&] {
      b.mov(lo, first);
      b.if_(lo, Cmp::LT, cs);
      b.mov(lo, cs);
      b.end_if();
      b.min(hi, len, ce);
      b.if_(hi, Cmp::GT, lo);
      for_heads([&](int H) {
        V ex[kMaxHeads], qx[kMaxHeads];
        head_rows(ex, qx, H);
        scores_range(qx, ex, H);
      });
      b.end_if();
    });
    b.end_for();
    each_row([&] {
      softmax(ex1);
      // Zeros past the row's cells: what a shorter row shows the whole block's KQV.
      L.store(Mem{ex1, len16, 4, 0}, L.zero("zeros"));
    });
    // KQV: the whole block in one pass, else token by token.
    V whole = b.imm(0, "whole");
    if (L.parts == 1) {
      b.if_(nt, Cmp::EQ, TB);
      b.if_(pair_ok, Cmp::EQ, 1);
      b.if_(hd, Cmp::LE, kMaxBlockHeadDim);
      b.movi(whole, 1);
      b.end_if();
      b.end_if();
      b.end_if();
      // Row r's outputs go to row r of `kqv_out`, then to their token and head: one KQV
      // for any head count.
      b.if_(whole, Cmp::EQ, 1);
      kqv_rows(kRows, e, n_block, [&](V o, int i) {
        b.muli(off, hd_bytes, i);
        b.ptr_add(o, kqv_out, off, 1);
      });
      each_row([&] {
        b.mul(off, row, hd_bytes);
        b.ptr_add(ob, kqv_out, off, 1);
        b.mul(off, ib, hd_bytes);
        b.ptr_add(ox1, oh, off, 1);
        b.for_(c, zero, hd_bytes, c64b);
        V16 x = L.vec("x");
        L.load(x, Mem{ob, c, 1, 0});
        L.store(Mem{ox1, c, 1, 0}, x);
        b.end_for();
      });
      b.end_if();
    } else {
      b.if_(nt, Cmp::EQ, TB);
      b.if_(TB, Cmp::EQ, kRowsAvx2);
      b.movi(whole, 1);
      b.mul(off, t, tok_bytes);
      b.ptr_add(ob, out, off, 1);
      b.ptr_add(ob, ob, hoff, 1);
      kqv_block_avx2(n_block, ob);
      b.end_if();
      b.end_if();
    }
    b.if_(whole, Cmp::EQ, 0);
    each_token([&] {
      for_heads([&](int H) {
        b.muli(off, kb, H * row_bytes);
        b.ptr_add(ex1, e, off, 1);
        if (H == 1) {
          kqv(ex1, oh);
          return;
        }
        b.if_(tiny, Cmp::EQ, 0);
        kqv_heads(H, ex1, oh);
        b.end_if();
        b.if_(tiny16, Cmp::EQ, 1);
        kqv_rows(H, ex1, len, [&](V o, int i) {
          b.muli(off, hd_bytes, i);
          b.ptr_add(o, oh, off, 1);
        });
        b.end_if();
      });
    });
    b.end_if();
  };

  b.movi(hstep, 1);
  b.for_(h, h0, h1, hstep);
  b.mul(hoff, h, hd_bytes);
  b.div(hk, h, group);
  b.mul(off, hk, hd_bytes);
  b.ptr_add(kh, kc, off, 1);
  b.mul(off, hk, vhead_bytes);
  b.ptr_add(vh, vc, off, 1);

  // Heads h .. h + H - 1 go together (H = 4, else 2) when all are in [h0, h1) and in
  // h's KV group, on the pair path and with the vec_dot KQV (decode): `together` is H, or 1.
  // Their tokens go in blocks of TB (the pair path), else one by one.
  b.movi(together, 1);
  b.movi(TB, 1);
  if (L.parts == 1) {
    b.if_(heads_ok, Cmp::EQ, 1);
    b.div(tmp, h, group);
    for (int H : {2, kMaxHeads}) {
      b.addi(hn, h, H - 1);
      b.div(hg, hn, group);
      b.if_(hn, Cmp::LT, h1);
      b.if_(hg, Cmp::EQ, tmp);
      b.movi(together, H);
      b.end_if();
      b.end_if();
    }
    b.end_if();
    b.if_(pair_ok, Cmp::EQ, 1);
    b.movi(TB, kRows);
    b.div(TB, TB, together);
    b.end_if();
  } else {
    b.if_(tiny, Cmp::EQ, 1);  // T >= 2, tinyBLAS KQV
    b.movi(TB, kRowsAvx2);
    b.end_if();
  }
  b.mov(hstep, together);
  b.for_(t, zero, T, TB);
  b.sub(nt, T, t);
  b.min(nt, nt, TB);
  block();
  b.end_for();
  b.end_for();  // h
  return true;
}

}  // namespace

bool build_attention_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("attention_f32__avx512", Isa::Avx512, p, m, err);
}
bool build_attention_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("attention_f32__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
