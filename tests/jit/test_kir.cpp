// KIR itself (jit/kir/): the builder refuses misuse when a generator runs, validation
// catches unbalanced blocks, and a small hand-written module computes the same bytes as
// machine code and as compiled C — loops, ifs, an early return, a call to an inner
// function, views, integer and float lanes. (The generators' kernels are tested against
// their contracts in tests/jit_kernels.)
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "jit/kir/kir.h"
#include "jit/kir/kir_asmjit.h"
#include "jit/kir/kir_c.h"

namespace cke::jit::kir {
namespace {

using Fn = void (*)(const void* x, void* y, int64_t n, int64_t stop_at);

// y[i] (8 floats per step i < n): fma(x, x*2, x) per lane, lanes then rotated through an
// inner function that adds the low half to the high half; stops early at i == stop_at.
Module sample_module() {
  Module m;
  m.name = "kir_sample";
  m.comment = "a test module";
  m.isa = {"avx2", "fma", "f16c"};
  Builder e(m, "kir_sample", {Kind::Ptr, Kind::Ptr, Kind::I64, Kind::I64});
  Builder in(m, "kir_sample_inner", {Kind::Ptr});
  {
    V p = in.arg(0);
    V v = in.vec(256, Cls::F, "v"), hi = in.vec(128, Cls::F, "hi"), s = in.vec(128, Cls::F, "s");
    V out = in.vec(256, Cls::F, "out");
    in.vload(v, Mem{p, {}, 1, 0});
    in.vextract(hi, v, 1);
    in.vadd_f(s, in.view(v, 128, Cls::F), hi);
    in.vinsert(out, v, s, 1);
    in.vstore(Mem{p, {}, 1, 0}, out);
  }
  V x = e.arg(0), y = e.arg(1), n = e.arg(2), stop = e.arg(3);
  V i = e.i64("i"), xi = e.ptr("xi"), yi = e.ptr("yi");
  V a = e.vec(256, Cls::F, "a"), two = e.vec(256, Cls::F, "two"), t = e.vec(256, Cls::F, "t");
  e.vsplat32(two, 0x40000000u);  // 2.0f
  e.for_(i, e.imm(0, "zero"), n, e.imm(1, "one"));
  e.if_(i, Cmp::EQ, stop);
  e.ret();
  e.end_if();
  e.ptr_add(xi, x, i, 32);  // 8 floats per step
  e.ptr_add(yi, y, i, 32);
  e.vload(a, Mem{xi, {}, 1, 0});
  e.vmul_f(t, a, two);
  e.vfma(a, a, t);  // a = fma(a, a*2, a)
  e.vstore(Mem{yi, {}, 1, 0}, a);
  e.call(in.index(), {yi});
  e.end_for();
  return m;
}

TEST(Kir, MachineCodeAndCComputeTheSameBytes) {
  const Module m = sample_module();
  ASSERT_EQ(validate(m), "");
  std::string err;
  auto mc = lower_to_machine_code(m, &err);
  ASSERT_NE(mc, nullptr) << err;

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cke_kir_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.c") << "#include <immintrin.h>\n#include <stdint.h>\n" << render_c(m);
  const std::string cmd = "cc -std=c11 -fPIC -shared -Wall -Wextra -Werror " +
                          std::string(kCNumericsFlags) + " " + c_isa_flags(m.isa, nullptr) +
                          " -o " + (dir / "k.so").string() + " " + (dir / "k.c").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  void* h = dlopen((dir / "k.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto c = reinterpret_cast<Fn>(dlsym(h, "kir_sample"));
  ASSERT_NE(c, nullptr);

  std::vector<float> x(8 * 6);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.37f * float(k) - 3.1f;
  for (int64_t stop : {int64_t(-1), int64_t(4), int64_t(0)}) {
    std::vector<float> y1(x.size(), -9.0f), y2(x.size(), -9.0f);
    mc->entry_as<Fn>()(x.data(), y1.data(), 6, stop);
    c(x.data(), y2.data(), 6, stop);
    EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << "stop " << stop;
    // The expected values, from their definition.
    for (int64_t i = 0; i < 6; ++i) {
      const bool ran = stop < 0 || i < stop;
      float lanes[8];
      for (int l = 0; l < 8; ++l) {
        const float v = x[size_t(8 * i + l)];
        lanes[l] = std::fma(v, v * 2.0f, v);
      }
      for (int l = 0; l < 8; ++l) {
        const float want = l < 4 ? lanes[l] : lanes[l - 4] + lanes[l];
        EXPECT_EQ(y1[size_t(8 * i + l)], ran ? want : -9.0f) << "i=" << i << " lane " << l;
      }
    }
  }
  dlclose(h);
  fs::remove_all(dir);
}

TEST(Kir, BuilderRefusesMisuse) {
  Module m;
  m.name = "bad";
  Builder b(m, "bad", {Kind::Ptr, Kind::I64});
  V z = b.vec(512, Cls::I, "z"), y = b.vec(256, Cls::I, "y"), k = b.mask("k");
  EXPECT_THROW(b.vadd_i32(z, z, y), std::logic_error);                      // widths differ
  EXPECT_THROW(b.vbcast256(y, Mem{b.arg(0), {}, 1, 0}), std::logic_error);  // needs 512 bits
  EXPECT_THROW(b.add(b.arg(1), b.arg(1), b.arg(0)), std::logic_error);      // ptr as i64
  EXPECT_THROW(b.vstore(Mem{b.arg(1), {}, 1, 0}, z), std::logic_error);     // base not a pointer
  EXPECT_THROW(b.kfrom_bytes(k, y), std::logic_error);
  EXPECT_THROW(b.vzero(b.view(z, 256, Cls::I)), std::logic_error);  // a view is read-only
  EXPECT_THROW(b.call(5, {}), std::logic_error);                    // no such function
  EXPECT_THROW(b.end_for(), std::logic_error);
  EXPECT_THROW(b.vec(64, Cls::F, "tiny"), std::logic_error);
  const V x = b.vec(128, Cls::F, "x");
  EXPECT_THROW(b.vfma_b(x, x, Mem{b.arg(0), {}, 1, 0}), std::logic_error);  // 256 or 512 bits
}

TEST(Kir, ValidationCatchesUnbalancedBlocks) {
  Module m;
  m.name = "blocks";
  Builder b(m, "blocks", {Kind::I64});
  b.for_(b.i64("i"), b.arg(0), b.arg(0), b.arg(0));
  EXPECT_NE(validate(m).find("not closed"), std::string::npos);
  b.end_for();
  EXPECT_EQ(validate(m), "");
  b.if_(b.arg(0), Cmp::GT, 1);
  Inst close_for;
  close_for.op = Op::EndFor;
  m.funcs[0].code.push_back(close_for);  // closes the if with end_for
  EXPECT_NE(validate(m).find("innermost"), std::string::npos);
  std::string err;
  EXPECT_EQ(lower_to_machine_code(m, &err), nullptr);
  EXPECT_NE(err.find("innermost"), std::string::npos) << err;
}

}  // namespace
}  // namespace cke::jit::kir
