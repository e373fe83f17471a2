// Strict loading of kernel maps and contracts: every error names the file, the field path
// and the reason; the registry's cross-file rules.
#include <gtest/gtest.h>

#include "resolver_test_util.h"

namespace cke {
namespace {

using test::has_error;
using test::linear_contract;
using test::linear_map;
using test::MapSpec;

const char* kFile = "maps/lin_a.yaml";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << "fixture text lacks: " << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

std::vector<LoadError> map_errors(const std::string& text, const std::string& file = kFile) {
  std::vector<LoadError> errors;
  EXPECT_FALSE(parse_kernel_map(text, file, &errors).has_value()) << text;
  EXPECT_FALSE(errors.empty());
  return errors;
}

#define EXPECT_ERROR(errors, path, reason) \
  EXPECT_TRUE(has_error(errors, kFile, path, reason)) << format_errors(errors)

TEST(MapLoading, GoodMapLoads) {
  KernelMap m = test::parse_map_ok(linear_map({}), kFile);
  EXPECT_EQ(m.id, "lin_a");
  EXPECT_EQ(m.ports.size(), 3u);
  EXPECT_EQ(m.port("w")->dtype, DType::Q4_0);
  EXPECT_EQ(m.port("y")->access, Access::Write);
  EXPECT_EQ(m.port("w")->storage, Storage::Weights);
  EXPECT_EQ(m.call_abi.size(), 8u);
  EXPECT_TRUE(m.parallel.enabled);
  EXPECT_EQ(m.shape_symbols(), (std::vector<std::string>{"K", "T", "N"}));
  EXPECT_EQ(m.sha256.size(), 64u);
}

TEST(MapLoading, UnknownField) {
  auto e = map_errors(linear_map({}) + "colour: red\n");
  EXPECT_ERROR(e, "colour", "unknown field");
  auto e2 = map_errors(replace(linear_map({}), "{dtype: f32, shape: [K, T]}",
                               "{dtype: f32, shape: [K, T], colour: red}"));
  EXPECT_ERROR(e2, "ports.inputs.x.colour", "unknown field");
  auto e3 = map_errors(replace(linear_map({}), "priority: 100", "priority: 100, weight: 3"));
  EXPECT_ERROR(e3, "selection.weight", "unknown field");
}

TEST(MapLoading, MissingField) {
  auto e = map_errors(replace(linear_map({}), "contract: linear.q4_0.t\n", ""));
  EXPECT_ERROR(e, "contract", "missing required field");
  auto e2 = map_errors(replace(linear_map({}), "{dtype: q4_0, shape: [K, N]}", "{shape: [K, N]}"));
  EXPECT_ERROR(e2, "ports.weights.w.dtype", "missing required field");
}

TEST(MapLoading, MissingOrInvalidSelectionFailsAtLoad) {
  std::string no_sel =
      replace(linear_map({}),
              "selection: {status: production, priority: 100, phases: [prefill, decode]}\n", "");
  EXPECT_ERROR(map_errors(no_sel), "selection", "missing required field");
  EXPECT_ERROR(map_errors(linear_map({.priority = -5})), "selection.priority", "priority must be");
  EXPECT_ERROR(map_errors(linear_map({.phases = "[]"})), "selection.phases", "non-empty");
  EXPECT_ERROR(map_errors(linear_map({.phases = "[decode, decode]"})), "selection.phases[1]",
               "duplicate phase");
  EXPECT_ERROR(map_errors(linear_map({.phases = "[prefill, training]"})), "selection.phases[1]",
               "unknown value 'training'");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "status: production, ", "")), "selection.status",
               "missing required field");
}

