#include "jit/generators.h"

#include <fmt/format.h>

#include <array>

#include "jit/gen_act_quant.h"
#include "jit/gen_act_quant_k.h"
#include "jit/gen_attention.h"
#include "jit/gen_attention_flash.h"
#include "jit/gen_elementwise.h"
#include "jit/gen_embed.h"
#include "jit/gen_families.h"
#include "jit/gen_glu.h"
#include "jit/gen_linear_bf16.h"
#include "jit/gen_linear_f32.h"
#include "jit/gen_linear_kquant.h"
#include "jit/gen_linear_q.h"
#include "jit/gen_linear_q4_K.h"
#include "jit/gen_linear_q6_K.h"
#include "jit/gen_linear_tinyblas.h"
#include "jit/gen_linear_tinyblas_wide.h"
#include "jit/gen_moe.h"
#include "jit/gen_rmsnorm.h"
#include "jit/gen_rope.h"
#include "jit/gen_tile.h"
#include "jit/jit_runtime.h"
#include "jit/kir/kir_asmjit.h"
#include "jit/kir/kir_c.h"

namespace cke::jit {

KernelModule::KernelModule(std::string name, void* code, size_t code_size, void* entry)
    : name_(std::move(name)), code_(code), code_size_(code_size), entry_(entry) {}

KernelModule::~KernelModule() {
  if (code_) runtime().release(code_);
}

namespace {

// A table entry whose argument kinds come from the function type, as CKE_KERNEL_SYMBOL
// derives them for the ahead-of-time kernels.
template <size_t NI, class... A>
constexpr Generator make_generator(std::string_view name, std::string_view summary,
                                   const std::string_view (&isa)[NI], void (*)(A...),
                                   BuildFn build) {
  static_assert(sizeof...(A) <= kMaxKernelArgs && NI <= kMaxGeneratorIsa);
  Generator g{
      name, summary, uint8_t(NI), {}, uint8_t(sizeof...(A)), {cke::detail::arg_kind<A>()...},
      build};
  for (size_t i = 0; i < NI; ++i) g.isa[i] = isa[i];
  return g;
}

// A generator that takes decode_group (Generator::decode_group).
constexpr Generator with_decode_group(Generator g) {
  g.decode_group = true;
  return g;
}

// The features each level's code uses (gen_tile.h isa_features; checked equal by a test).
constexpr std::string_view kAvx512Vnni[] = {"avx2",     "fma",      "f16c",      "avx512f",
                                            "avx512bw", "avx512vl", "avx512vnni"};
constexpr std::string_view kAvx512Bf16[] = {"avx2",     "fma",      "f16c",      "avx512f",
                                            "avx512bw", "avx512vl", "avx512bf16"};
constexpr std::string_view kAvx512[] = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl"};
constexpr std::string_view kAvx2[] = {"avx2", "fma", "f16c"};
constexpr std::string_view kAvxVnni[] = {"avx2", "fma", "f16c", "avxvnni"};
constexpr LinearFn kLinear = nullptr;

constexpr gen::AttentionFn kAttention = nullptr;
constexpr gen::AttentionF16Fn kAttentionF16 = nullptr;
constexpr gen::GluFn kGlu = nullptr;
constexpr gen::RmsNormFn kRmsNorm = nullptr;
constexpr gen::RmsNormActQuantFn kRmsNormActQuant = nullptr;
constexpr gen::AddFn kAdd = nullptr;
constexpr gen::KvStoreFn kKvStore = nullptr;
constexpr gen::KvStoreF16Fn kKvStoreF16 = nullptr;
constexpr gen::AddBiasFn kAddBias = nullptr;
constexpr gen::ScaleFn kScale = nullptr;
constexpr gen::ActQuantFn kActQuant = nullptr;
constexpr gen::EmbedFn kEmbed = nullptr;
constexpr gen::RopeFn kRope = nullptr;
constexpr gen::LayerNormFn kLayerNorm = nullptr;
constexpr gen::ReluSqrFn kReluSqr = nullptr;
constexpr gen::GluFusedFn kGluFused = nullptr;
constexpr gen::LinearIdFn kLinearId = nullptr;
constexpr gen::MoeGatherFn kMoeGather = nullptr;
constexpr gen::MoeCombineFn kMoeCombine = nullptr;
constexpr gen::MoeRouteFn kMoeRoute = nullptr;
constexpr gen::MoeGroupFn kMoeGroup = nullptr;

const std::array<Generator, 160> kGenerators = {
    make_generator("linear_q8_0__avx512vnni",
                   "q8_0 linear, ggml vec_dot lanes, 2 rows per zmm, vpdpbusd", kAvx512Vnni,
                   kLinear, &gen::build_linear_q8_0_avx512vnni),
    make_generator("linear_q4_0__avx512vnni",
                   "q4_0 linear, ggml vec_dot lanes (contract linear.q4_0.ggml)", kAvx512Vnni,
                   kLinear, &gen::build_linear_q4_0_avx512vnni),
    make_generator("linear_q4_0x8__avx512vnni",
                   "q4_0 linear, ggml's repacked 8x8 gemm/gemv (contract linear.q4_0x8.ggml)",
                   kAvx512Vnni, kLinear, &gen::build_linear_q4_0x8_avx512vnni),
    make_generator("linear_q4_0_r16__avx512vnni",
                   "q4_0 linear on the q4_0_r16 weight copy, ggml's repacked 8x8 arithmetic "
                   "(contract linear.q4_0x8.ggml)",
                   kAvx512Vnni, kLinear, &gen::build_linear_q4_0_r16_avx512vnni),
    make_generator("linear_q8_0_r16__avx512vnni",
                   "q8_0 linear on the q8_0_r16 weight copy, ggml vec_dot lanes, lane j of 16 "
                   "rows per zmm (contract linear.q8_0.ggml)",
                   kAvx512Vnni, kLinear, &gen::build_linear_q8_0_r16_avx512vnni),
    make_generator("linear_q5_0_r16__avx512vnni",
                   "q5_0 linear on the q5_0_r16 weight copy, ggml vec_dot lanes, lane j of 16 "
                   "rows per zmm, made from nibbles and high bits (contract linear.q5_0.ggml)",
                   kAvx512Vnni, kLinear, &gen::build_linear_q5_0_r16_avx512vnni),
    make_generator("linear_q4_1_r16__avx512vnni",
                   "q4_1 linear on the q4_1_r16 weight copy, ggml vec_dot lanes, lane j of 16 "
                   "rows per zmm, with the min term (contract linear.q4_1.ggml)",
                   kAvx512Vnni, kLinear, &gen::build_linear_q4_1_r16_avx512vnni),
    make_generator("linear_q5_1_r16__avx512vnni",
                   "q5_1 linear on the q5_1_r16 weight copy, ggml vec_dot lanes, lane j of 16 "
                   "rows per zmm, with the min term (contract linear.q5_1.ggml)",
                   kAvx512Vnni, kLinear, &gen::build_linear_q5_1_r16_avx512vnni),
    make_generator("linear_q6_K__avx512vnni",
                   "q6_K linear, ggml vec_dot_q6_K lanes, two chunks per zmm, vpdpbusd",
                   kAvx512Vnni, kLinear, &gen::build_linear_q6_K_avx512vnni),
    with_decode_group(make_generator(
        "linear_q6_K_r16__avx512vnni",
        "q6_K linear on the q6_K_r16 weight copy, ggml vec_dot_q6_K lanes, lane j of "
        "16 rows per zmm (contract linear.q6_K.ggml)",
        kAvx512Vnni, kLinear, &gen::build_linear_q6_K_r16_avx512vnni)),
    make_generator("linear_q4_Kx8__avx512vnni",
                   "q4_K linear, ggml's repacked q4_K_8x8 gemm/gemv, one lane per row of 16",
                   kAvx512Vnni, kLinear, &gen::build_linear_q4_Kx8_avx512vnni),
    with_decode_group(make_generator(
        "linear_q4_K_r16__avx512vnni",
        "q4_K linear on the q4_K_r16 weight copy, ggml's repacked q4_K_8x8 arithmetic "
        "(contract linear.q4_Kx8.ggml)",
        kAvx512Vnni, kLinear, &gen::build_linear_q4_K_r16_avx512vnni)),
    with_decode_group(make_generator(
        "linear_q2_K_r16__avx512vnni",
        "q2_K linear on the q2_K_r16 weight copy, ggml's repacked q2_K_8x8 arithmetic "
        "(contract linear.q2_Kx8.ggml)",
        kAvx512Vnni, kLinear, &gen::build_linear_q2_K_r16_avx512vnni)),
    make_generator("linear_f32__avx512",
                   "f32 linear, ggml_vec_dot_f32 4x16 accumulators, reduce_add tree", kAvx512,
                   kLinear, &gen::build_linear_f32_avx512),
    make_generator("linear_q8_0__avx2", "q8_0 linear, ggml vec_dot lanes, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q8_0_avx2),
    make_generator("linear_q4_0__avx2",
                   "q4_0 linear, ggml vec_dot lanes (contract linear.q4_0.ggml)", kAvx2, kLinear,
                   &gen::build_linear_q4_0_avx2),
    make_generator("linear_q4_0x8__avx2",
                   "q4_0 linear, ggml's repacked 8x8 gemm/gemv (contract linear.q4_0x8.ggml)",
                   kAvx2, kLinear, &gen::build_linear_q4_0x8_avx2),
    make_generator("linear_q4_0_r16__avx2",
                   "q4_0 linear on the q4_0_r16 weight copy, ggml's repacked 8x8 gemv / gemm "
                   "(contract linear.q4_0x8.ggml), 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q4_0_r16_avx2),
    make_generator("linear_q8_0_r16__avx2",
                   "q8_0 linear on the q8_0_r16 weight copy, ggml vec_dot lanes (sign-move "
                   "products), lane j of 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q8_0_r16_avx2),
    make_generator("linear_q4_1_r16__avx2",
                   "q4_1 linear on the q4_1_r16 weight copy, ggml vec_dot lanes with the min "
                   "term, lane j of 8 rows a ymm (contract linear.q4_1.ggml)",
                   kAvx2, kLinear, &gen::build_linear_q4_1_r16_avx2),
    make_generator("linear_q5_1_r16__avx2",
                   "q5_1 linear on the q5_1_r16 weight copy, ggml vec_dot lanes with the min "
                   "term, lane j of 8 rows a ymm (contract linear.q5_1.ggml)",
                   kAvx2, kLinear, &gen::build_linear_q5_1_r16_avx2),
    make_generator("linear_q5_0_r16__avx2",
                   "q5_0 linear on the q5_0_r16 weight copy, ggml vec_dot lanes (sign-move "
                   "products), lane j of 8 rows a ymm, made from nibbles and high bits",
                   kAvx2, kLinear, &gen::build_linear_q5_0_r16_avx2),
    make_generator("linear_q4_K_r16__avx2",
                   "q4_K decode linear on the q4_K_r16 weight copy, ggml's repacked q4_K_8x8 "
                   "gemv (contract linear.q4_Kx8.ggml), 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q4_K_r16_avx2),
    make_generator("linear_q6_K_r16__avx2",
                   "q6_K linear on the q6_K_r16 weight copy, ggml_vec_dot_q6_K lanes (1..4 tokens) "
                   "(contract linear.q6_K.ggml), lane j of 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q6_K_r16_avx2),
    make_generator("linear_q5_K_r16__avx2",
                   "q5_K linear on the q5_K_r16 weight copy, ggml_vec_dot_q5_K lanes (1..4 tokens) "
                   "(contract linear.q5_K.ggml), lane j of 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q5_K_r16_avx2),
    make_generator("linear_q3_K_r16__avx2",
                   "q3_K linear on the q3_K_r16 weight copy, ggml_vec_dot_q3_K lanes (1..4 tokens) "
                   "(contract linear.q3_K.ggml), lane j of 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q3_K_r16_avx2),
    make_generator("linear_q2_K_r16__avx2",
                   "q2_K decode linear on the q2_K_r16 weight copy, ggml's repacked q2_K_8x8 "
                   "gemv (contract linear.q2_Kx8.ggml), 8 rows a ymm",
                   kAvx2, kLinear, &gen::build_linear_q2_K_r16_avx2),
    make_generator("linear_q6_K__avx2",
                   "q6_K linear, ggml vec_dot_q6_K lanes, one chunk per ymm, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q6_K_avx2),
    make_generator("linear_q5_K__avx512vnni",
                   "q5_K linear, ggml vec_dot_q5_K lanes, two chunks per zmm, vpdpwssd",
                   kAvx512Vnni, kLinear, &gen::build_linear_q5_K_avx512vnni),
    with_decode_group(make_generator(
        "linear_q5_K_r16__avx512vnni",
        "q5_K linear on the q5_K_r16 weight copy, ggml vec_dot_q5_K lanes, lane j of "
        "16 rows per zmm (contract linear.q5_K.ggml)",
        kAvx512Vnni, kLinear, &gen::build_linear_q5_K_r16_avx512vnni)),
    with_decode_group(make_generator(
        "linear_q3_K_r16__avx512vnni",
        "q3_K linear on the q3_K_r16 weight copy, ggml vec_dot_q3_K lanes, lane j of "
        "16 rows per zmm (contract linear.q3_K.ggml)",
        kAvx512Vnni, kLinear, &gen::build_linear_q3_K_r16_avx512vnni)),
    make_generator("linear_q5_K__avx2",
                   "q5_K linear, ggml vec_dot_q5_K lanes, one chunk per ymm, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q5_K_avx2),
    make_generator("linear_q3_K__avx512vnni",
                   "q3_K linear, ggml vec_dot_q3_K lanes, two chunks per zmm, vpdpwssd",
                   kAvx512Vnni, kLinear, &gen::build_linear_q3_K_avx512vnni),
    make_generator("linear_q3_K__avx2",
                   "q3_K linear, ggml vec_dot_q3_K lanes, one chunk per ymm, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q3_K_avx2),
    make_generator("linear_q2_K__avx512vnni",
                   "q2_K linear, ggml vec_dot_q2_K lanes, two chunks per zmm, vpdpwssd",
                   kAvx512Vnni, kLinear, &gen::build_linear_q2_K_avx512vnni),
    make_generator("linear_q2_K__avx2",
                   "q2_K linear, ggml vec_dot_q2_K lanes, one chunk per ymm, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q2_K_avx2),
    make_generator("linear_q4_K__avx512vnni",
                   "q4_K linear, ggml vec_dot_q4_K lanes, two chunks per zmm, vpdpwssd",
                   kAvx512Vnni, kLinear, &gen::build_linear_q4_K_avx512vnni),
    make_generator("linear_q4_K__avx2",
                   "q4_K linear, ggml vec_dot_q4_K lanes, one chunk per ymm, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q4_K_avx2),
    make_generator("linear_q2_Kx8__avx512vnni",
                   "q2_K linear, ggml's repacked q2_K_8x8 gemm/gemv, one lane per row of 16",
                   kAvx512Vnni, kLinear, &gen::build_linear_q2_Kx8_avx512vnni),
    make_generator("linear_q2_Kx8__avx2",
                   "q2_K linear, ggml's repacked q2_K_8x8 gemm/gemv, one lane per row of 8", kAvx2,
                   kLinear, &gen::build_linear_q2_Kx8_avx2),
    make_generator("linear_q4_Kx8__avx2",
                   "q4_K linear, ggml's repacked q4_K_8x8 gemm/gemv, one lane per row of 8", kAvx2,
                   kLinear, &gen::build_linear_q4_Kx8_avx2),
    // AVX-VNNI (ymm vpdpbusd, VEX): the AVX2 tiles' integer dot in one instruction, for
    // hosts that have it without AVX-512 (and for AVX2-capped runs on those that have both).
    make_generator("linear_q8_0__avxvnni", "q8_0 linear, ggml vec_dot lanes, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q8_0_avxvnni),
    make_generator("linear_q4_0__avxvnni",
                   "q4_0 linear, ggml vec_dot lanes (contract linear.q4_0.ggml), AVX-VNNI",
                   kAvxVnni, kLinear, &gen::build_linear_q4_0_avxvnni),
    make_generator("linear_q4_0x8__avxvnni",
                   "q4_0 linear, ggml's repacked 8x8 gemm/gemv (contract linear.q4_0x8.ggml), "
                   "AVX-VNNI",
                   kAvxVnni, kLinear, &gen::build_linear_q4_0x8_avxvnni),
    make_generator("linear_q4_0_r16__avxvnni",
                   "q4_0 linear on the q4_0_r16 weight copy, ggml's repacked 8x8 gemv / gemm "
                   "(contract linear.q4_0x8.ggml), AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q4_0_r16_avxvnni),
    make_generator("linear_q8_0_r16__avxvnni",
                   "q8_0 linear on the q8_0_r16 weight copy, ggml vec_dot lanes, lane j of 8 "
                   "rows a ymm, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q8_0_r16_avxvnni),
    make_generator("linear_q4_1_r16__avxvnni",
                   "q4_1 linear on the q4_1_r16 weight copy, ggml vec_dot lanes with the min "
                   "term, lane j of 8 rows a ymm, vpdpbusd (contract linear.q4_1.ggml)",
                   kAvxVnni, kLinear, &gen::build_linear_q4_1_r16_avxvnni),
    make_generator("linear_q5_1_r16__avxvnni",
                   "q5_1 linear on the q5_1_r16 weight copy, ggml vec_dot lanes with the min "
                   "term, lane j of 8 rows a ymm, vpdpbusd (contract linear.q5_1.ggml)",
                   kAvxVnni, kLinear, &gen::build_linear_q5_1_r16_avxvnni),
    make_generator("linear_q5_0_r16__avxvnni",
                   "q5_0 linear on the q5_0_r16 weight copy, ggml vec_dot lanes, lane j of 8 "
                   "rows a ymm, made from nibbles and high bits, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q5_0_r16_avxvnni),
    make_generator("linear_q3_K_r16__avxvnni",
                   "q3_K linear on the q3_K_r16 weight copy, ggml_vec_dot_q3_K lanes (1..4 tokens) "
                   "(contract linear.q3_K.ggml), lane j of 8 rows a ymm, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q3_K_r16_avxvnni),
    make_generator("linear_q2_K_r16__avxvnni",
                   "q2_K decode linear on the q2_K_r16 weight copy, ggml's repacked q2_K_8x8 "
                   "gemv (contract linear.q2_Kx8.ggml), 8 rows a ymm, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q2_K_r16_avxvnni),
    make_generator("linear_q4_K_r16__avxvnni",
                   "q4_K linear on the q4_K_r16 weight copy, ggml's repacked q4_K_8x8 "
                   "gemv / gemm (contract linear.q4_Kx8.ggml), AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q4_K_r16_avxvnni),
    make_generator("linear_q6_K_r16__avxvnni",
                   "q6_K linear on the q6_K_r16 weight copy, ggml_vec_dot_q6_K lanes (1..4 tokens) "
                   "(contract linear.q6_K.ggml), AVX-VNNI vpdpbusd + vpdpwssd",
                   kAvxVnni, kLinear, &gen::build_linear_q6_K_r16_avxvnni),
    make_generator("linear_q4_1__avxvnni",
                   "q4_1 linear, ggml vec_dot_q4_1_q8_1 lanes + min term, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q4_1_avxvnni),
    make_generator("linear_q5_0__avxvnni",
                   "q5_0 linear, ggml vec_dot_q5_0_q8_0 lanes, AVX-VNNI vpdpbusd", kAvxVnni,
                   kLinear, &gen::build_linear_q5_0_avxvnni),
    make_generator("linear_q5_1__avxvnni",
                   "q5_1 linear, ggml vec_dot_q5_1_q8_1 lanes + min term, AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q5_1_avxvnni),
    make_generator("linear_q4_Kx8__avxvnni",
                   "q4_K linear, ggml's repacked q4_K_8x8 gemm/gemv, one lane per row of 8, "
                   "AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q4_Kx8_avxvnni),
    make_generator("linear_q2_Kx8__avxvnni",
                   "q2_K linear, ggml's repacked q2_K_8x8 gemm/gemv, one lane per row of 8, "
                   "AVX-VNNI vpdpbusd",
                   kAvxVnni, kLinear, &gen::build_linear_q2_Kx8_avxvnni),
    make_generator("linear_f32__avx2",
                   "f32 linear, the AVX-512 build's 4x16 lanes as ymm pairs, reduce_add tree",
                   kAvx2, kLinear, &gen::build_linear_f32_avx2),
    make_generator("linear_f16__avx512",
                   "f16 linear, ggml_vec_dot_f16: vcvtph2ps, 4x16 accumulators, double tail",
                   kAvx512, kLinear, &gen::build_linear_f16_avx512),
    make_generator("linear_f16__avx2",
                   "f16 linear, the AVX-512 build's 4x16 lanes as ymm pairs, double tail", kAvx2,
                   kLinear, &gen::build_linear_f16_avx2),
    make_generator("linear_f32_tinyblas__avx512",
                   "f32 linear, llamafile tinyBLAS: one 16-lane accumulator per output, 4x6 tiles",
                   kAvx512, kLinear, &gen::build_linear_f32_tinyblas_avx512),
    make_generator("linear_f32_tinyblas__avx2",
                   "f32 linear, llamafile tinyBLAS: one 16-lane accumulator (ymm pair) per output",
                   kAvx2, kLinear, &gen::build_linear_f32_tinyblas_avx2),
    make_generator("linear_f16_tinyblas__avx512",
                   "f16 linear, llamafile tinyBLAS: vcvtph2ps, one 16-lane accumulator per output",
                   kAvx512, kLinear, &gen::build_linear_f16_tinyblas_avx512),
    make_generator("linear_f16_tinyblas__avx2",
                   "f16 linear, llamafile tinyBLAS: vcvtph2ps, one ymm-pair accumulator per output",
                   kAvx2, kLinear, &gen::build_linear_f16_tinyblas_avx2),
    make_generator("linear_f16_tinyblas_wide__avx2",
                   "f16 linear, llamafile tinyBLAS: the f32 tile on f32 copies of a weight panel "
                   "and a token chunk",
                   kAvx2, kLinear, &gen::build_linear_f16_tinyblas_wide_avx2),
    make_generator("linear_bf16_tinyblas_wide__avx2",
                   "bf16 linear, tinyBLAS<32, __m512bh> emulated: the f32 tile under DAZ|FTZ on "
                   "f32 copies",
                   kAvx2, kLinear, &gen::build_linear_bf16_tinyblas_wide_avx2),
    make_generator("linear_bf16__avx512bf16",
                   "bf16 linear, ggml_vec_dot_bf16: vdpbf16ps into 2x16 lanes, double tail",
                   kAvx512Bf16, kLinear, &gen::build_linear_bf16_avx512bf16),
    make_generator("linear_bf16_tinyblas__avx512bf16",
                   "bf16 linear, llamafile tinyBLAS<32, __m512bh>: one vdpbf16ps accumulator",
                   kAvx512Bf16, kLinear, &gen::build_linear_bf16_tinyblas_avx512bf16),
    make_generator("linear_bf16__avx512",
                   "bf16 linear, ggml_vec_dot_bf16 with vdpbf16ps emulated (FMAs, DAZ/FTZ), zmm",
                   kAvx512, kLinear, &gen::build_linear_bf16_avx512),
    make_generator("linear_bf16_tinyblas__avx512",
                   "bf16 linear, tinyBLAS<32, __m512bh> with vdpbf16ps emulated, zmm", kAvx512,
                   kLinear, &gen::build_linear_bf16_tinyblas_avx512),
    make_generator("linear_bf16__avx2",
                   "bf16 linear, ggml_vec_dot_bf16 with vdpbf16ps emulated (FMAs, DAZ/FTZ), ymm "
                   "pairs",
                   kAvx2, kLinear, &gen::build_linear_bf16_avx2),
    make_generator("linear_bf16_tinyblas__avx2",
                   "bf16 linear, tinyBLAS<32, __m512bh> with vdpbf16ps emulated, ymm pairs", kAvx2,
                   kLinear, &gen::build_linear_bf16_tinyblas_avx2),
    make_generator("attention_f32__avx512",
                   "attention over the F32 KV cache, ggml non-flash arithmetic, 16 lanes per zmm",
                   kAvx512, kAttention, &gen::build_attention_f32_avx512),
    make_generator(
        "attention_f32__avx2",
        "attention over the F32 KV cache, ggml non-flash arithmetic, 16 lanes as ymm pairs", kAvx2,
        kAttention, &gen::build_attention_f32_avx2),
    make_generator("attention_f16_flash__avx512",
                   "flash attention over the F16 KV cache, ggml's one-chunk loop (decode), zmm",
                   kAvx512, kAttentionF16, &gen::build_attention_f16_flash_avx512),
    make_generator("attention_f16_flash__avx2",
                   "flash attention over the F16 KV cache, ggml's one-chunk loop (decode), ymm "
                   "pairs",
                   kAvx2, kAttentionF16, &gen::build_attention_f16_flash_avx2),
    make_generator("add_f32__avx512", "elementwise add, 16 lanes per zmm", kAvx512, kAdd,
                   &gen::build_add_f32_avx512),
    make_generator("add_f32__avx2", "elementwise add, 16 lanes as ymm pairs", kAvx2, kAdd,
                   &gen::build_add_f32_avx2),
    make_generator("add_bias_f32__avx512", "bias add per token row, 16 lanes per zmm, scalar tail",
                   kAvx512, kAddBias, &gen::build_add_bias_f32_avx512),
    make_generator("add_bias_f32__avx2",
                   "bias add per token row, 16 lanes as ymm pairs, scalar tail", kAvx2, kAddBias,
                   &gen::build_add_bias_f32_avx2),
    make_generator("scale_f32__avx512", "elementwise scale, 16 lanes per zmm, scalar tail", kAvx512,
                   kScale, &gen::build_scale_f32_avx512),
    make_generator("scale_f32__avx2", "elementwise scale, 16 lanes as ymm pairs, scalar tail",
                   kAvx2, kScale, &gen::build_scale_f32_avx2),
    make_generator("kv_store_f32__avx512", "F32 KV cache store: K rows by zmm, V transposed",
                   kAvx512, kKvStore, &gen::build_kv_store_f32_avx512),
    make_generator("kv_store_f32__avx2", "F32 KV cache store: K rows by ymm pairs, V transposed",
                   kAvx2, kKvStore, &gen::build_kv_store_f32_avx2),
    make_generator("kv_store_f16__avx512",
                   "F16 KV cache store: K and V rows converted by vcvtps2ph, 8 per step", kAvx512,
                   kKvStoreF16, &gen::build_kv_store_f16_avx512),
    make_generator("kv_store_f16__avx2",
                   "F16 KV cache store: K and V rows converted by vcvtps2ph, 8 per step", kAvx2,
                   kKvStoreF16, &gen::build_kv_store_f16_avx2),
    make_generator("swiglu_f32__avx512",
                   "SwiGLU, ggml_vec_swiglu_f32 (ggml_v_expf, true division), 16 lanes per zmm",
                   kAvx512, kGlu, &gen::build_swiglu_f32_avx512),
    make_generator(
        "swiglu_f32__avx2",
        "SwiGLU, ggml_vec_swiglu_f32 (ggml_v_expf, true division), 16 lanes as ymm pairs", kAvx2,
        kGlu, &gen::build_swiglu_f32_avx2),
    make_generator("geglu_f32__avx512",
                   "GEGLU, ggml's FP16 GELU table (C helper lookup), 16 lanes per zmm", kAvx512,
                   kGlu, &gen::build_geglu_f32_avx512),
    make_generator("geglu_f32__avx2",
                   "GEGLU, ggml's FP16 GELU table (C helper lookup), 16 lanes as ymm pairs", kAvx2,
                   kGlu, &gen::build_geglu_f32_avx2),
    make_generator("layernorm_f32__avx512",
                   "LayerNorm x weight + bias, ggml's mean and 16-group variance, 16 lanes per zmm",
                   kAvx512, kLayerNorm, &gen::build_layernorm_f32_avx512),
    make_generator("layernorm_f32__avx2",
                   "LayerNorm x weight + bias, ggml's mean and 16-group variance, ymm pairs", kAvx2,
                   kLayerNorm, &gen::build_layernorm_f32_avx2),
    make_generator("relu_sqr_f32__avx512",
                   "squared ReLU (maxps, mul), 16 lanes per zmm, scalar tail", kAvx512, kReluSqr,
                   &gen::build_relu_sqr_f32_avx512),
    make_generator("relu_sqr_f32__avx2", "squared ReLU (maxps, mul), ymm pairs, scalar tail", kAvx2,
                   kReluSqr, &gen::build_relu_sqr_f32_avx2),
    make_generator("swiglu_fused_f32__avx512",
                   "SwiGLU on the halves of a fused gate+up row (ggml_v_expf), 16 lanes per zmm",
                   kAvx512, kGluFused, &gen::build_swiglu_fused_f32_avx512),
    make_generator("swiglu_fused_f32__avx2",
                   "SwiGLU on the halves of a fused gate+up row (ggml_v_expf), ymm pairs", kAvx2,
                   kGluFused, &gen::build_swiglu_fused_f32_avx2),
    make_generator("rmsnorm_f32__avx512",
                   "RMSNorm x weight, ggml's double sum of squares, 16 lanes per zmm", kAvx512,
                   kRmsNorm, &gen::build_rmsnorm_f32_avx512),
    make_generator("rmsnorm_f32__avx2",
                   "RMSNorm x weight, ggml's double sum of squares, 16 lanes as ymm pairs", kAvx2,
                   kRmsNorm, &gen::build_rmsnorm_f32_avx2),
    make_generator("rmsnorm_act_quant_q8_0__avx512",
                   "RMSNorm x weight then q8_0 quantization of each row, 4 rows at a time", kAvx512,
                   kRmsNormActQuant, &gen::build_rmsnorm_act_quant_q8_0_avx512),
    make_generator("rmsnorm_act_quant_q8_0__avx2",
                   "RMSNorm x weight then q8_0 quantization of each row, 4 rows at a time", kAvx2,
                   kRmsNormActQuant, &gen::build_rmsnorm_act_quant_q8_0_avx2),
    make_generator("rope_normal_f32__avx512",
                   "RoPE normal, ggml's cos/sin cache (C helper), pairs rotated 16 lanes per zmm",
                   kAvx512, kRope, &gen::build_rope_normal_f32_avx512),
    make_generator("rope_normal_f32__avx2",
                   "RoPE normal, ggml's cos/sin cache (C helper), 16 lanes as ymm pairs", kAvx2,
                   kRope, &gen::build_rope_normal_f32_avx2),
    make_generator("rope_neox_f32__avx512",
                   "RoPE neox, ggml's cos/sin cache (C helper), pairs rotated 16 lanes per zmm",
                   kAvx512, kRope, &gen::build_rope_neox_f32_avx512),
    make_generator("rope_neox_f32__avx2",
                   "RoPE neox, ggml's cos/sin cache (C helper), 16 lanes as ymm pairs", kAvx2,
                   kRope, &gen::build_rope_neox_f32_avx2),
    make_generator("act_quant_q8_0__avx512",
                   "q8_0 activation quantization, ggml quantize_row_q8_0 (x86), EVEX ymm", kAvx512,
                   kActQuant, &gen::build_act_quant_q8_0_avx512),
    make_generator("act_quant_q8_0__avx2",
                   "q8_0 activation quantization, ggml quantize_row_q8_0 (x86), ymm", kAvx2,
                   kActQuant, &gen::build_act_quant_q8_0_avx2),
    make_generator("act_quant_q8_K__avx512",
                   "q8_K activation quantization, ggml quantize_row_q8_K, EVEX ymm + k masks",
                   kAvx512, kActQuant, &gen::build_act_quant_q8_K_avx512),
    make_generator("act_quant_q8_K__avx2",
                   "q8_K activation quantization, ggml quantize_row_q8_K, ymm", kAvx2, kActQuant,
                   &gen::build_act_quant_q8_K_avx2),
    make_generator("act_quant_q8_Kx8__avx512",
                   "q8_K activation quantization, ggml_quantize_mat_q8_K_4x8 (x86), EVEX ymm",
                   kAvx512, kActQuant, &gen::build_act_quant_q8_K_4x8_avx512),
    make_generator("act_quant_q8_Kx8__avx2",
                   "q8_K activation quantization, ggml_quantize_mat_q8_K_4x8 (x86), ymm", kAvx2,
                   kActQuant, &gen::build_act_quant_q8_K_4x8_avx2),
    make_generator("act_quant_f16__avx512", "f16 activation conversion, vcvtps2ph (RNE), EVEX ymm",
                   kAvx512, kActQuant, &gen::build_act_quant_f16_avx512),
    make_generator("act_quant_f16__avx2", "f16 activation conversion, vcvtps2ph (RNE), ymm", kAvx2,
                   kActQuant, &gen::build_act_quant_f16_avx2),
    make_generator("act_quant_bf16__avx512",
                   "bf16 activation conversion, ggml_compute_fp32_to_bf16, EVEX ymm", kAvx512,
                   kActQuant, &gen::build_act_quant_bf16_avx512),
    make_generator("act_quant_bf16__avx2",
                   "bf16 activation conversion, ggml_compute_fp32_to_bf16, ymm", kAvx2, kActQuant,
                   &gen::build_act_quant_bf16_avx2),
    make_generator("embed_f32__avx512",
                   "embed of a f32 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_f32_avx512),
    make_generator("embed_f32__avx2",
                   "embed of a f32 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_f32_avx2),
    make_generator("embed_f16__avx512",
                   "embed of a f16 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_f16_avx512),
    make_generator("embed_f16__avx2",
                   "embed of a f16 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_f16_avx2),
    make_generator("embed_bf16__avx512",
                   "embed of a bf16 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_bf16_avx512),
    make_generator("embed_bf16__avx2",
                   "embed of a bf16 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_bf16_avx2),
    make_generator("embed_q8_0__avx512",
                   "embed of a q8_0 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q8_0_avx512),
    make_generator("embed_q8_0__avx2",
                   "embed of a q8_0 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q8_0_avx2),
    make_generator("embed_q4_0__avx512",
                   "embed of a q4_0 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q4_0_avx512),
    make_generator("embed_q4_0__avx2",
                   "embed of a q4_0 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q4_0_avx2),
    make_generator("embed_q4_1__avx512",
                   "embed of a q4_1 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q4_1_avx512),
    make_generator("embed_q4_1__avx2",
                   "embed of a q4_1 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q4_1_avx2),
    make_generator("embed_q5_0__avx512",
                   "embed of a q5_0 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q5_0_avx512),
    make_generator("embed_q5_0__avx2",
                   "embed of a q5_0 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q5_0_avx2),
    make_generator("embed_q5_1__avx512",
                   "embed of a q5_1 table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q5_1_avx512),
    make_generator("embed_q5_1__avx2",
                   "embed of a q5_1 table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q5_1_avx2),
    make_generator("embed_q2_K__avx512",
                   "embed of a q2_K table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q2_K_avx512),
    make_generator("embed_q2_K__avx2",
                   "embed of a q2_K table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q2_K_avx2),
    make_generator("embed_q3_K__avx512",
                   "embed of a q3_K table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q3_K_avx512),
    make_generator("embed_q3_K__avx2",
                   "embed of a q3_K table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q3_K_avx2),
    make_generator("embed_q4_K__avx512",
                   "embed of a q4_K table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q4_K_avx512),
    make_generator("embed_q4_K__avx2",
                   "embed of a q4_K table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q4_K_avx2),
    make_generator("embed_q5_K__avx512",
                   "embed of a q5_K table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q5_K_avx512),
    make_generator("embed_q5_K__avx2",
                   "embed of a q5_K table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q5_K_avx2),
    make_generator("embed_q6_K__avx512",
                   "embed of a q6_K table, ggml's to_float per row, 16 lanes per zmm", kAvx512,
                   kEmbed, &gen::build_embed_q6_K_avx512),
    make_generator("embed_q6_K__avx2",
                   "embed of a q6_K table, ggml's to_float per row, 16 lanes as ymm pairs", kAvx2,
                   kEmbed, &gen::build_embed_q6_K_avx2),
    make_generator("act_quant_q8_1__avx512",
                   "q8_1 activation quantization, ggml quantize_row_q8_1 (x86), EVEX ymm", kAvx512,
                   kActQuant, &gen::build_act_quant_q8_1_avx512),
    make_generator("act_quant_q8_1__avx2",
                   "q8_1 activation quantization, ggml quantize_row_q8_1 (x86), ymm", kAvx2,
                   kActQuant, &gen::build_act_quant_q8_1_avx2),
    make_generator("linear_q4_1__avx512vnni",
                   "q4_1 linear, ggml vec_dot_q4_1_q8_1 lanes + min term, vpdpbusd", kAvx512Vnni,
                   kLinear, &gen::build_linear_q4_1_avx512vnni),
    make_generator("linear_q5_0__avx512vnni",
                   "q5_0 linear, ggml vec_dot_q5_0_q8_0 lanes, 2 rows per zmm, vpdpbusd",
                   kAvx512Vnni, kLinear, &gen::build_linear_q5_0_avx512vnni),
    make_generator("linear_q5_1__avx512vnni",
                   "q5_1 linear, ggml vec_dot_q5_1_q8_1 lanes + min term, vpdpbusd", kAvx512Vnni,
                   kLinear, &gen::build_linear_q5_1_avx512vnni),
    make_generator("linear_q4_1__avx2",
                   "q4_1 linear, ggml vec_dot_q4_1_q8_1 lanes + min term, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q4_1_avx2),
    make_generator("linear_q5_0__avx2", "q5_0 linear, ggml vec_dot_q5_0_q8_0 lanes, vpmaddubsw",
                   kAvx2, kLinear, &gen::build_linear_q5_0_avx2),
    make_generator("linear_q5_1__avx2",
                   "q5_1 linear, ggml vec_dot_q5_1_q8_1 lanes + min term, vpmaddubsw", kAvx2,
                   kLinear, &gen::build_linear_q5_1_avx2),
    make_generator("linear_id__avx512vnni",
                   "expert matmuls (mul_mat_id): per expert, a generated AVX-512 VNNI linear "
                   "kernel on its pairs",
                   kAvx512Vnni, kLinearId, &gen::build_linear_id_avx512vnni),
    make_generator("linear_id__avx512bf16",
                   "expert matmuls (mul_mat_id): per expert, a generated AVX-512 BF16 linear "
                   "kernel on its pairs",
                   kAvx512Bf16, kLinearId, &gen::build_linear_id_avx512bf16),
    make_generator("linear_id__avx512",
                   "expert matmuls (mul_mat_id): per expert, a generated AVX-512 linear kernel "
                   "on its pairs",
                   kAvx512, kLinearId, &gen::build_linear_id_avx512),
    make_generator("linear_id__avx2",
                   "expert matmuls (mul_mat_id): per expert, a generated AVX2 linear kernel on "
                   "its pairs",
                   kAvx2, kLinearId, &gen::build_linear_id_avx2),
    make_generator("moe_gather_f32__avx512",
                   "MoE pair rows gathered from their tokens' rows, 16 lanes per zmm", kAvx512,
                   kMoeGather, &gen::build_moe_gather_f32_avx512),
    make_generator("moe_gather_f32__avx2",
                   "MoE pair rows gathered from their tokens' rows, 16 lanes as ymm pairs", kAvx2,
                   kMoeGather, &gen::build_moe_gather_f32_avx2),
    make_generator("moe_combine_f32__avx512",
                   "MoE weighted sum of the experts' outputs in slot order, 16 lanes per zmm",
                   kAvx512, kMoeCombine, &gen::build_moe_combine_f32_avx512),
    make_generator("moe_combine_f32__avx2",
                   "MoE weighted sum of the experts' outputs in slot order, ymm pairs", kAvx2,
                   kMoeCombine, &gen::build_moe_combine_f32_avx2),
    make_generator("moe_route_softmax_norm_f32__avx512",
                   "MoE router: soft_max, top-k by selection (ties by ggml's sort), normalised "
                   "weights, 16 lanes per zmm",
                   kAvx512, kMoeRoute, &gen::build_moe_route_f32_avx512),
    make_generator("moe_route_softmax_norm_f32__avx2",
                   "MoE router: soft_max, top-k by selection (ties by ggml's sort), normalised "
                   "weights, ymm pairs",
                   kAvx2, kMoeRoute, &gen::build_moe_route_f32_avx2),
    make_generator("moe_group__avx2", "MoE pairs grouped by expert (counting sort), scalar code",
                   kAvx2, kMoeGroup, &gen::build_moe_group_avx2),
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

GeneratorParams plan_params(std::string_view generator, const GeneratorParams& map_params,
                            bool decode_batch, bool plan_batches, bool decode_prefetch) {
  GeneratorParams p = map_params;
  const Generator* g = find_generator(generator);
  if (g && g->decode_group && decode_batch && !plan_batches)
    p.insert_or_assign("decode_group", std::string("1"));
  if (!decode_prefetch) p.insert_or_assign(std::string(kDecodePrefetchParam), std::string("0"));
  return p;
}

bool build_kernel(std::string_view name, const GeneratorParams& params, const std::string& id,
                  kir::Module* out, std::string* err) {
  const Generator* g = find_generator(name);
  if (!g) {
    *err = "unknown kernel generator '" + std::string(name) + "'";
    return false;
  }
  // decode_prefetch is build_kernel's, not the generator's: taken out, set for this build.
  GeneratorParams own = params;
  bool prefetch = true;
  if (auto it = own.find(std::string(kDecodePrefetchParam)); it != own.end()) {
    if (it->second != "0" && it->second != "1") {
      *err =
          fmt::format("generator '{}': {} = '{}' (0 or 1)", name, kDecodePrefetchParam, it->second);
      return false;
    }
    prefetch = it->second == "1";
    own.erase(it);
  }
  const gen::DecodePrefetchScope scope(prefetch);
  kir::Module m;
  m.name = id;
  try {
    if (!g->build(own, &m, err)) return false;
  } catch (const std::exception& e) {  // a generator bug (kir::Builder misuse)
    *err = "generator '" + std::string(name) + "': " + e.what();
    return false;
  }
  if (std::string e = kir::validate(m); !e.empty()) {
    *err = "generator '" + std::string(name) + "': " + e;
    return false;
  }
  *out = std::move(m);
  return true;
}

std::unique_ptr<KernelModule> generate_kernel(std::string_view name, const GeneratorParams& params,
                                              const std::string& id, std::string* err) {
  kir::Module m;
  if (!build_kernel(name, params, id, &m, err)) return nullptr;
  return kir::lower_to_machine_code(m, err);
}

bool kernel_c_source(std::string_view name, const GeneratorParams& params, const std::string& id,
                     std::string* c, std::string* err) {
  kir::Module m;
  if (!build_kernel(name, params, id, &m, err)) return false;
  *c = kir::render_c(m);
  return true;
}

}  // namespace cke::jit
