// Generated providers of the mixture-of-experts ops (circuits qwen3moe, llama.moe):
//
// linear_id (contracts linear_id.<w>.ggml, gen_linear_id.cpp): ggml's MUL_MAT_ID on the pairs
// grouped by expert (moe_group). Not a new quantized kernel: a small entry around a GENERATED
// LINEAR KERNEL of the same format (impl.params `linear`: its generator, with its own params,
// e.g. the tile), whose functions are copied into the module. For each expert e with pairs
// (sched: count c_e, first pair f_e) the entry calls that linear kernel once, on expert e's
// N rows (w + e * N * row_bytes(w, K)), the c_e activation rows of its pairs (x + f_e *
// row_bytes(x, K)) and their outputs (y + f_e * N), for the thread's rows [n0, n1): every
// expert's weights are read once per chunk, and a decode step (c_e = 1 for the selected
// experts, 0 for the rest) reads the selected experts' rows only. The arithmetic of an output
// is the linear kernel's for that (row, token), which is the single-token arithmetic of
// linear.<w>.ggml wherever the linear contract's arithmetic does not depend on T; for the
// repacked formats (q4_0x8, q4_Kx8, q2_Kx8), whose gemm differs from their gemv, the linear
// kernel is a gemv one (tokens 1, or `gemv: 1` tiles that run the gemv granule on every token).
// impl.params: linear (a linear generator of the same ISA level), w and x (the weight and
// activation dtypes, for the strides), and the linear generator's own parameters; none at all
// means the level's f32 (AVX-512 VNNI: q8_0, AVX512-BF16: bf16) linear kernel.
#pragma once

#include <cstdint>
#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// moe_gather (contract moe_gather.f32.ggml, gen_moe_ops.cpp): y[j] = x[rows[j]] for pairs
// [j0, j1), rows of n floats copied by 16-lane loads and stores, then the tail.
// moe_combine (contract moe_combine.f32.ggml, gen_moe_ops.cpp): per token, y = fl(x[pos0] *
// w0), then y = fl(y + fl(x[pos_s] * w_s)) slot by slot; 16-lane groups, then the tail.
using MoeGatherFn = void (*)(const float* x, const int32_t* rows, float* y, int64_t n, int64_t P,
                             int64_t j0, int64_t j1);
using MoeCombineFn = void (*)(const float* x, const float* weights, const int32_t* rows, float* y,
                              int64_t n, int64_t n_used, int64_t T, int64_t t0, int64_t t1);
bool build_moe_gather_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_moe_gather_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_moe_combine_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_moe_combine_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

// moe_route (contract moe_route.softmax_norm.f32.ggml, gen_moe_route.cpp): per token, ggml's
// soft_max over the E router logits (16-lane ggml_v_expf groups, libm expf tail), the top
// n_used by selection (ties and NaN rows by ggml's std::sort through a C helper), the
// normalised weights. moe_group (contract moe_group.i32.ggml): the counting sort of the
// chunk's (token, slot) pairs by expert. Both keep a row of E values on the frame: E is at
// most kMoeMaxExperts (the maps' shape predicate; a larger E writes nothing).
constexpr int64_t kMoeMaxExperts = 512;
using MoeRouteFn = void (*)(const float* logits, int32_t* ids, float* weights, int64_t E,
                            int64_t n_used, int64_t T, int64_t t0, int64_t t1);
using MoeGroupFn = void (*)(const int32_t* ids, int32_t* sched, int32_t* rows, int64_t E,
                            int64_t n_used, int64_t T);
bool build_moe_route_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_moe_route_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_moe_group_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

// The ABI of linear_id_<w>_f32__ref (kernels/ref/linear.h).
using LinearIdFn = void (*)(const void* x, const void* w, const int32_t* sched, float* y, int64_t K,
                            int64_t N, int64_t E, int64_t P, int64_t n0, int64_t n1);

bool build_linear_id_avx512vnni(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_id_avx512bf16(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_id_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_linear_id_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen

// The C helpers of the generated moe_route (exported: the emitted C links against them).
// expf: v[i] = libm expf(v[i]), i < n. topk: ids = the first n_used of ggml's argsort of p.
extern "C" void cke_moe_expf(float* v, int64_t n);
extern "C" void cke_moe_topk(const float* p, int32_t* ids, int64_t n, int64_t n_used);