TEST(MapLoading, WrongType) {
  EXPECT_ERROR(map_errors(replace(linear_map({}), "priority: 100", "priority: high")),
               "selection.priority", "expected an integer");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "priority: 100", "priority: \"100\"")),
               "selection.priority", "expected an integer");  // quoted: a string
  EXPECT_ERROR(map_errors(replace(linear_map({}), "phases: [prefill, decode]", "phases: prefill")),
               "selection.phases", "non-empty list");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "op: linear", "op: [linear]")), "op",
               "expected a string");
  EXPECT_ERROR(
      map_errors(replace(linear_map({}), "changes_arithmetic: false", "changes_arithmetic: no")),
      "parallel.changes_arithmetic", "expected true or false");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "shape: [K, N]", "shape: K")),
               "ports.weights.w.shape", "expected a shape list");
}

TEST(MapLoading, UnknownEnum) {
  EXPECT_ERROR(map_errors(linear_map({.status = "beta"})), "selection.status",
               "unknown value 'beta'");
  EXPECT_ERROR(map_errors(linear_map({.y_extra = ", access: readwrite"})), "ports.outputs.y.access",
               "unknown value 'readwrite'");
  EXPECT_ERROR(map_errors(linear_map({.y_extra = ", layout: col_major"})), "ports.outputs.y.layout",
               "unknown value 'col_major'");
  EXPECT_ERROR(map_errors(linear_map({.y_extra = ", storage: weights"})), "ports.outputs.y.storage",
               "unknown value 'weights'");
  EXPECT_ERROR(map_errors(linear_map({.wdtype = "q9_9"})), "ports.weights.w.dtype",
               "unknown dtype 'q9_9'");
  EXPECT_ERROR(map_errors(linear_map({.isa = "[avx2, avx1024]"})), "requires.isa[1]",
               "unknown CPU feature 'avx1024'");
  // An input port cannot be written.
  EXPECT_ERROR(map_errors(replace(linear_map({}), "{dtype: f32, shape: [K, T]}",
                                  "{dtype: f32, shape: [K, T], access: write}")),
               "ports.inputs.x.access", "unknown value 'write'");
}

TEST(MapLoading, BadExpressions) {
  EXPECT_ERROR(map_errors(linear_map({.shape = "[\"K %% 32 == 0\"]"})), "requires.shape[0]",
               "bad expression");
  EXPECT_ERROR(map_errors(linear_map({.shape = "[\"M % 32 == 0\"]"})), "requires.shape[0]",
               "'M' is not a shape symbol");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "shape: [K, T]}", "shape: [K, \"T +\"]}")),
               "ports.inputs.x.shape[1]", "bad expression");
  EXPECT_ERROR(map_errors(linear_map({}) + "dims: {n: \"K * Q\"}\n"), "dims.n",
               "'Q' is not a shape symbol");
}

TEST(MapLoading, AliasToMissingPort) {
  EXPECT_ERROR(map_errors(linear_map({.y_extra = ", alias_of: z"})), "ports.outputs.y.alias_of",
               "no port 'z'");
  EXPECT_ERROR(map_errors(linear_map({.y_extra = ", may_alias: [x, q]"})),
               "ports.outputs.y.may_alias", "no port 'q'");
  EXPECT_ERROR(map_errors(linear_map({.y_extra = ", alias_of: y"})), "ports.outputs.y.alias_of",
               "cannot alias itself");
}

TEST(MapLoading, CallAbiBindsEveryPortExactlyOnce) {
  EXPECT_ERROR(map_errors(replace(linear_map({}), "weight:w, ", "")), "call_abi",
               "port 'w' is bound 0 times");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "weight:w, ", "weight:w, weight:w, ")),
               "call_abi", "port 'w' is bound 2 times");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "dim:K,", "dim:M,")), "call_abi[3]",
               "not a shape symbol");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "input:x,", "output:x,")), "call_abi[0]",
               "is a input port");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "dim:T,", "runtime:time,")), "call_abi[5]",
               "unknown runtime value");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "dim:T,", "param:eps,")), "call_abi[5]",
               "no param 'eps'");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "dim:T,", "dimT,")), "call_abi[5]",
               "is not <source>:<name>");
  EXPECT_ERROR(map_errors(replace(linear_map({}), ", range:begin, range:end", "")), "call_abi",
               "range:begin and range:end exactly once");
  EXPECT_ERROR(map_errors(replace(linear_map({}),
                                  "parallel: {dim: N, min_chunk: 16, changes_arithmetic: false}",
                                  "parallel: none")),
               "call_abi", "need a `parallel` split");
}

