// The resolver's fusion pass (resolve.h) on synthetic data: the converting linear's two
// nodes (act_quant proj.x_q8_0, then linear proj) as the pattern of a fused contract
// conv_linear.t. The real tree's fused contracts: RealTree.FusedStepsInTheDefaultPlan.
#include <gtest/gtest.h>

#include "resolver/conversions.h"
#include "resolver/xray.h"
#include "resolver_test_util.h"

namespace cke::test {
namespace {

std::string q8_contract() {
  std::string c = linear_contract("linear.q4_0.t", "q4_0", "lin_a");
  c.replace(c.find("ports: {x: f32"), 14, "ports: {x: q8_0");
  return c + "convert: {x: {from: f32, via: conv.q8_0.t}}\n";
}

std::string conv_contract() {
  return "schema: cke.contract/1\nid: conv.q8_0.t\nop: act_quant\nvariant: q8_0\nprofile: t\n"
         "ports: {x: f32, y: q8_0}\naccumulator: none\nreduction_order: test\nrounding: [test]\n"
         "thread_count_changes_arithmetic: false\nreference: conv_q8_0\ncomparison: bit_exact\n";
}

std::string conv_map() {
  return "schema: cke.kernel_map/1\nid: conv_q8_0\nop: act_quant\ninterface: act_quant.rows.v1\n"
         "contract: conv.q8_0.t\n"
         "selection: {status: production, priority: 100, phases: [prefill, decode]}\n"
         "requires: {isa: [], shape: []}\nports:\n  inputs: {x: {dtype: f32, shape: [K, T]}}\n"
         "  outputs: {y: {dtype: q8_0, shape: [K, T]}}\nimpl: {function: conv_q8_0}\n"
         "call_abi: [input:x, output:y, dim:K, dim:T, range:begin, range:end]\n"
         "parallel: {dim: T, min_chunk: 1, changes_arithmetic: false}\n";
}

std::string q8_linear_map() {
  std::string m = linear_map({});
  m.replace(m.find("x: {dtype: f32"), 14, "x: {dtype: q8_0");
  return m;
}

// `stages`: the composes block (default: the two nodes' contracts, wired as the graph is).
std::string fused_contract(const std::string& stages = "") {
  return "schema: cke.contract/1\nid: conv_linear.t\nop: conv_linear\nprofile: t\n"
         "ports: {x: f32, xq: q8_0, w: q4_0, y: f32}\n" +
         (stages.empty() ? "composes:\n"
                           "  - {contract: conv.q8_0.t, ports: {x: x, y: xq}}\n"
                           "  - {contract: linear.q4_0.t, ports: {x: xq, w: w, y: y}}\n"
                         : stages) +
         "accumulator: f32\nreduction_order: test\nrounding: [test]\n"
         "thread_count_changes_arithmetic: false\nreference: fused_ref\ncomparison: bit_exact\n";
}

std::string fused_map(const std::string& id, int priority, const std::string& isa = "[]") {
  return "schema: cke.kernel_map/1\nid: " + id +
         "\nop: conv_linear\ninterface: conv_linear.v1\ncontract: conv_linear.t\n"
         "selection: {status: production, priority: " +
         std::to_string(priority) +
         ", phases: [prefill, decode]}\n"
         "requires: {isa: " +
         isa +
         ", shape: []}\nports:\n  inputs: {x: {dtype: f32, shape: [K, T]}}\n"
         "  weights: {w: {dtype: q4_0, shape: [K, N]}}\n"
         "  outputs: {xq: {dtype: q8_0, shape: [K, T]}, y: {dtype: f32, shape: [N, T]}}\n"
         "impl: {function: " +
         id +
         "}\ncall_abi: [input:x, weight:w, output:xq, output:y, dim:K, dim:N, dim:T]\n"
         "parallel: none\n";
}

struct Fixture {
  Registry reg;
  Graph graph;
};

// The two-node graph and a registry with the fused providers `fused` (id -> priority).
Fixture fixture(const std::vector<std::string>& fused, const std::string& contract = "") {
  std::vector<std::string> maps = {q8_linear_map(), conv_map(), fused_map("fused_ref", 10)};
  maps.insert(maps.end(), fused.begin(), fused.end());
  Fixture f{build_ok(maps, {q8_contract(), conv_contract(), fused_contract(contract)}),
            graph_ok(linear_circuit(), linear_facts(64, 16, DType::Q4_0))};
  std::vector<LoadError> errors;
  EXPECT_TRUE(insert_conversions(&f.graph, f.reg, &errors)) << format_errors(errors);
  EXPECT_EQ(f.graph.nodes.size(), 2u);
  return f;
}

const ResolveOptions kDecode{false, true, {Phase::Decode}};

TEST(Fusion, AFusedProviderAboveTheStepsReplacesThem) {
  Fixture f = fixture({fused_map("fused_fast", 150)});
  const Resolution r = resolve(f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].provider->id, "fused_fast");
  EXPECT_EQ(r.steps[0].node, 0u);
  EXPECT_EQ(r.steps[0].span, 2u);
  // The call binds the pattern's buffers: x (the graph input), xq (the conversion's
  // output), w and y.
  ASSERT_EQ(r.steps[0].args.size(), 7u);
  EXPECT_EQ(r.steps[0].args[0].buffer, f.graph.nodes[0].port("x")->buffer);
  EXPECT_EQ(r.steps[0].args[2].buffer, f.graph.nodes[0].port("y")->buffer);
  EXPECT_EQ(r.steps[0].args[3].buffer, f.graph.nodes[1].port("y")->buffer);
  ASSERT_EQ(r.fusions.size(), 1u);
  EXPECT_EQ(r.fusions[0].outcome, "fused");
  EXPECT_EQ(r.fusions[0].decision.winner, "fused_fast");
  EXPECT_EQ(r.fusions[0].decision.contract, "conv_linear.t");
  // Both nodes keep their own decisions (the evidence of what was replaced).
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[0].winner, "conv_q8_0");
  EXPECT_EQ(r.decisions[1].winner, "lin_a");
  const nlohmann::json t = xray_trace(r, f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  ASSERT_EQ(t["fusions"].size(), 1u);
  EXPECT_EQ(t["fusions"][0]["nodes"], nlohmann::json({"proj.x_q8_0", "proj"}));
  EXPECT_EQ(t["fusions"][0]["outcome"], "fused");
  EXPECT_EQ(t["fusions"][0]["decision"]["winner"], "fused_fast");
}

TEST(Fusion, BelowAStepItWouldReplaceTheNodesKeepTheirSteps) {
  Fixture f = fixture({});  // only fused_ref, priority 10
  const Resolution r = resolve(f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].provider->id, "conv_q8_0");
  EXPECT_EQ(r.steps[1].provider->id, "lin_a");
  ASSERT_EQ(r.fusions.size(), 1u);
  EXPECT_EQ(r.fusions[0].outcome, "outranked");
  EXPECT_NE(r.fusions[0].detail.find("fused_ref (production, 10) against"), std::string::npos)
      << r.fusions[0].detail;
}

