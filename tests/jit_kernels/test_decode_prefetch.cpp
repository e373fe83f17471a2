// The host's decode prefetch choice (HostCaps::decode_stream_prefetch -> jit::plan_params ->
// "decode_prefetch" -> the one-token tiles of the r16 stream kernels, jit/gen_tile.h): the
// one-token tiles drop their stream prefetches when asked, the tiles of several tokens keep
// theirs, and the two kernels compute the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "jit/generators.h"
#include "jit/kir/kir.h"
#include "jit_test_util.h"
#include "kernels/formats/quant.h"
#include "tests/common/generated_linear.h"

namespace cke::test {
namespace {

// Prefetch instructions in all of a kernel's functions, built with the plan's parameters
// and decode prefetch on or off.
int prefetches(const KernelMap& map, bool on) {
  jit::kir::Module m;
  std::string err;
  const jit::GeneratorParams p = jit::plan_params(map.impl.generator, map.impl.generator_params,
                                                  map.selection.decode_batch, false, on);
  if (!jit::build_kernel(map.impl.generator, p, map.id, &m, &err)) {
    ADD_FAILURE() << map.id << ": " << err;
    return -1;
  }
  int n = 0;
  for (const jit::kir::Func& f : m.funcs)
    for (const jit::kir::Inst& i : f.code) n += i.op == jit::kir::Op::VPrefetch;
  return n;
}

bool stream_layout(const KernelMap& map) {
  const std::string& l = map.port("w")->layout;
  return l == "q4_0_r16" || l == "q8_0_r16" || l == "q4_K_r16";
}
bool float_weights(const GeneratedLinear& g) {
  return g.wtype == DType::F32 || g.wtype == DType::F16 || g.wtype == DType::BF16;
}

TEST(DecodePrefetch, DecodeTilesDropTheStreamPrefetchPrefillTilesKeepIt) {
  int decode_checked = 0, prefill_checked = 0;
  for (const GeneratedLinear& g : generated_linear_providers()) {
    const KernelMap& map = *g.map;
    SCOPED_TRACE(map.id);
    const int on = prefetches(map, true), off = prefetches(map, false);
    std::printf("%-48s prefetches: on %4d, off %4d\n", map.id.c_str(), on, off);
    EXPECT_LE(off, on);                       // never adds one
    if (g.decode_only && float_weights(g)) {  // the one-row tiles' prefetch a tile ahead
      EXPECT_GT(on, 0);
      EXPECT_EQ(off, 0);
      ++decode_checked;
    }
    if (!stream_layout(map)) continue;
    if (g.decode_only) {
      // Its one-token tile drops them; tiles for a batch of decode tokens keep theirs.
      EXPECT_LT(off, on);
      ++decode_checked;
    } else {
      EXPECT_GT(off, 0);  // prefill tiles keep their lead
      ++prefill_checked;
    }
  }
  EXPECT_GE(decode_checked, 9) << "decode providers of q4_0_r16 / q8_0_r16 / q4_K_r16, F16, BF16";
  EXPECT_GE(prefill_checked, 3);
}

TEST(DecodePrefetch, ParameterIsZeroOrOne) {
  std::string err;
  jit::kir::Module m;
  EXPECT_FALSE(jit::build_kernel("linear_q8_0__avx2", {{"decode_prefetch", "yes"}}, "x", &m, &err));
  EXPECT_NE(err.find("decode_prefetch = 'yes' (0 or 1)"), std::string::npos) << err;
  EXPECT_TRUE(jit::build_kernel("linear_q8_0__avx2", {{"decode_prefetch", "0"}}, "x", &m, &err))
      << err;
  EXPECT_EQ(jit::plan_params("linear_q8_0__avx2", {}, false, false, false).count("decode_prefetch"),
            1u);
  EXPECT_EQ(jit::plan_params("linear_q8_0__avx2", {}, false, false, true).count("decode_prefetch"),
            0u);
}

// Same outputs with and without the prefetches, for each decode provider of the stream
// layouts this host can run (the parity suite runs the host's own choice against the
// contract's reference).
TEST(DecodePrefetch, SameBitsEitherWay) {
  int ran = 0;
  for (const GeneratedLinear& g : generated_linear_providers()) {
    const KernelMap& map = *g.map;
    if (!g.decode_only || !(stream_layout(map) || float_weights(g))) continue;
    const jit::Generator* gen = jit::find_generator(map.impl.generator);
    ASSERT_NE(gen, nullptr);
    if (!missing_isa(*gen).empty()) continue;
    SCOPED_TRACE(map.id);
    const int64_t K = 512, N = 48, T = 1;
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> wf(size_t(K * N)), xf(size_t(K * T));
    for (float& v : wf) v = d(rng);
    for (float& v : xf) v = d(rng);
    std::vector<uint8_t> w(row_bytes(g.wtype, K) * size_t(N));
    for (int64_t n = 0; n < N; ++n)
      quantize_row(g.wtype, wf.data() + n * K, w.data() + n * row_bytes(g.wtype, K), K);
    const std::vector<uint8_t> wk = g.kernel_weights(w, K, N), x = g.convert(xf, K, T);
    std::vector<float> y[2];
    for (int on = 0; on < 2; ++on) {
      std::string err;
      auto mod =
          jit::generate_kernel(map.impl.generator,
                               jit::plan_params(map.impl.generator, map.impl.generator_params,
                                                map.selection.decode_batch, false, on == 1),
                               map.id, &err);
      ASSERT_NE(mod, nullptr) << err;
      y[on].assign(size_t(N * T), -1.0f);
      mod->entry_as<jit::LinearFn>()(x.data(), wk.data(), y[on].data(), K, N, T, 0, N);
    }
    EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)), 0);
    EXPECT_NE(y[0][0], -1.0f);  // written
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "this host runs none of the stream layouts' decode providers";
}

}  // namespace
}  // namespace cke::test
