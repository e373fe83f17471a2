#include "jit/gen_linear_q_tile.h"

namespace cke::jit::gen {

using namespace asmjit;
using namespace asmjit::x86;

FuncNode* begin_q_tile(Compiler& cc, QTileArgs& a, bool avx512) {
  FuncNode* f = cc.addFunc(FuncSignatureT<void, const uint8_t*, int64_t, int64_t, const int8_t*,
                                          const float*, float*, int64_t, int64_t>());
  f->frame().setAvxEnabled();
  f->frame().setAvxCleanup();
  if (avx512) f->frame().setAvx512Enabled();
  a.w = cc.newIntPtr("w");
  a.rb = cc.newInt64("row_bytes");
  a.nrows = cc.newInt64("nrows");
  a.aq = cc.newIntPtr("aq");
  a.ad = cc.newIntPtr("ad");
  a.y = cc.newIntPtr("y");
  a.ys = cc.newInt64("y_stride");
  a.nb = cc.newInt64("nblocks");
  const Gp* regs[] = {&a.w, &a.rb, &a.nrows, &a.aq, &a.ad, &a.y, &a.ys, &a.nb};
  for (uint32_t i = 0; i < 8; ++i) f->setArg(i, *regs[i]);
  return f;
}

std::vector<Gp> tile_rows(Compiler& cc, const QTileArgs& a, int rows) {
  Gp last = cc.newInt64("last");
  cc.lea(last, ptr(a.nrows, -1));
  std::vector<Gp> r;
  for (int i = 0; i < rows; ++i) {
    Gp p = cc.newIntPtr("row");
    if (i == 0) {
      cc.mov(p, a.w);
    } else {
      cc.mov(p, i);
      cc.cmp(p, last);
      cc.cmovg(p, last);
      cc.imul(p, a.rb);
      cc.add(p, a.w);
    }
    r.push_back(p);
  }
  return r;
}

}  // namespace cke::jit::gen
