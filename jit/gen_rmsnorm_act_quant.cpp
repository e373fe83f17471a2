// rmsnorm_act_quant generators (gen_rmsnorm.h): rmsnorm's rows and the q8_0 quantizer's
// rows in one function, four rows at a time, so the quantizer reads the normed rows from L1.
#include "jit/gen_act_quant.h"
#include "jit/gen_op.h"
#include "jit/gen_rmsnorm.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Cmp;
using kir::Kind;
using kir::V;

bool build(const char* generator, Isa isa, const GeneratorParams& params, kir::Module* m,
           std::string* err) {
  if (!op_prologue(params, generator, isa,
                   "contract rmsnorm_act_quant.q8_0.ggml: rmsnorm.f32.ggml then\n"
                   "act_quant.q8_0.ggml on each row (both written: xn and its q8_0 blocks)",
                   m, err))
    return false;
  Builder b(*m, m->name,
            {Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64, Kind::F32, Kind::I64,
             Kind::I64});
  const V x = b.arg(0), w = b.arg(1), xn = b.arg(2), y = b.arg(3), n = b.arg(4), rows = b.arg(5),
          eps = b.arg(6), r0 = b.arg(7), r1 = b.arg(8);
  ret_if(b, n, Cmp::LE, 0);
  ret_unless_multiple(b, n, 32);  // a row is whole q8_0 blocks (and 16-lane groups)
  const V skip = enter_range(b, rows, r0, r1, n, {x, xn});  // rows = r1 - r0, from row r0
  V blocks = b.i64("skip_blocks");
  b.sari(blocks, skip, 5);
  b.ptr_add(y, y, blocks, kQ8_0.block_bytes);

  RmsNormRows norm(b, isa, n, eps);
  Q8Rows quant(b, kQ8_0, n);
  V r = b.i64("r"), k = b.i64("k"), rows4 = b.i64("rows4"), off = b.i64("off");
  V xrow = b.ptr("xrow"), yrow = b.ptr("yrow");
  // Rows [r, r + R) normed into xn, then each quantized from there (still in L1).
  auto rows_at = [&](int R) {
    norm.emit(x, w, xn, r, R);
    for (int j = 0; j < R; ++j) {
      b.addi(k, r, j);
      b.mul(off, k, quant.xrow_bytes());
      b.ptr_add(xrow, xn, off, 1);
      b.mul(off, k, quant.yrow_bytes());
      b.ptr_add(yrow, y, off, 1);
      quant.row(xrow, yrow);
    }
  };
  b.andi(rows4, rows, ~int64_t(3));
  b.for_(r, b.imm(0, "zero"), rows4, b.imm(4, "four"));
  rows_at(4);
  b.end_for();
  b.for_(r, rows4, rows, b.imm(1, "one_i"));
  rows_at(1);
  b.end_for();
  return true;
}

}  // namespace

bool build_rmsnorm_act_quant_q8_0_avx512(const GeneratorParams& p, kir::Module* m,
                                         std::string* err) {
  return build("rmsnorm_act_quant_q8_0__avx512", Isa::Avx512, p, m, err);
}
bool build_rmsnorm_act_quant_q8_0_avx2(const GeneratorParams& p, kir::Module* m, std::string* err) {
  return build("rmsnorm_act_quant_q8_0__avx2", Isa::Avx2, p, m, err);
}

}  // namespace cke::jit::gen