TEST(Fusion, LevelWithAStepItWouldReplaceIsATieFault) {
  Fixture f = fixture({fused_map("fused_level", 100)});
  const Resolution r = resolve(f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.fusion_faults.size(), 1u);
  EXPECT_EQ(r.fusions[r.fusion_faults[0]].outcome, "tie");
  EXPECT_NE(r.fault_report().find("resolution fault [fusion_tie]: nodes proj.x_q8_0 + proj"),
            std::string::npos)
      << r.fault_report();
}

TEST(Fusion, TwoFusedProvidersLevelAtTheTopAreATie) {
  Fixture f = fixture({fused_map("fused_a", 150), fused_map("fused_b", 150)});
  const Resolution r = resolve(f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.fault_report().find("tie"), std::string::npos) << r.fault_report();
}

TEST(Fusion, AnIneligibleFusedProviderIsTracedAndTheNextOneCompetes) {
  Fixture f = fixture({fused_map("fused_wide", 300, "[avx512f]"), fused_map("fused_fast", 150)});
  Resolution r = resolve(f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].provider->id, "fused_fast");
  const Candidate* c = find_candidate(r.fusions[0].decision, "fused_wide");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "isa_unsupported:avx512f");
  // At avx512 the wide one wins.
  r = resolve(f.graph, f.reg, *HostCaps::for_level("avx512"), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.steps[0].provider->id, "fused_wide");
}

