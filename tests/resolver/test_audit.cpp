// cke-audit's checks: the test-name scan, the ratchet (regressions fail, improvements do
// not), and the audit of the real tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kernels/registry.h"
#include "resolver/audit.h"
#include "resolver_test_util.h"
#include "tests/common/files.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

// A scratch copy of the tree's data (kernel_maps/, circuits/) plus a tests/ folder.
class AuditTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("cke_audit_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "tests" / "kernels");
    fs::copy(test::source_path("kernel_maps"), root_ / "kernel_maps", fs::copy_options::recursive);
    fs::copy(test::source_path("circuits"), root_ / "circuits", fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::string read(const fs::path& rel) { return test::read_file(root_ / rel); }
  AuditReport audit(bool update = false) { return run_audit({root_, {}, update, {}}); }

  fs::path root_;
};

bool contains(const std::vector<std::string>& v, const std::string& needle) {
  for (const std::string& s : v)
    if (s.find(needle) != std::string::npos) return true;
  return false;
}

TEST_F(AuditTree, ScansTestNames) {
  // Only a TEST that can fail counts: a body with a statement, not commented out, not in
  // a string, not DISABLED_.
  write("tests/a/t.cpp",
        "TEST(RefLinear, linear_f32_f32__ref) { run(\"x\"); }\n"
        "TEST_F(Fixture,  rmsnorm_f32__ref ) {\n  check(1);\n}\n"
        "TEST_P(P, add_f32__ref) { if (a) { b(); } }\n"
        "TESTX(NotATest, scale_f32__ref) { x(); }\n"
        "// TEST(Commented, swiglu_f32__ref) { x(); }\n"
        "/* TEST(Block, geglu_f32__ref) { x(); } */\n"
        "TEST(Empty, kv_store_f32__ref) {\n  // nothing yet\n}\n"
        "TEST(Disabled, DISABLED_embed_f32__ref) { x(); }\n"
        "const char* s = \"TEST(InString, rope_neox_f32__ref) { x(); }\";\n");
  write("tests/a/t.h", "TEST(Header, rope_normal_f32__ref) { x(); }\n");  // not scanned
  std::vector<std::string> names = scan_test_names(root_ / "tests");
  EXPECT_EQ(names,
            (std::vector<std::string>{"add_f32__ref", "linear_f32_f32__ref", "rmsnorm_f32__ref"}));
}

// GoogleTest XML reports: a parity test counts only if it ran and did not fail.
TEST_F(AuditTree, ResultsDecideWhichParityTestsCount) {
  write("tests/k/t.cpp",
        "TEST(RefOps, add_f32__ref) { a(); }\nTEST(RefOps, rmsnorm_f32__ref) { b(); }\n"
        "TEST(RefOps, scale_f32__ref) { c(); }\nTEST(RefOps, swiglu_f32__ref) { d(); }\n");
  // add passed, rmsnorm failed, scale skipped (e.g. an ISA the host lacks), swiglu absent.
  write("results/t_1.xml",
        "<testsuites><testsuite name=\"RefOps\">\n"
        "<testcase name=\"add_f32__ref\" file=\"t.cpp\" status=\"run\" result=\"completed\" "
        "classname=\"RefOps\" />\n"
        "<testcase name=\"rmsnorm_f32__ref\" status=\"run\" result=\"completed\" "
        "classname=\"RefOps\">\n<failure message=\"x\" /></testcase>\n"
        "</testsuite></testsuites>\n");
  write("results/t_2.xml",
        "<testsuites><testsuite name=\"RefOps\">\n"
        "<testcase name=\"scale_f32__ref\" status=\"run\" result=\"skipped\" "
        "classname=\"RefOps\">\n<skipped message=\"no avx512\" /></testcase>\n"
        "</testsuite></testsuites>\n");
  const TestResults tr = scan_test_results(root_ / "results");
  EXPECT_EQ(tr.reports, 2u);
  EXPECT_EQ(tr.ok, (std::set<std::string>{"add_f32__ref", "scale_f32__ref"}));
  EXPECT_EQ(tr.failed, (std::set<std::string>{"rmsnorm_f32__ref"}));
  AuditOptions o{root_, {}, false, root_ / "results"};
  AuditReport a = run_audit(o);
  EXPECT_EQ(a.current.parity_tested, (std::vector<std::string>{"add_f32__ref", "scale_f32__ref"}));
  // Without reports only the sources count.
  EXPECT_EQ(audit().current.parity_tested,
            (std::vector<std::string>{"add_f32__ref", "rmsnorm_f32__ref", "scale_f32__ref",
                                      "swiglu_f32__ref"}));
  // An empty results directory is an error, not a pass.
  std::filesystem::create_directories(root_ / "empty");
  o.results = root_ / "empty";
  EXPECT_TRUE(contains(run_audit(o).errors, "no GoogleTest XML reports"));
}

TEST_F(AuditTree, UpdateThenPassThenRegressionsFail) {
  write("tests/kernels/t.cpp",
        "TEST(RefOps, add_f32__ref) { a(); }\nTEST(RefOps, rmsnorm_f32__ref) { b(); }\n");
  AuditReport u = audit(true);
  ASSERT_TRUE(u.ok()) << u.to_text();
  EXPECT_NE(read("kernel_maps/ratchet.yaml").find("  - add_f32__ref"), std::string::npos);
  AuditReport a = audit();
  ASSERT_TRUE(a.ok()) << a.to_text();
  EXPECT_EQ(a.current.parity_tested,
            (std::vector<std::string>{"add_f32__ref", "rmsnorm_f32__ref"}));
  EXPECT_TRUE(contains(a.warnings, "without a parity test"));

  // A lost parity test is a regression.
  write("tests/kernels/t.cpp", "TEST(RefOps, add_f32__ref) { a(); }\n");
  AuditReport lost = audit();
  EXPECT_FALSE(lost.ok());
  EXPECT_TRUE(contains(lost.ratchet_violations, "provider rmsnorm_f32__ref lost its parity test"))
      << lost.to_text();

  // A gained one is an improvement: passes, with a note.
  write("tests/kernels/t.cpp",
        "TEST(RefOps, add_f32__ref) { a(); }\nTEST(RefOps, rmsnorm_f32__ref) { b(); }\n"
        "TEST(RefOps, scale_f32__ref) { c(); }\n");
  AuditReport gained = audit();
  EXPECT_TRUE(gained.ok()) << gained.to_text();
  EXPECT_TRUE(contains(gained.ratchet_improvements, "scale_f32__ref gained a parity test"));
}

TEST_F(AuditTree, DemotingTheOnlyProductionProviderFails) {
  fs::remove(root_ / "kernel_maps/geglu_generated.yaml");  // geglu on its reference alone
  ASSERT_TRUE(audit(true).ok());
  std::string m = read("kernel_maps/geglu_f32__ref.yaml");
  m.replace(m.find("status: production"), 18, "status: candidate");
  write("kernel_maps/geglu_f32__ref.yaml", m);
  AuditReport a = audit();
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(contains(a.ratchet_violations, "provider geglu_f32__ref is no longer production"));
  for (const char* level : {"scalar", "avx2", "avx512", "avx512_vnni", "amx"})
    EXPECT_TRUE(contains(a.ratchet_violations,
                         std::string("op glu.geglu has no production provider on ") + level))
        << a.to_text();
}

TEST_F(AuditTree, IsaLevelsCountOpsWithoutProduction) {
  // Only an AVX-512 provider for geglu (its generated ones removed from the scratch tree):
  // scalar and avx2 hosts have none.
  fs::remove(root_ / "kernel_maps/geglu_generated.yaml");
  std::string m = read("kernel_maps/geglu_f32__ref.yaml");
  m.replace(m.find("isa: []"), 7, "isa: [avx512f]");
  write("kernel_maps/geglu_f32__ref.yaml", m);
  AuditReport a = audit(true);
  ASSERT_TRUE(a.ok()) << a.to_text();
  EXPECT_EQ(a.current.ops_without_production["scalar"], std::vector<std::string>{"glu.geglu"});
  EXPECT_EQ(a.current.ops_without_production["avx2"], std::vector<std::string>{"glu.geglu"});
  EXPECT_TRUE(a.current.ops_without_production["avx512"].empty());
  // Restoring the scalar provider is an improvement, not a failure.
  write("kernel_maps/geglu_f32__ref.yaml",
        read("kernel_maps/geglu_f32__ref.yaml").replace(m.find("isa: [avx512f]"), 14, "isa: []"));
  AuditReport b = audit();
  EXPECT_TRUE(b.ok()) << b.to_text();
  EXPECT_TRUE(contains(b.ratchet_improvements,
                       "op glu.geglu gained a production provider on scalar hosts"));
}

TEST_F(AuditTree, ReferenceOnlyContractsMayOnlyShrink) {
  ASSERT_TRUE(audit(true).ok());
  // The generated q8_0 providers are production: on AVX2 and AVX-512 hosts linear.q8_0.ggml
  // does not run on its reference alone; on scalar hosts it does.
  AuditReport a = audit();
  auto has = [&](const char* level, const char* c) {
    return contains(a.current.reference_only[level], c);
  };
  EXPECT_TRUE(has("scalar", "linear.q8_0.ggml"));
  EXPECT_FALSE(has("avx2", "linear.q8_0.ggml"));
  EXPECT_FALSE(has("avx512_vnni", "linear.q8_0.ggml"));
  EXPECT_FALSE(has("avx2", "linear.bf16.ggml"));  // vdpbf16ps emulated without AVX512-BF16
  EXPECT_FALSE(has("avx2", "moe_route.softmax_norm.f32.ggml"));  // the generated router
  EXPECT_FALSE(has("avx512", "moe_group.i32.ggml"));             // moe_group__avx2
  EXPECT_TRUE(has("scalar", "moe_group.i32.ggml"));
  EXPECT_FALSE(has("avx2", "linear.q5_K.ggml"));
  // Dropping the AVX2 ones (their rows of the family tables: row-major and r16) makes avx2
  // hosts reference-only for q8_0: a ratchet violation.
  auto drop = [&](const char* file, std::initializer_list<const char*> ids) {
    std::string fam = read(file);
    for (const char* id : ids) {
      const size_t at = fam.find(std::string("  - {id: ") + id + ",");
      ASSERT_NE(at, std::string::npos) << id;
      const size_t end = fam.find("}\n", at);
      fam.erase(at, end + 2 - at);
    }
    write(file, fam);
  };
  drop("kernel_maps/linear_generated.yaml",
       {"linear_q8_0_f32_4x2__avx2", "linear_q8_0_f32_4x1__avx2"});
  drop("kernel_maps/linear_q8_0_r16_generated.yaml",
       {"linear_q8_0r16_f32_16x4__avx2", "linear_q8_0r16_f32_16x1__avx2"});
  AuditReport b = audit();
  EXPECT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.ratchet_violations,
                       "contract linear.q8_0.ggml runs only on its reference kernel on avx2 hosts"))
      << b.to_text();
}

