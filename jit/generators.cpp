#include "jit/generators.h"

#include <array>

#include "jit/gen_linear_f32.h"
#include "jit/gen_linear_q.h"
#include "jit/jit_runtime.h"

namespace cke::jit {

KernelModule::KernelModule(std::string name, void* code, size_t code_size, void* entry,
                           std::shared_ptr<const void> state)
    : name_(std::move(name)),
      code_(code),
      code_size_(code_size),
      entry_(entry),
      state_(std::move(state)) {}

KernelModule::~KernelModule() {
  if (code_) runtime().release(code_);
}

namespace {

// A table entry whose argument kinds come from the function type, as CKE_KERNEL_SYMBOL
// derives them for the ahead-of-time kernels.
template <size_t NI, class... A>
constexpr Generator make_generator(std::string_view name, std::string_view summary,
                                   const std::string_view (&isa)[NI], void (*)(A...),
                                   GenerateFn generate) {
  static_assert(sizeof...(A) <= kMaxKernelArgs && NI <= kMaxGeneratorIsa);
  Generator g{
      name,    summary, uint8_t(NI), {}, uint8_t(sizeof...(A)), {cke::detail::arg_kind<A>()...},
      generate};
  for (size_t i = 0; i < NI; ++i) g.isa[i] = isa[i];
  return g;
}

// The AVX-512 kernels also name the AVX2-era features: asmjit encodes an instruction on
// xmm/ymm 0-15 with VEX when it can (vfmadd, vcvtph2ps, vpbroadcastw, ...).
constexpr std::string_view kAvx512Vnni[] = {"avx2",     "fma",      "f16c",      "avx512f",
                                            "avx512bw", "avx512vl", "avx512vnni"};
constexpr std::string_view kAvx512[] = {"avx2", "fma", "f16c", "avx512f", "avx512vl"};
constexpr std::string_view kAvx2[] = {"avx2", "fma", "f16c"};
constexpr LinearFn kLinear = nullptr;

const std::array<Generator, 5> kGenerators = {
    make_generator("linear_q8_0_f32__avx512vnni",
                   "q8_0 linear, ggml vec_dot lanes, 2 rows per zmm, vpdpbusd", kAvx512Vnni,
                   kLinear, &gen::generate_linear_q8_0_avx512vnni),
    make_generator("linear_q4_0_f32__avx512vnni",
                   "q4_0 linear, vec_dot lanes (N % 8 != 0) or repacked gemm/gemv (N % 8 == 0)",
                   kAvx512Vnni, kLinear, &gen::generate_linear_q4_0_avx512vnni),
    make_generator("linear_f32_f32__avx512",
                   "f32 linear, ggml_vec_dot_f32 4x16 accumulators, reduce_add tree", kAvx512,
                   kLinear, &gen::generate_linear_f32_avx512),
    make_generator("linear_q8_0_f32__avx2", "q8_0 linear, ggml vec_dot lanes, vpmaddubsw", kAvx2,
                   kLinear, &gen::generate_linear_q8_0_avx2),
    make_generator("linear_q4_0_f32__avx2",
                   "q4_0 linear, vec_dot lanes (N % 8 != 0) or repacked gemm/gemv (N % 8 == 0)",
                   kAvx2, kLinear, &gen::generate_linear_q4_0_avx2),
};

}  // namespace

std::span<const Generator> generators() {
  return kGenerators;
}

const Generator* find_generator(std::string_view name) {
  for (const Generator& g : kGenerators)
    if (g.name == name) return &g;
  return nullptr;
}

std::unique_ptr<KernelModule> generate_kernel(std::string_view name, const GeneratorParams& params,
                                              std::string* err) {
  const Generator* g = find_generator(name);
  if (!g) {
    *err = "unknown JIT generator '" + std::string(name) + "'";
    return nullptr;
  }
  return g->generate(params, err);
}

}  // namespace cke::jit