TEST(MapLoading, IdMustMatchFileName) {
  std::vector<LoadError> errors;
  EXPECT_FALSE(parse_kernel_map(linear_map({}), "maps/other_name.yaml", &errors));
  EXPECT_TRUE(has_error(errors, "maps/other_name.yaml", "id", "differs from the file name"))
      << format_errors(errors);
  EXPECT_ERROR(map_errors(linear_map({.id = "Lin-A"})), "id", "not a valid provider id");
}

TEST(MapLoading, ImplNeedsExactlyOneOfFunctionAndGenerator) {
  EXPECT_ERROR(map_errors(replace(linear_map({}), "impl: {function: lin_a}", "impl: {}")), "impl",
               "exactly one of");
  EXPECT_ERROR(map_errors(replace(linear_map({}), "impl: {function: lin_a}",
                                  "impl: {function: lin_a, generator: g}")),
               "impl", "exactly one of");
  test::parse_map_ok(replace(linear_map({}), "impl: {function: lin_a}",
                             "impl: {generator: gemv_avx512, params: {tile: \"16\"}}"),
                     kFile);
}

TEST(MapLoading, YamlSyntaxErrorHasALine) {
  std::vector<LoadError> errors;
  EXPECT_FALSE(
      parse_kernel_map("schema: cke.kernel_map/1\nid: [unclosed\nop: linear\n", kFile, &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].reason.find("YAML syntax error"), std::string::npos);
  EXPECT_GT(errors[0].line, 0);
}

TEST(MapLoading, DuplicateKey) {
  EXPECT_ERROR(map_errors(linear_map({}) + "op: linear\n"), "op", "duplicate key");
}

TEST(MapLoading, ErrorsNameFileAndLine) {
  auto e = map_errors(linear_map({.wdtype = "q9_9"}));
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(e[0].file, kFile);
  EXPECT_EQ(e[0].line, 10);  // the weights line
  EXPECT_NE(e[0].str().find("maps/lin_a.yaml:10: ports.weights.w.dtype: unknown dtype 'q9_9'"),
            std::string::npos)
      << e[0].str();
}

