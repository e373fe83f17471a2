// The table of kernel generators: what a kernel map's `impl.generator` names, as
// `impl.function` names an entry of kernels/registry.h.
//
// A generator writes, for its parameters (the map's impl.params: tile sizes), one kernel
// in KIR (jit/kir/kir.h) with the calling convention of the ahead-of-time kernels of its
// op (its argument kinds are recorded here, as the kernel table records them, so the
// resolver can check a map's call_abi against them). KIR renders twice: as machine code
// (generate_kernel: a KernelModule in the JIT runtime, valid while the module lives) and
// as C (kernel_c_source, for --emit-c). The kernel, its C function and its JIT symbol are
// all named by the provider id. A kernel serves every shape its map admits (dims are
// run-time arguments), so one module per provider id is enough for a whole plan.
//
// Generation never checks the machine it runs on: emitting AVX-512 code on an AVX2 host is
// fine, *calling* it is not. `isa` lists the CPU features the code uses, by the names of
// kernel maps' `requires.isa` (resolver/features.h); the resolver or the caller checks
// them against a HostCaps before running the kernel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kernels/registry.h"

namespace cke::jit::kir {
struct Module;
}

namespace cke::jit {

// impl.params of a kernel map (all values as written in YAML).
using GeneratorParams = std::map<std::string, std::string>;

// Machine code (one or more functions placed in the JIT runtime as one block): a generated
// kernel or a phase's glue. Releases the code on destruction.
class KernelModule {
 public:
  KernelModule(std::string name, void* code, size_t code_size, void* entry);
  ~KernelModule();
  KernelModule(const KernelModule&) = delete;
  KernelModule& operator=(const KernelModule&) = delete;

  const std::string& name() const { return name_; }
  // The kernel, with the argument kinds of its Generator.
  void* entry() const { return entry_; }
  template <class Fn>
  Fn entry_as() const {
    return reinterpret_cast<Fn>(entry_);
  }
  // The machine code (entry + inner loops): code_size() bytes at code().
  const void* code() const { return code_; }
  size_t code_size() const { return code_size_; }

 private:
  std::string name_;
  void* code_ = nullptr;
  size_t code_size_ = 0;
  void* entry_ = nullptr;
};

// Writes the kernel into m (whose name is already the provider id); false and *err on a
// parameter it does not take.
using BuildFn = bool (*)(const GeneratorParams& params, kir::Module* m, std::string* err);

constexpr int kMaxGeneratorIsa = 8;

struct Generator {
  std::string_view name;  // impl.generator; by convention the provider id it serves
  std::string_view summary;
  uint8_t n_isa;
  std::string_view isa[kMaxGeneratorIsa];  // features the code needs (requires.isa names)
  uint8_t n_args;
  ArgKind args[kMaxKernelArgs];  // the entry's arguments, as KernelSymbol::args
  BuildFn build;
  // Takes `decode_group` (1..8, default 8): its decode provider (tokens 1) runs a batch of
  // decode tokens in groups of that many, one tile per group size.
  bool decode_group = false;
};

// The linear ABI of kernels/ref/linear.h, which every linear generator emits (x: the
// activations in the contract's converted type).
using LinearFn = void (*)(const void* x, const void* w, float* y, int64_t K, int64_t N, int64_t T,
                          int64_t n0, int64_t n1);

// The parameters a plan generates a provider with: the map's, plus decode_group 1 for a
// decode provider that may batch decode tokens (`decode_batch`: its selection.decode_batch)
// of a generator that takes it, when the plan never batches them (one sequence). Its tiles
// for 2..8 tokens would be dead code there, and they are most of the code: 20 ms of the
// q6_K_r16 decode kernel's 25 ms of JIT. The kernel stays correct for any T (one token per
// group); the JIT and --emit-c use the same parameters, so they emit the same kernel.
// (An unknown generator gets the map's parameters; generating then reports it.)
//
// decode_prefetch false (the host's HostCaps::decode_stream_prefetch) adds "decode_prefetch":
// "0": the kernel's one-token tiles do not prefetch their weight stream (jit/gen_tile.h).
// build_kernel takes that parameter for any generator. Neither changes a bit of the results.
constexpr std::string_view kDecodePrefetchParam = "decode_prefetch";
GeneratorParams plan_params(std::string_view generator, const GeneratorParams& map_params,
                            bool decode_batch, bool plan_batches, bool decode_prefetch);

std::span<const Generator> generators();
const Generator* find_generator(std::string_view name);
// The KIR of provider `id` from generator `name`; false and *err for an unknown generator or
// parameter.
bool build_kernel(std::string_view name, const GeneratorParams& params, const std::string& id,
                  kir::Module* out, std::string* err);
// build_kernel + the machine-code sink.
std::unique_ptr<KernelModule> generate_kernel(std::string_view name, const GeneratorParams& params,
                                              const std::string& id, std::string* err);
// build_kernel + the C sink: the kernel as a C function named `id`.
bool kernel_c_source(std::string_view name, const GeneratorParams& params, const std::string& id,
                     std::string* c, std::string* err);

}  // namespace cke::jit
