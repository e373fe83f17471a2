// Generated data-movement and elementwise providers with nothing to round differently:
// add (contract add.f32.ggml: y = fl(a + b) per element), add_bias (add_bias.f32.ggml:
// y[t][i] = fl(x[t][i] + b[i])), scale (scale.f32.ggml: y = fl(x * s)) and kv_store
// (kv_store.f32.ggml: K rows copied, V transposed into the cache; kv_store.f16.ggml: both
// converted to fp16, cell-major). Vectors where the data is
// contiguous, the same scalar operation elsewhere (row tails); bit-identical to the
// *_ref kernels. y may alias an input: each element is read before it is written.
#pragma once

#include <string>

#include "jit/generators.h"
#include "jit/kir/kir.h"

namespace cke::jit::gen {

// The ABIs of the *_ref kernels (each the range ABI of kernels/ref/ops.h).
using AddFn = void (*)(const float* a, const float* b, float* y, int64_t n, int64_t begin,
                       int64_t end);
using AddBiasFn = void (*)(const float* x, const float* b, float* y, int64_t n, int64_t T,
                           int64_t begin, int64_t end);
using ScaleFn = void (*)(const float* x, float* y, int64_t n, float s, int64_t begin, int64_t end);
using KvStoreFn = void (*)(const float* k, const float* v, float* k_cache, float* v_cache,
                           int64_t kv_dim, int64_t n_ctx, int64_t pos0, int64_t T, int64_t begin,
                           int64_t end);
using KvStoreF16Fn = void (*)(const float* k, const float* v, uint16_t* k_cache, uint16_t* v_cache,
                              int64_t kv_dim, int64_t n_ctx, int64_t pos0, int64_t T, int64_t begin,
                              int64_t end);

// impl.params: none.
bool build_add_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_add_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_add_bias_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_add_bias_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_scale_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_scale_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_kv_store_f32_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_kv_store_f32_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_kv_store_f16_avx512(const GeneratorParams& p, kir::Module* m, std::string* err);
bool build_kv_store_f16_avx2(const GeneratorParams& p, kir::Module* m, std::string* err);

}  // namespace cke::jit::gen