TEST_F(AuditTree, DataErrorsFail) {
  ASSERT_TRUE(audit(true).ok());
  // A circuit that names a provider.
  std::string c = read("circuits/llama.yaml");
  c.replace(c.find("{name: wq, op: linear,"), 22,
            "{name: wq, op: linear, provider: linear_f32_f32__ref,");
  write("circuits/llama.yaml", c);
  AuditReport a = audit();
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(contains(a.errors, "never providers")) << a.to_text();
  // A circuit op without any contract.
  write("circuits/llama.yaml",
        read("circuits/llama.yaml").replace(c.find("provider: linear_f32_f32__ref,"), 31, ""));
  std::string c2 = read("circuits/llama.yaml");
  c2.replace(c2.find("variant: swiglu"), 15, "variant: reglu");
  write("circuits/llama.yaml", c2);
  AuditReport b = audit();
  EXPECT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.errors, "no contract for op glu variant reglu with profile ggml"))
      << b.to_text();
  // A circuit whose file name is not its architecture.
  write("circuits/llama.yaml",
        read("circuits/llama.yaml").replace(c2.find("variant: reglu"), 14, "variant: swiglu"));
  fs::rename(root_ / "circuits/llama.yaml", root_ / "circuits/llama2.yaml");
  AuditReport d = audit();
  EXPECT_FALSE(d.ok());
  EXPECT_TRUE(contains(d.errors, "architecture 'llama' differs from the file name")) << d.to_text();
}

