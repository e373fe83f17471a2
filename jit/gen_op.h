// The prologue every elementwise / per-row op generator shares (rmsnorm, glu, add, kv_store,
// rope, scale, add_bias): no impl.params, the features of its ISA level, the C header
// comment, the entry function with the op's ABI; and the guard of a row width the map
// admits only in multiples of a lane group.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "jit/gen_tile.h"
#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// Rejects any impl.params (these generators take none), sets m->isa from `isa` and
// m->comment to "generator <generator>: <what>". False and *err on a parameter.
bool op_prologue(const GeneratorParams& params, std::string_view generator, Isa isa,
                 std::string_view what, kir::Module* m, std::string* err);

// The range ABI of a row-wise op the plan splits (kernels/ref/ops.h): rows [begin, end) of
// `extent`. Returns from the kernel (nothing written) unless 0 <= begin < end <= extent,
// else sets extent = end - begin and moves each float pointer in `rows` on by `begin` rows
// of `row_floats` floats: the body then runs as a call of that many rows (positions, where
// an op has them, are the caller's to move). Returns begin * row_floats, for a pointer whose
// rows are a multiple of that width.
kir::V enter_range(kir::Builder& b, kir::V extent, kir::V begin, kir::V end, kir::V row_floats,
                   std::initializer_list<kir::V> rows);

// `if (n % multiple != 0) return;` (multiple: a power of two): a call outside the shapes
// the map admits writes nothing.
void ret_unless_multiple(kir::Builder& b, kir::V n, int64_t multiple);

}  // namespace cke::jit::gen