TEST(Fusion, NodesWiredOtherwiseAreNotThePattern) {
  // The linear reads another q8_0 buffer than the one the conversion wrote: the stages'
  // shared port xq names two buffers, so the nodes are not the pattern.
  Fixture f = fixture({fused_map("fused_fast", 150)});
  GraphBuffer other = f.graph.buffers[size_t(f.graph.nodes[0].port("y")->buffer)];
  other.name = "other_q8_0";
  f.graph.buffers.push_back(other);
  for (GraphPort& p : f.graph.nodes[1].ports)
    if (p.port == "x") p.buffer = int(f.graph.buffers.size() - 1);
  const Resolution r = resolve(f.graph, f.reg, *HostCaps::for_level("scalar"), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.steps.size(), 2u);
  EXPECT_TRUE(r.fusions.empty());
}

// The registry's checks of a fused contract, each naming the file and field.
TEST(Fusion, RegistryChecksTheStages) {
  auto errors_of = [](const std::string& stages, const std::string& extra = "") {
    std::vector<KernelMap> ms = {parse_map_ok(q8_linear_map()), parse_map_ok(conv_map()),
                                 parse_map_ok(fused_map("fused_ref", 10))};
    std::string fc = fused_contract(stages);
    if (!extra.empty()) fc += extra;
    std::vector<Contract> cs = {parse_contract_ok(q8_contract()),
                                parse_contract_ok(conv_contract()),
                                parse_contract_ok(fc, "f.yaml")};
    std::vector<LoadError> errors;
    EXPECT_FALSE(Registry::build(ms, cs, {}, &errors));
    return errors;
  };
  std::vector<LoadError> e = errors_of(
      "composes:\n  - {contract: conv.q8_0.t, ports: {x: x, y: xq}}\n"
      "  - {contract: linear.nope.t, ports: {x: xq, w: w, y: y}}\n");
  EXPECT_TRUE(has_error(e, "f.yaml", "composes[1].contract", "unknown contract 'linear.nope.t'"))
      << format_errors(e);
  e = errors_of(
      "composes:\n  - {contract: conv.q8_0.t, ports: {x: x}}\n"
      "  - {contract: linear.q4_0.t, ports: {x: xq, w: w, y: y}}\n");
  EXPECT_TRUE(has_error(e, "f.yaml", "composes[0].ports", "port 'y' of conv.q8_0.t is not bound"))
      << format_errors(e);
  e = errors_of(
      "composes:\n  - {contract: conv.q8_0.t, ports: {x: x, y: w}}\n"
      "  - {contract: linear.q4_0.t, ports: {x: xq, w: w, y: y}}\n");
  EXPECT_TRUE(has_error(e, "f.yaml", "composes[0].ports.y",
                        "conv.q8_0.t takes q8_0 but fused port 'w' is q4_0"))
      << format_errors(e);
  e = errors_of("", "params: {eps: f32}\n");
  EXPECT_TRUE(
      has_error(e, "f.yaml", "params", "a fused contract's params are exactly its stages' params"))
      << format_errors(e);
}

TEST(Fusion, ParserRefusesAComposesThatIsNotAPattern) {
  std::vector<LoadError> errors;
  EXPECT_FALSE(parse_contract(fused_contract("composes:\n  - {contract: conv.q8_0.t, ports: "
                                             "{x: x, y: xq}}\n"),
                              "f.yaml", &errors));
  EXPECT_TRUE(has_error(errors, "f.yaml", "composes", "expected a list of at least two stages"))
      << format_errors(errors);
  errors.clear();
  EXPECT_FALSE(parse_contract(
      fused_contract("composes:\n  - {contract: conv.q8_0.t, ports: {x: x, y: nope}}\n"
                     "  - {contract: linear.q4_0.t, ports: {x: xq, w: w, y: y}}\n"),
      "f.yaml", &errors));
  EXPECT_TRUE(has_error(errors, "f.yaml", "composes[0].ports.y",
                        "'nope' is not a port of the fused contract"))
      << format_errors(errors);
}

}  // namespace
}  // namespace cke::test
