// The generator table: names, ISA names, argument kinds equal to the reference kernels'
// (so a map's call_abi checked against either agrees), errors as values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "jit/generators.h"
#include "jit_test_util.h"
#include "kernels/formats/layouts.h"
#include "kernels/registry.h"
#include "resolver/features.h"

namespace cke::test {
namespace {

TEST(JitGenerators, TableIsConsistent) {
  std::set<std::string_view> names;
  ASSERT_FALSE(jit::generators().empty());
  for (const jit::Generator& g : jit::generators()) {
    SCOPED_TRACE(std::string(g.name));
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate generator name";
    EXPECT_EQ(jit::find_generator(g.name), &g);
    EXPECT_NE(g.build, nullptr);
    EXPECT_GT(g.n_isa, 0);
    for (int i = 0; i < g.n_isa; ++i)
      EXPECT_TRUE(feature_from_name(g.isa[i]).has_value()) << "unknown feature " << g.isa[i];
    // Same argument kinds as the reference kernel of its op and format: <op>_<w>_f32__ref
    // for linear (linear_q4_0x8__avx2 -> linear_q4_0_f32__ref), <op>_f32__ref otherwise.
    std::string fmt(g.name.substr(0, g.name.find("__")));  // linear_q4_0x8, attention_f32
    fmt = fmt.substr(0, fmt.find("x8"));
    // A generator for a repacked layout (linear_q4_0_r16) has its dtype's reference.
    for (const WeightLayout& l : weight_layouts()) {
      const size_t at = fmt.rfind(l.name);
      if (at != std::string::npos && at > 0 && at + l.name.size() == fmt.size()) {
        fmt.resize(at);
        fmt.append(dtype_name(l.dtype));
      }
    }
    // One that computes on f32 copies (linear_f16_tinyblas_wide) has its contract's.
    if (fmt.size() > 5 && fmt.compare(fmt.size() - 5, 5, "_wide") == 0) fmt.resize(fmt.size() - 5);
    const KernelSymbol* ref = find_kernel_symbol(fmt + "__ref");
    if (!ref) ref = find_kernel_symbol(fmt + "_f32__ref");
    // The expert matmuls (linear_id__<isa>, any format): linear_id_<w>_f32__ref share one ABI.
    if (!ref) ref = find_kernel_symbol(fmt + "_f32_f32__ref");
    ASSERT_NE(ref, nullptr);
    ASSERT_EQ(g.n_args, ref->n_args);
    for (int i = 0; i < g.n_args; ++i) EXPECT_EQ(g.args[i], ref->args[i]) << "argument " << i;
  }
}

TEST(JitGenerators, UnknownNameAndParamsAreErrors) {
  std::string err;
  EXPECT_EQ(jit::find_generator("linear_q8_0_f32__nope"), nullptr);
  EXPECT_EQ(jit::generate_kernel("linear_q8_0_f32__nope", {}, "x", &err), nullptr);
  EXPECT_NE(err.find("unknown kernel generator"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(jit::generate_kernel("linear_q8_0__avx2", {{"unroll", "4"}}, "x", &err), nullptr);
  EXPECT_NE(err.find("unroll"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(jit::generate_kernel("linear_q8_0__avx2", {{"rows", "four"}}, "x", &err), nullptr);
  EXPECT_NE(err.find("not an integer"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(jit::generate_kernel("linear_q8_0__avx512vnni", {{"rows", "3"}}, "x", &err), nullptr);
  EXPECT_NE(err.find("tile 3x1"), std::string::npos) << err;
  err.clear();
  std::string c;
  EXPECT_FALSE(jit::kernel_c_source("linear_f32__avx2", {{"tokens", "2"}}, "x", &c, &err));
  EXPECT_NE(err.find("tile 1x2"), std::string::npos) << err;
}

// Emitting needs no particular CPU: every generator produces code anywhere.
TEST(JitGenerators, EveryGeneratorEmits) {
  for (const jit::Generator& g : jit::generators()) {
    std::string err;
    auto m = jit::generate_kernel(g.name, {}, "some_id", &err);
    ASSERT_NE(m, nullptr) << g.name << ": " << err;
    EXPECT_EQ(m->name(), "some_id");
    EXPECT_NE(m->entry(), nullptr);
    EXPECT_GT(m->code_size(), 64u);
  }
}

// objdump's listing of a module's code ("" when objdump is unavailable).
std::string disassemble(const jit::KernelModule& m) {
  char bin[] = "/tmp/cke_jit_codeXXXXXX";
  const int fd = mkstemp(bin);
  if (fd < 0) return "";
  const bool wrote = write(fd, m.code(), m.code_size()) == ssize_t(m.code_size());
  close(fd);
  const std::string lst = std::string(bin) + ".lst";
  const std::string cmd =
      std::string("objdump -D -b binary -m i386:x86-64 ") + bin + " > " + lst + " 2>/dev/null";
  std::string text;
  if (wrote && std::system(cmd.c_str()) == 0) {
    std::ifstream in(lst);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::remove(bin);
  std::remove(lst.c_str());
  return text;
}

// The first line of `asm_text` that needs AVX-512 (zmm, k registers, registers 16-31,
// EVEX decorations, EVEX-only mnemonics, a VNNI op not marked {vex}: objdump marks
// AVX-VNNI's VEX form so, and prints the EVEX one bare) or does not decode, or "".
std::string first_avx512_line(const std::string& asm_text) {
  static const std::regex vnni(R"(\bvpdp(bu|ws)sd\b)");
  static const std::regex evex(
      R"(zmm|%k[0-7]\b|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|\{|\(bad\)|)"
      R"(\b(vpxor[dq]|vpandn?[dq]|vpor[dq]|vmovdq[au](8|16|32|64)|v\w+(32|64)x[248]|)"
      R"(vpblendm\w*|vpmov\w+2m|vpmovm2\w+|vpmov[dwq][bwd]|k(mov|xnor|and|or|not|shift|test|add)\w*)\b)");
  std::istringstream in(asm_text);
  for (std::string line; std::getline(in, line);) {
    const size_t v = line.find("{vex} ");
    if (v == std::string::npos ? std::regex_search(line, vnni)
                               : std::regex_search(std::string(line).erase(v, 6), evex))
      return line;
    if (v == std::string::npos && std::regex_search(line, evex)) return line;
  }
  return "";
}

bool needs_avx512(const jit::Generator& g) {
  for (int i = 0; i < g.n_isa; ++i)
    if (g.isa[i].substr(0, 6) == "avx512") return true;
  return false;
}

// A generator that does not require AVX-512 must not contain any: it would fault on an
// AVX2-only CPU (which this host may not be). Checked on the disassembly; the AVX-512
// generators are the positive control of the check.
TEST(JitGenerators, Avx2CodeHasNoAvx512Instruction) {
  for (const jit::Generator& g : jit::generators()) {
    SCOPED_TRACE(std::string(g.name));
    std::string err;
    auto m = jit::generate_kernel(g.name, {}, "some_id", &err);
    ASSERT_NE(m, nullptr) << err;
    const std::string text = disassemble(*m);
    if (text.empty()) GTEST_SKIP() << "objdump not available to disassemble JIT code";
    ASSERT_NE(text.find("ret"), std::string::npos) << text.substr(0, 2000);
    const std::string bad = first_avx512_line(text);
    if (needs_avx512(g))
      EXPECT_NE(bad, "") << "the check finds nothing in AVX-512 code";
    else
      EXPECT_EQ(bad, "");
  }
}

}  // namespace
}  // namespace cke::test
