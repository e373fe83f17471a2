// resolver/conversions.h: the conversion steps a contract's `convert` asks for, on
// synthetic data (the real tree is covered by RealTree.QuantizedWeightsPickTheirContracts).
#include <gtest/gtest.h>

#include "resolver/conversions.h"
#include "resolver_test_util.h"

namespace cke::test {
namespace {

// linear.q4_0.t reads Q8_0 activations through conv.q8_0.t.
std::string converting_contract(const std::string& id, const std::string& via) {
  std::string c = linear_contract(id, "q4_0", "lin_a");
  c.replace(c.find("ports: {x: f32"), 14, "ports: {x: q8_0");
  return c + "convert: {x: {from: f32, via: " + via + "}}\n";
}

std::string conv_contract(const std::string& to) {
  return "schema: cke.contract/1\nid: conv." + to + ".t\nop: act_quant\nvariant: " + to +
         "\nprofile: t\nports: {x: f32, y: " + to +
         "}\naccumulator: none\nreduction_order: test\nrounding: [test]\n"
         "thread_count_changes_arithmetic: false\nreference: conv_" +
         to + "\ncomparison: bit_exact\n";
}

std::string conv_map(const std::string& to) {
  return "schema: cke.kernel_map/1\nid: conv_" + to +
         "\nop: act_quant\ninterface: act_quant.rows.v1\ncontract: conv." + to +
         ".t\nselection: {status: production, priority: 100, phases: [prefill, decode]}\n"
         "requires: {isa: [], shape: []}\nports:\n  inputs: {x: {dtype: f32, shape: [K, T]}}\n"
         "  outputs: {y: {dtype: " +
         to + ", shape: [K, T]}}\nimpl: {function: conv_" + to +
         "}\ncall_abi: [input:x, output:y, dim:K, dim:T, range:begin, range:end]\n"
         "parallel: {dim: T, min_chunk: 1, changes_arithmetic: false}\n";
}

std::string q8_linear_map() {
  std::string m = linear_map({});
  m.replace(m.find("x: {dtype: f32"), 14, "x: {dtype: q8_0");
  return m;
}

TEST(Conversions, ConvertingContractGetsAStepAndTheConsumerReadsItsOutput) {
  const Registry reg =
      build_ok({q8_linear_map(), conv_map("q8_0")},
               {converting_contract("linear.q4_0.t", "conv.q8_0.t"), conv_contract("q8_0")});
  Graph g = graph_ok(linear_circuit(), linear_facts(64, 16, DType::Q4_0));
  std::vector<LoadError> errors;
  ASSERT_TRUE(insert_conversions(&g, reg, &errors)) << format_errors(errors);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "act_quant");
  EXPECT_EQ(g.nodes[0].variant, "q8_0");
  EXPECT_EQ(g.nodes[0].name, "proj.x_q8_0");
  const int out = g.nodes[0].port("y")->buffer;
  EXPECT_EQ(g.buffers[size_t(out)].dtype, DType::Q8_0);
  EXPECT_EQ(g.buffers[size_t(out)].bytes, 2u * 34 * 16);  // 64 elements x 16 tokens
  EXPECT_EQ(g.nodes[1].port("x")->buffer, out);
  Resolution r = resolve(g, reg, *HostCaps::for_level("scalar"));
  EXPECT_TRUE(r.ok()) << r.fault_report();
}

// A plain contract and a converting one that both fit: the data is ambiguous, an error
// naming the node and both contracts (never a silent pick).
TEST(Conversions, TwoFittingContractsAreAnError) {
  const Registry reg =
      build_ok({linear_map({}),
                [] {
                  MapSpec s;
                  s.id = "lin_b";
                  s.contract = "linear.q4_0b.t";
                  std::string m = linear_map(s);
                  m.replace(m.find("x: {dtype: f32"), 14, "x: {dtype: q8_0");
                  return m;
                }(),
                conv_map("q8_0")},
               {linear_contract("linear.q4_0.t", "q4_0", "lin_a"),
                [] {
                  std::string c = converting_contract("linear.q4_0b.t", "conv.q8_0.t");
                  return c.replace(c.find("reference: lin_a"), 16, "reference: lin_b");
                }(),
                conv_contract("q8_0")});
  Graph g = graph_ok(linear_circuit(), linear_facts(64, 16, DType::Q4_0));
  std::vector<LoadError> errors;
  EXPECT_FALSE(insert_conversions(&g, reg, &errors));
  EXPECT_TRUE(has_error(errors, "test.circuit", "nodes.proj",
                        "several contracts fit (some through a conversion): linear.q4_0.t, "
                        "linear.q4_0b.t"))
      << format_errors(errors);
}

// `via` must name a loaded contract that converts from -> to.
TEST(Conversions, ViaMustConvertTheRightDtypes) {
  std::vector<KernelMap> ms = {parse_map_ok(q8_linear_map()), parse_map_ok(conv_map("q8_1"))};
  std::vector<Contract> cs = {
      parse_contract_ok(converting_contract("linear.q4_0.t", "conv.q8_1.t"), "c.yaml"),
      parse_contract_ok(conv_contract("q8_1"))};
  std::vector<LoadError> errors;
  EXPECT_FALSE(Registry::build(ms, cs, {}, &errors));
  EXPECT_TRUE(has_error(errors, "c.yaml", "convert.x.via",
                        "contract 'conv.q8_1.t' does not convert f32 to q8_0"))
      << format_errors(errors);
  errors.clear();
  cs[0] = parse_contract_ok(converting_contract("linear.q4_0.t", "conv.nope.t"), "c.yaml");
  EXPECT_FALSE(Registry::build(ms, cs, {}, &errors));
  EXPECT_TRUE(has_error(errors, "c.yaml", "convert.x.via", "unknown contract 'conv.nope.t'"))
      << format_errors(errors);
}

}  // namespace
}  // namespace cke::test
