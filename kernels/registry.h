// The table of ahead-of-time kernels linked into this binary.
//
// A kernel map's `impl.function` names one of these symbols; loading a map whose symbol is
// not here is an error. The JIT glue and the emitted C call them by these names, with the
// argument kinds recorded here (derived from the C++ function type, so the table cannot
// disagree with the code), which the resolver checks against the map's `call_abi`.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

namespace cke {

// Every kernel argument is one machine word: a pointer, a 64-bit integer, or a float.
enum class ArgKind : uint8_t { Ptr, I64, F32 };

// The only dynamic values a kernel call may take (call_abi `runtime:<name>`): the position
// of the chunk's first token, the tokens in the chunk, and the cache cells visible after it.
// OutFirst and NOut are the plan's own, never a map's: the first token row and the number of
// rows its output tail computes (0 and n_tokens for every row's logits, n_tokens - 1 and 1
// for the last row's; plan.h). Seq is the plan's too: the sequence whose KV cells a call
// (or a batched decode's per-token step) reads and writes.
enum class RuntimeValue : uint8_t { Pos0, NTokens, NKv, OutFirst, NOut, Seq };

constexpr int kMaxKernelArgs = 16;

struct KernelSymbol {
  std::string_view name;
  void* fn;
  uint8_t n_args;
  ArgKind args[kMaxKernelArgs];
};

namespace detail {
template <class T>
constexpr ArgKind arg_kind() {
  if constexpr (std::is_pointer_v<T>)
    return ArgKind::Ptr;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ArgKind::I64;
  else {
    static_assert(std::is_same_v<T, float>, "kernel args are pointers, int64_t or float");
    return ArgKind::F32;
  }
}
template <class... A>
constexpr KernelSymbol make_symbol(std::string_view name, void (*fn)(A...)) {
  static_assert(sizeof...(A) <= kMaxKernelArgs);
  return KernelSymbol{name, reinterpret_cast<void*>(fn), uint8_t(sizeof...(A)), {arg_kind<A>()...}};
}
}  // namespace detail

// CKE_KERNEL_SYMBOL(fn): a table entry whose name is the function's own name.
#define CKE_KERNEL_SYMBOL(fn) ::cke::detail::make_symbol(#fn, &fn)

// All kernels linked in (reference kernels and any ahead-of-time ISA kernels).
std::span<const KernelSymbol> kernel_symbols();
const KernelSymbol* find_kernel_symbol(std::string_view name);

// Parts of the table, one per kernel family file (kernels/ref/registry_*.cpp).
std::span<const KernelSymbol> ref_linear_symbols();
std::span<const KernelSymbol> ref_op_symbols();

}  // namespace cke