TEST(ContractLoading, StrictFields) {
  const std::string good = linear_contract("linear.q4_0.t", "q4_0", "lin_a");
  Contract c = test::parse_contract_ok(good);
  EXPECT_EQ(c.port("w")->dtype, DType::Q4_0);
  EXPECT_EQ(c.comparison.kind, Comparison::Kind::BitExact);
  std::vector<LoadError> e;
  EXPECT_FALSE(
      parse_contract(replace(good, "comparison: bit_exact", "comparison: approx"), "c.yaml", &e));
  EXPECT_TRUE(has_error(e, "c.yaml", "comparison", "unknown comparison 'approx'"))
      << format_errors(e);
  e.clear();
  EXPECT_FALSE(
      parse_contract(replace(good, "comparison: bit_exact", "comparison: rel:2"), "c.yaml", &e));
  EXPECT_TRUE(has_error(e, "c.yaml", "comparison", "unknown comparison")) << format_errors(e);
  Contract ulp =
      test::parse_contract_ok(replace(good, "comparison: bit_exact", "comparison: ulp:4"));
  EXPECT_EQ(ulp.comparison.kind, Comparison::Kind::Ulp);
  EXPECT_EQ(ulp.comparison.bound, 4);
  // Out of int64's range: an error, not a conversion with undefined behaviour (found by
  // fuzz_contract).
  for (const char* bad : {"ulp:1e300", "ulp:inf", "ulp:9223372036854775808", "ulp:nan"}) {
    e.clear();
    EXPECT_FALSE(parse_contract(
        replace(good, "comparison: bit_exact", std::string("comparison: ") + bad), "c.yaml", &e))
        << bad;
    EXPECT_TRUE(has_error(e, "c.yaml", "comparison", "unknown comparison")) << format_errors(e);
  }
  Contract rel =
      test::parse_contract_ok(replace(good, "comparison: bit_exact", "comparison: rel:1e-5"));
  EXPECT_EQ(rel.comparison.str(), "rel:1e-05");
  e.clear();
  EXPECT_FALSE(parse_contract(replace(good, "w: q4_0", "w: q4_00"), "c.yaml", &e));
  EXPECT_TRUE(has_error(e, "c.yaml", "ports.w", "unknown dtype")) << format_errors(e);
  e.clear();
  EXPECT_FALSE(
      parse_contract(replace(good, "accumulator: f32", "accumulator: f128"), "c.yaml", &e));
  EXPECT_TRUE(has_error(e, "c.yaml", "accumulator", "unknown value 'f128'")) << format_errors(e);
  e.clear();
  EXPECT_FALSE(
      parse_contract(replace(good, "thread_count_changes_arithmetic: false\n", ""), "c.yaml", &e));
  EXPECT_TRUE(has_error(e, "c.yaml", "thread_count_changes_arithmetic", "missing required field"));
  Contract any = test::parse_contract_ok(linear_contract("linear.any.t", "any", "lin_a"));
  EXPECT_FALSE(any.port("w")->dtype.has_value());
}

// `when`: the shapes a contract covers, over <port>_ne<i>; anything else is a load error.
TEST(ContractLoading, WhenNamesPortDims) {
  const std::string good = linear_contract("linear.q4_0.t", "q4_0", "lin_a");
  Contract c = test::parse_contract_ok(good + "when: \"w_ne1 % 8 == 0\"\n");
  ASSERT_TRUE(c.when);
  EXPECT_EQ(c.when->text(), "w_ne1 % 8 == 0");
  EXPECT_FALSE(test::parse_contract_ok(good).when);
  for (auto [when, why] : {std::pair{"z_ne1 > 0", "'z_ne1' is not <port>_ne<i>"},
                           {"w_rows > 0", "'w_rows' is not <port>_ne<i>"},
                           {"w_ne > 0", "'w_ne' is not <port>_ne<i>"},
                           {"w_ne1 %", "bad expression"}}) {
    std::vector<LoadError> e;
    EXPECT_FALSE(parse_contract(good + "when: \"" + when + "\"\n", "c.yaml", &e)) << when;
    EXPECT_TRUE(has_error(e, "c.yaml", "when", why)) << when << ": " << format_errors(e);
  }
}

// ---- cross-file rules (Registry::build)

std::vector<LoadError> build_errors(const std::vector<std::string>& maps,
                                    const std::vector<std::string>& contracts,
                                    const SymbolLookup& symbols = {}) {
  std::vector<KernelMap> ms;
  std::vector<Contract> cs;
  for (size_t i = 0; i < maps.size(); ++i)
    ms.push_back(test::parse_map_ok(maps[i], "map" + std::to_string(i)));
  for (size_t i = 0; i < contracts.size(); ++i)
    cs.push_back(test::parse_contract_ok(contracts[i], "contract" + std::to_string(i)));
  std::vector<LoadError> errors;
  EXPECT_FALSE(Registry::build(ms, cs, symbols, &errors).has_value());
  EXPECT_FALSE(errors.empty());
  return errors;
}

const std::string kContract = linear_contract("linear.q4_0.t", "q4_0", "lin_a");

TEST(RegistryLoading, DuplicateId) {
  auto e = build_errors({linear_map({}), linear_map({})}, {kContract});
  EXPECT_TRUE(has_error(e, "map1", "id", "duplicate provider id 'lin_a' (also in map0)"))
      << format_errors(e);
}