TEST(Audit, RatchetRoundTrip) {
  RatchetState r;
  r.parity_tested = {"a__ref", "b__ref"};
  r.production = {"a__ref"};
  r.ops_without_production["avx2"] = {"glu"};
  const fs::path p =
      fs::temp_directory_path() / ("cke_ratchet_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(p) << format_ratchet(r);
  std::vector<LoadError> errors;
  std::optional<RatchetState> back = load_ratchet(p, &errors);
  fs::remove(p);
  ASSERT_TRUE(back) << format_errors(errors);
  EXPECT_EQ(back->parity_tested, r.parity_tested);
  EXPECT_EQ(back->production, r.production);
  EXPECT_EQ(back->ops_without_production["avx2"], std::vector<std::string>{"glu"});
  EXPECT_TRUE(back->ops_without_production["scalar"].empty());
}

TEST(Audit, TheRealTreePasses) {
  AuditOptions o{test::source_path(""), {}, false, {}};
  if (!kernel_symbols().empty()) o.symbols = linked_symbols();
  AuditReport r = run_audit(o);
  EXPECT_TRUE(r.ok()) << r.to_text();
  EXPECT_GE(r.n_maps, 36u);
  EXPECT_GE(r.n_circuits, 1u);
  nlohmann::json j = r.to_json();
  EXPECT_EQ(j["schema"], "cke.audit/1");
  EXPECT_EQ(j["ok"], true);
}

}  // namespace
}  // namespace cke

