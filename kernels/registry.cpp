#include "kernels/registry.h"

#include <vector>

namespace cke {

std::span<const KernelSymbol> kernel_symbols() {
  static const std::vector<KernelSymbol> all = [] {
    std::vector<KernelSymbol> v;
    for (auto part : {ref_linear_symbols(), ref_op_symbols()}) v.insert(v.end(), part.begin(), part.end());
    return v;
  }();
  return all;
}

const KernelSymbol* find_kernel_symbol(std::string_view name) {
  for (const KernelSymbol& s : kernel_symbols())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace cke
