// libm_expf16 (jit/gen_libm_expf.h) against the host's expf, lane by lane and bit for bit,
// as machine code and as compiled C, at both ISA levels: every float whose bits are a
// multiple of 2039 (about 2.1M, over signs, exponents and NaNs), every float in [-104, -87]
// and [87, 89] (the bounds of its special cases and the subnormal results), and the values
// near 0. CKE_EXPF_EXHAUSTIVE=1 runs all 2^32 inputs instead, in 256 chunks.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "jit/gen_libm_expf.h"
#include "jit/kir/kir_asmjit.h"
#include "jit/kir/kir_c.h"
#include "resolver/features.h"
#include "resolver/host_caps.h"

namespace cke::jit::gen {
namespace {

using kir::Builder;
using kir::Kind;
using kir::Mem;
using kir::V;
using Fn = void (*)(const float* x, float* y, int64_t n16);

// y[i] = expf(x[i]) over n16 groups of 16.
kir::Module expf_module(Isa isa) {
  kir::Module m;
  m.name = std::string("libm_expf16_test__") + isa_suffix(isa);
  m.isa = isa_features(isa);
  Builder b(m, m.name, {Kind::Ptr, Kind::Ptr, Kind::I64});
  Lanes16 L(b, isa);
  const LibmExpConsts c = libm_exp_consts(L);
  V i = b.i64("i"), off = b.i64("off");
  b.for_(i, b.imm(0, "zero_i"), b.arg(2), b.imm(1, "one_i"));
  b.muli(off, i, 64);
  V16 x = L.vec("x");
  L.load(x, Mem{b.arg(0), off, 1, 0});
  libm_expf16(L, c, x, x);
  L.store(Mem{b.arg(1), off, 1, 0}, x);
  b.end_for();
  return m;
}

// The inputs of chunk `chunk` of `chunks` (exhaustive: 2^24 consecutive bit patterns each).
int chunks() {
  return std::getenv("CKE_EXPF_EXHAUSTIVE") ? 256 : 1;
}
std::vector<float> inputs(int chunk) {
  std::vector<uint32_t> bits;
  if (chunks() > 1) {
    for (uint32_t u = 0; u < (1u << 24); ++u) bits.push_back((uint32_t(chunk) << 24) | u);
  } else {
    for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 2039) bits.push_back(uint32_t(u));
    auto range = [&](float lo, float hi) {
      for (float v = lo; v <= hi; v = std::nextafter(v, INFINITY))
        bits.push_back(std::bit_cast<uint32_t>(v));
    };
    range(-104.0f, -87.0f);
    range(87.0f, 89.0f);
    for (uint32_t u = 0; u < 100000; ++u) bits.push_back(u), bits.push_back(0x80000000u | u);
  }
  while (bits.size() % 16) bits.push_back(0);
  std::vector<float> x(bits.size());
  for (size_t k = 0; k < x.size(); ++k) x[k] = std::bit_cast<float>(bits[k]);
  return x;
}

class LibmExpf : public ::testing::TestWithParam<Isa> {};

TEST_P(LibmExpf, MatchesTheHostExpfBitForBit) {
  const Isa isa = GetParam();
  static const HostCaps host = HostCaps::probe();
  for (const std::string& f : isa_features(isa)) {
    const auto feat = feature_from_name(f);
    if (!feat || !host.has(*feat)) GTEST_SKIP() << "host lacks " << f;
  }
  const kir::Module m = expf_module(isa);
  std::string err;
  auto mc = kir::lower_to_machine_code(m, &err);
  ASSERT_NE(mc, nullptr) << err;

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cke_expf_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.c") << "#include <immintrin.h>\n#include <stdint.h>\n" << kir::render_c(m);
  const std::string cmd = "cc -std=c11 -fPIC -shared -Wall -Wextra -Werror " +
                          std::string(kir::kCNumericsFlags) + " " +
                          kir::c_isa_flags(m.isa, nullptr) + " -o " + (dir / "k.so").string() +
                          " " + (dir / "k.c").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  void* h = dlopen((dir / "k.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto cfn = reinterpret_cast<Fn>(dlsym(h, m.name.c_str()));
  ASSERT_NE(cfn, nullptr);

  size_t bad = 0, bad_c = 0, n = 0;
  for (int chunk = 0; chunk < chunks(); ++chunk) {
    const std::vector<float> x = inputs(chunk);
    std::vector<float> y(x.size()), yc(x.size());
    mc->entry_as<Fn>()(x.data(), y.data(), int64_t(x.size() / 16));
    cfn(x.data(), yc.data(), int64_t(x.size() / 16));
    n += x.size();
    for (size_t k = 0; k < x.size(); ++k) {
      const uint32_t want = std::bit_cast<uint32_t>(std::exp(x[k]));
      if (std::bit_cast<uint32_t>(y[k]) != want && bad++ < 8)
        ADD_FAILURE() << "JIT expf(" << x[k] << " = 0x" << std::hex << std::bit_cast<uint32_t>(x[k])
                      << "): 0x" << std::bit_cast<uint32_t>(y[k]) << ", libm 0x" << want;
      if (std::bit_cast<uint32_t>(yc[k]) != want && bad_c++ < 8)
        ADD_FAILURE() << "C expf(0x" << std::hex << std::bit_cast<uint32_t>(x[k]) << "): 0x"
                      << std::bit_cast<uint32_t>(yc[k]) << ", libm 0x" << want;
    }
  }
  EXPECT_EQ(bad, 0u) << "of " << n;
  EXPECT_EQ(bad_c, 0u) << "of " << n;
  dlclose(h);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Isa, LibmExpf, ::testing::Values(Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_suffix(info.param)); });

}  // namespace
}  // namespace cke::jit::gen
