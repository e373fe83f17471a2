#include "jit/gen_op.h"

#include <fmt/format.h>

#include <stdexcept>

namespace cke::jit::gen {

bool op_prologue(const GeneratorParams& params, std::string_view generator, Isa isa,
                 std::string_view what, kir::Module* m, std::string* err) {
  if (!int_params(params, generator, {}, err)) return false;
  m->isa = isa_features(isa);
  m->comment = fmt::format("generator {}: {}", generator, what);
  return true;
}

kir::V enter_range(kir::Builder& b, kir::V extent, kir::V begin, kir::V end, kir::V row_floats,
                   std::initializer_list<kir::V> rows) {
  ret_if(b, begin, kir::Cmp::LT, 0);
  b.if_(begin, kir::Cmp::GE, end);
  b.ret();
  b.end_if();
  b.if_(end, kir::Cmp::GT, extent);
  b.ret();
  b.end_if();
  b.sub(extent, end, begin);
  kir::V skip = b.i64("skip");
  b.mul(skip, begin, row_floats);
  for (kir::V p : rows) b.ptr_add(p, p, skip, 4);
  return skip;
}

void ret_unless_multiple(kir::Builder& b, kir::V n, int64_t multiple) {
  if (multiple <= 0 || (multiple & (multiple - 1)) != 0)
    throw std::logic_error("ret_unless_multiple: not a power of two");
  kir::V r = b.i64("rem");
  b.andi(r, n, multiple - 1);
  ret_if(b, r, kir::Cmp::NE, 0);
}

}  // namespace cke::jit::gen