TEST(RegistryLoading, UnknownContractAndReference) {
  auto e = build_errors({linear_map({.contract = "linear.nope.t"})}, {kContract});
  EXPECT_TRUE(has_error(e, "map0", "contract", "unknown contract 'linear.nope.t'"))
      << format_errors(e);
  auto e2 = build_errors({linear_map({})},
                         {kContract, linear_contract("linear.q8_0.t", "q8_0", "missing_ref")});
  EXPECT_TRUE(has_error(e2, "contract1", "reference", "'missing_ref' is not a loaded kernel map"))
      << format_errors(e2);
  auto e3 = build_errors(
      {linear_map({}), linear_map({.id = "lin_b", .contract = "linear.q8_0.t", .wdtype = "q8_0"})},
      {kContract, linear_contract("linear.q8_0.t", "q8_0", "lin_a")});
  EXPECT_TRUE(has_error(e3, "contract1", "reference", "implements contract 'linear.q4_0.t'"))
      << format_errors(e3);
}

TEST(RegistryLoading, MapMustAgreeWithItsContract) {
  auto e = build_errors({linear_map({.wdtype = "q8_0"})}, {kContract});
  EXPECT_TRUE(has_error(e, "map0", "ports.w.dtype", "differs from contract linear.q4_0.t"))
      << format_errors(e);
}

TEST(RegistryLoading, InterfaceMeansSamePortsAndCall) {
  std::string other = replace(linear_map({.id = "lin_b"}), "dim:K, dim:N", "dim:N, dim:K");
  auto e = build_errors({linear_map({}), other}, {kContract});
  EXPECT_TRUE(has_error(e, "map1", "interface", "different ports, params or call_abi"))
      << format_errors(e);
}

TEST(RegistryLoading, SymbolMustExistWithTheSameArgKinds) {
  auto none = [](std::string_view) -> const KernelSymbol* { return nullptr; };
  auto e = build_errors({linear_map({})}, {kContract}, none);
  EXPECT_TRUE(has_error(e, "map0", "impl.function", "symbol 'lin_a' is not linked"))
      << format_errors(e);
  static const KernelSymbol kWrong{"lin_a",
                                   nullptr,
                                   8,
                                   {ArgKind::Ptr, ArgKind::Ptr, ArgKind::Ptr, ArgKind::I64,
                                    ArgKind::I64, ArgKind::F32, ArgKind::I64, ArgKind::I64}};
  auto e2 = build_errors({linear_map({})}, {kContract}, [](std::string_view) { return &kWrong; });
  EXPECT_TRUE(
      has_error(e2, "map0", "call_abi",
                "argument kinds (ptr, ptr, ptr, i64, i64, i64, i64, i64) differ from the C++ "
                "signature of 'lin_a' (ptr, ptr, ptr, i64, i64, f32, i64, i64)"))
      << format_errors(e2);
  // The right kinds load.
  test::build_ok({linear_map({})}, {kContract}, test::fake_linear_symbols());
}

TEST(RegistryLoading, FromFilesAndDirs) {
  std::vector<LoadError> errors;
  std::optional<Registry> r =
      Registry::load({test::fixtures("seed/maps")}, test::fake_linear_symbols(), &errors);
  ASSERT_TRUE(r) << format_errors(errors);
  ASSERT_EQ(r->maps().size(), 4u);
  EXPECT_EQ(r->maps()[0].id, "seed_p100");  // sorted by id
  EXPECT_EQ(r->maps_for_op("linear").size(), 4u);
  EXPECT_TRUE(r->maps_for_op("rope").empty());
  EXPECT_EQ(r->provenance().size(), 5u);
  EXPECT_FALSE(Registry::load({test::fixtures("no_such_dir")}, {}, &errors));
  EXPECT_TRUE(has_error(errors, "no_such_dir", "", "not a directory"));
}

}  // namespace
}  // namespace cke
