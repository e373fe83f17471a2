// The JIT glue calls kernels with exactly the arguments the plan bound: constants, floats,
// runtime values from the context, and frozen parallel ranges.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "jit/glue.h"
#include "runtime/exec/parallel.h"

namespace cke::jit {
namespace {

struct Record {
  std::vector<int64_t> ints;
  float f = 0;
};
std::vector<Record> g_calls;
std::mutex g_mu;

// Ten arguments: more than the six integer registers of SysV, so some go on the stack.
extern "C" void probe_kernel(int64_t* out, int64_t a, int64_t b, float f, int64_t c, int64_t d,
                             int64_t e, int64_t g, float h, int64_t i) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.push_back({{a, b, c, d, e, g, i}, f + h});
  if (out) *out += a;
}

extern "C" void fill_rows(int64_t* y, int64_t pos0, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) y[r] = r * 1000 + pos0;
}

TEST(Glue, ConstantsFloatsAndRuntimeValuesReachTheKernel) {
  g_calls.clear();
  int64_t sink = 0;
  GlueStep s;
  s.name = "probe_kernel";
  s.fn = reinterpret_cast<const void*>(&probe_kernel);
  s.args = {GlueArg::ptr(&sink),
            GlueArg::i64(-7),
            GlueArg::rt(RuntimeValue::Pos0),
            GlueArg::f32(1.5f),
            GlueArg::rt(RuntimeValue::NTokens),
            GlueArg::rt(RuntimeValue::NKv, 3),
            GlueArg::i64(int64_t(1) << 40),
            GlueArg::i64(3),
            GlueArg::f32(0.25f),
            GlueArg::i64(9)};
  std::string err;
  auto m = emit_glue("t", {s, s}, &err);
  ASSERT_TRUE(m) << err;
  ThreadPool pool(1);
  RunContext ctx{11, 5, 16, &pool, 0, 5, 0, nullptr, nullptr};
  m->entry_as<jit::GlueFn>()(&ctx);
  ASSERT_EQ(g_calls.size(), 2u);
  const std::vector<int64_t> want = {-7, 11, 5, 48, int64_t(1) << 40, 3, 9};
  EXPECT_EQ(g_calls[0].ints, want);
  EXPECT_EQ(g_calls[0].f, 1.75f);
  EXPECT_EQ(sink, -14);
}

TEST(Glue, ParallelStepCoversEveryRowOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<int64_t> y(37, -1);
    GlueStep s;
    s.name = "fill_rows";
    s.fn = reinterpret_cast<const void*>(&fill_rows);
    s.args = {GlueArg::ptr(y.data()), GlueArg::rt(RuntimeValue::Pos0), GlueArg::begin(),
              GlueArg::end()};
    s.split_total = 37;
    s.split_align = 4;
    std::string err;
    auto m = emit_glue("p", {s}, &err);
    ASSERT_TRUE(m) << err;
    ThreadPool pool(threads);
    RunContext ctx{3, 1, 4, &pool, 0, 1, 0, nullptr, nullptr};
    m->entry_as<jit::GlueFn>()(&ctx);
    for (int64_t r = 0; r < 37; ++r)
      EXPECT_EQ(y[r], r * 1000 + 3) << "row " << r << " threads " << threads;
  }
}

TEST(Glue, ParallelStepSplitByTokens) {
  std::vector<int64_t> y(40, -1);
  GlueStep s;
  s.name = "fill_rows";
  s.fn = reinterpret_cast<const void*>(&fill_rows);
  s.args = {GlueArg::ptr(y.data()), GlueArg::i64(0), GlueArg::begin(), GlueArg::end()};
  s.split_total = 4;  // 4 rows per token
  s.split_by_tokens = true;
  std::string err;
  auto m = emit_glue("pt", {s}, &err);
  ASSERT_TRUE(m) << err;
  ThreadPool pool(2);
  RunContext ctx{0, 7, 7, &pool, 0, 7, 0, nullptr, nullptr};
  m->entry_as<jit::GlueFn>()(&ctx);
  for (int64_t r = 0; r < 40; ++r) EXPECT_EQ(y[r], r < 28 ? r * 1000 : -1) << "row " << r;
}