namespace cke {
namespace {

// Families live in circuits/ only: an architecture name in code (not in a comment, not in
// "llama.cpp") is an audit error naming file and line; the real tree has none.
TEST(AuditArchitectureNames, CodeThatNamesAFamilyIsCaught) {
  const auto root =
      std::filesystem::temp_directory_path() / ("cke_archnames_" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "runtime" / "core");
  std::filesystem::create_directories(root / "runtime" / "tokenizer");
  {
    std::ofstream f(root / "runtime" / "core" / "bad.cpp");
    f << "// qwen2 in a comment is fine\n"
         "/* so is gemma3\n   over lines */\n"
         "const char* ref = \"llama.cpp\";  // the reference, not a family\n"
         "if (arch == \"qwen2\") add_bias();\n"
         "bool gemma3_mode = false;\n"
         "int qwen2x = 1;  // another word\n";
    std::ofstream g(root / "runtime" / "tokenizer" / "pre.cpp");
    g << "if (pre == \"qwen2\") regexes = x;\n";  // tokenizer ids: exempt
  }
  auto hits = find_architecture_names(root, {"llama", "qwen2", "gemma3"});
  ASSERT_EQ(hits.size(), 1u) << ::testing::PrintToString(hits);
  EXPECT_NE(hits[0].find("runtime/core/bad.cpp:5"), std::string::npos) << hits[0];
  EXPECT_NE(hits[0].find("'qwen2'"), std::string::npos) << hits[0];
  std::filesystem::remove_all(root);
}

TEST(AuditArchitectureNames, TheRealTreeHasNone) {
  const std::filesystem::path root = CKE_SOURCE_DIR;
  auto hits = find_architecture_names(root, {"llama", "qwen2", "qwen3", "gemma3"});
  EXPECT_TRUE(hits.empty()) << ::testing::PrintToString(hits);
}

}  // namespace
}  // namespace cke
