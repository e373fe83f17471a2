#include "kernels/registry.h"

namespace cke {
// Filled by the reference op kernels (kernels/ref/ops*.cpp).
std::span<const KernelSymbol> ref_op_symbols() { return {}; }
}  // namespace cke