// The output tail's arguments: a row pointer base + out_first * row_bytes, and a split over
// n_out rows of tokens.
TEST(Glue, OutputTailRowsFollowTheContext) {
  for (auto [out_first, n_out] : {std::pair<int64_t, int64_t>{0, 7}, {6, 1}}) {
    std::vector<int64_t> y(40, -1);
    GlueStep s;
    s.name = "fill_rows";
    s.fn = reinterpret_cast<const void*>(&fill_rows);
    // Rows of 4 int64: the row pointer moves by 32 bytes per out_first.
    s.args = {GlueArg::ptr_plus(y.data(), RuntimeValue::OutFirst, 4 * sizeof(int64_t)),
              GlueArg::rt(RuntimeValue::NOut), GlueArg::begin(), GlueArg::end()};
    s.split_total = 4;
    s.split_by_tokens = true;
    s.split_by = RuntimeValue::NOut;
    std::string err;
    auto m = emit_glue("tail", {s}, &err);
    ASSERT_TRUE(m) << err;
    ThreadPool pool(2);
    RunContext ctx{0, 7, 7, &pool, out_first, n_out, 0, nullptr, nullptr};
    m->entry_as<jit::GlueFn>()(&ctx);
    for (int64_t r = 0; r < 40; ++r) {
      const int64_t local = r - 4 * out_first;  // row within the tail's first token row
      const bool in = local >= 0 && local < 4 * n_out;
      EXPECT_EQ(y[size_t(r)], in ? local * 1000 + n_out : -1)
          << "row " << r << " out_first " << out_first;
    }
  }
}

TEST(Glue, MissingFunctionIsAnError) {
  GlueStep s;
  s.name = "nothing";
  std::string err;
  EXPECT_FALSE(emit_glue("bad", {s}, &err));
  EXPECT_NE(err.find("nothing"), std::string::npos) << err;
}

// A region of three split steps (one by tokens): one cke_parallel_region call with the
// table the glue built on the stack; every row of every step once, for any thread count.
TEST(Glue, RegionCoversEveryStepsRowsOnce) {
  for (int threads : {1, 2, 3}) {
    std::vector<int64_t> a(37, -1), b(40, -1), c(5, -1);
    auto step = [](const char* name, int64_t* y, int64_t total, int64_t align) {
      GlueStep s;
      s.name = name;
      s.fn = reinterpret_cast<const void*>(&fill_rows);
      s.args = {GlueArg::ptr(y), GlueArg::rt(RuntimeValue::Pos0), GlueArg::begin(), GlueArg::end()};
      s.split_total = total;
      s.split_align = align;
      return s;
    };
    GlueStep sa = step("a", a.data(), 37, 4), sb = step("b", b.data(), 4, 1),
             sc = step("c", c.data(), 5, 16);
    sb.split_by_tokens = true;  // 4 rows per token
    sb.with_previous = sc.with_previous = true;
    std::string err;
    auto m = emit_glue("region", {sa, sb, sc}, &err);
    ASSERT_TRUE(m) << err;
    ThreadPool pool(threads);
    RunContext ctx{3, 7, 10, &pool, 0, 7, 0, nullptr, nullptr};
    m->entry_as<jit::GlueFn>()(&ctx);
    for (int64_t r = 0; r < 37; ++r) EXPECT_EQ(a[r], r * 1000 + 3) << "a row " << r;
    for (int64_t r = 0; r < 40; ++r) EXPECT_EQ(b[r], r < 28 ? r * 1000 + 3 : -1) << "b row " << r;
    for (int64_t r = 0; r < 5; ++r) EXPECT_EQ(c[r], r * 1000 + 3) << "c row " << r;
  }
}

// Only a split step can join a region, and only after another split step.
TEST(Glue, RegionOfAnUnsplitStepIsAnError) {
  int64_t sink = 0;
  GlueStep plain;
  plain.name = "plain";
  plain.fn = reinterpret_cast<const void*>(&fill_rows);
  plain.args = {GlueArg::ptr(&sink), GlueArg::i64(0), GlueArg::i64(0), GlueArg::i64(1)};
  GlueStep split = plain;
  split.name = "split";
  split.args = {GlueArg::ptr(&sink), GlueArg::i64(0), GlueArg::begin(), GlueArg::end()};
  split.split_total = 1;
  split.with_previous = true;
  std::string err;
  EXPECT_FALSE(emit_glue("bad", {plain, split}, &err));
  EXPECT_NE(err.find("'split' joins a parallel region"), std::string::npos) << err;
  EXPECT_FALSE(emit_glue("bad", {split}, &err));
}

}  // namespace
}  // namespace cke::jit
