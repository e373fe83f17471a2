// A generated provider of kernel_maps/ loaded three ways for a bit comparison: its machine
// code (the JIT), its emitted C compiled with --run-emitted's flags, and the reference
// kernel of its contract. One loader for the per-op harnesses (test_jit_attention.cpp,
// test_jit_ops.cpp, test_jit_act_quant.cpp).
#pragma once

#include <memory>
#include <string>

#include "jit/generators.h"
#include "jit_test_util.h"
#include "resolver/registry.h"

namespace cke::test {

struct GeneratedKernelRaw {
  const KernelMap* map = nullptr;
  std::unique_ptr<jit::KernelModule> module;
  std::unique_ptr<CompiledC> c;
  void *fn = nullptr, *cfn = nullptr, *ref = nullptr;
};

// Provider `id` of op `op` with an impl.generator: ADD_FAILURE when it is absent or does
// not generate, compile or have a reference; *skip when the host lacks its ISA.
GeneratedKernelRaw load_generated_raw(const std::string& id, const std::string& op,
                                      std::string* skip);

template <class Fn>
struct GeneratedKernel {
  const KernelMap* map = nullptr;
  std::unique_ptr<jit::KernelModule> module;
  std::unique_ptr<CompiledC> c;
  Fn fn = nullptr, cfn = nullptr, ref = nullptr;
};

template <class Fn>
GeneratedKernel<Fn> load_generated(const std::string& id, const std::string& op,
                                   std::string* skip) {
  GeneratedKernelRaw r = load_generated_raw(id, op, skip);
  GeneratedKernel<Fn> k;
  k.map = r.map;
  k.module = std::move(r.module);
  k.c = std::move(r.c);
  k.fn = reinterpret_cast<Fn>(r.fn);
  k.cfn = reinterpret_cast<Fn>(r.cfn);
  k.ref = reinterpret_cast<Fn>(r.ref);
  return k;
}

}  // namespace cke::test
