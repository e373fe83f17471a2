// Circuits: strict loading (never a provider), instantiation against model facts.
#include <gtest/gtest.h>

#include <cmath>

#include "resolver_test_util.h"

namespace cke {
namespace {

using test::has_error;

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << "fixture text lacks: " << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

std::vector<LoadError> circuit_errors(const std::string& text) {
  std::vector<LoadError> errors;
  EXPECT_FALSE(parse_circuit(text, "circuits/lin.yaml", &errors).has_value()) << text;
  return errors;
}

#define EXPECT_CERROR(errors, path, reason) \
  EXPECT_TRUE(has_error(errors, "circuits/lin.yaml", path, reason)) << format_errors(errors)

TEST(CircuitLoading, NamingAProviderIsAnError) {
  const std::string base = test::linear_circuit();
  for (const char* key : {"provider", "impl", "id", "kernel", "function"}) {
    auto e = circuit_errors(replace(
        base, "{name: proj,", std::string("{") + key + ": linear_q4_0_f32__ref, name: proj,"));
    EXPECT_CERROR(e, std::string("header[0].") + key, "never providers");
  }
  auto e =
      circuit_errors(replace(base, "w: {tensor: w.weight,", "w: {provider: x, tensor: w.weight,"));
  EXPECT_CERROR(e, "weights.w.provider", "never providers");
}

TEST(CircuitLoading, StrictFieldsAndNames) {
  const std::string base = test::linear_circuit();
  EXPECT_CERROR(circuit_errors(base + "colour: red\n"), "colour", "unknown field");
  EXPECT_CERROR(
      circuit_errors(replace(base, "ports: {x: x, w: w, y: y}", "ports: {x: x, w: w, y: z}")),
      "header[0].ports.y", "'z' is not a declared weight or buffer");
  EXPECT_CERROR(
      circuit_errors(replace(base, "K: {key: t.k, type: i64}", "K: {key: t.k, type: int}")),
      "hparams.K.type", "unknown value 'int'");
  EXPECT_CERROR(circuit_errors(replace(base, "shape: [K, N]", "shape: [K, M]")), "weights.w.shape",
                "unknown name 'M'");
  EXPECT_CERROR(circuit_errors(replace(base, "shape: [K, N]", "shape: [K, T]")), "weights.w.shape",
                "T may only appear in buffer shapes");
  EXPECT_CERROR(circuit_errors(replace(base, "profile: t,", "profile: t, params: {a: L},")),
                "header[0].params.a", "L may only appear in layer nodes");
  EXPECT_CERROR(circuit_errors(replace(base, "h: [K, T]", "h: [K, \"T +\"]")), "activations.h[1]",
                "bad expression");
  EXPECT_CERROR(circuit_errors(replace(base, "  N: {key: t.n, type: i64}\n",
                                       "  N: {key: t.n, type: i64}\n  T: {key: t.t, type: i64}\n")),
                "hparams.T", "reserved");
  EXPECT_CERROR(
      circuit_errors(replace(base, "w: {tensor: w.weight,", "w: {tensor: \"blk.{L}.w\",")),
      "weights.w.tensor", "needs per_layer: true");
  EXPECT_CERROR(circuit_errors(replace(base, "schema: cke.circuit/1", "schema: cke.circuit/2")),
                "schema", "unsupported schema");
  EXPECT_CERROR(circuit_errors(replace(base, "layers: 0\n", "")), "layers",
                "missing required field");
  EXPECT_CERROR(circuit_errors(replace(base, "h: [K, T]", "h: [K, T]\n  x: [K, T]")),
                "activations.x", "already declared");
}

TEST(Instantiate, LinearGraph) {
  MapModelFacts facts = test::linear_facts(64, 32, DType::Q4_0);
  Graph g = test::graph_ok(test::linear_circuit(), facts, 128, 16);
  ASSERT_EQ(g.nodes.size(), 1u);
  const GraphNode& n = g.nodes[0];
  EXPECT_EQ(n.label(), "proj");
  const GraphBuffer& w = g.buffers[n.port("w")->buffer];
  EXPECT_EQ(w.dtype, DType::Q4_0);
  EXPECT_EQ(w.tensor, "w.weight");
  EXPECT_EQ(w.bytes, 32u * (64 / 32) * 18);  // 32 rows of two 18-byte q4_0 blocks
  const GraphBuffer& x = g.buffers[n.port("x")->buffer];
  EXPECT_EQ(x.shape, (std::vector<Value>{Value::integer(64), Value::tokens(1)}));
  EXPECT_EQ(x.bytes, 64u * 16 * 4);  // at max_tokens
  EXPECT_EQ(g.value("K"), Value::integer(64));
}

TEST(Instantiate, ErrorsNameKeyTensorAndCircuit) {
  MapModelFacts facts = test::linear_facts(64, 32, DType::Q4_0);
  std::vector<LoadError> errors;
  std::optional<Circuit> c = parse_circuit(test::linear_circuit(), "circuits/lin.yaml", &errors);
  ASSERT_TRUE(c);
  MapModelFacts no_key = facts;
  no_key.set_key("t.k", std::string("sixty-four"));
  EXPECT_FALSE(instantiate(*c, no_key, {64, 16}, &errors));
  EXPECT_TRUE(has_error(errors, "circuits/lin.yaml", "hparams.K", "is a string"))
      << format_errors(errors);
  errors.clear();
  MapModelFacts bad_shape = facts;
  bad_shape.set_tensor("w.weight", TensorFact{DType::Q4_0, {64, 33}});
  EXPECT_FALSE(instantiate(*c, bad_shape, {64, 16}, &errors));
  EXPECT_TRUE(has_error(errors, "circuits/lin.yaml", "weights.w",
                        "tensor 'w.weight' has shape [64, 33], the circuit expects [64, 32]"))
      << format_errors(errors);
  errors.clear();
  MapModelFacts no_tensor = facts;
  no_tensor.erase_tensor("w.weight");
  EXPECT_FALSE(instantiate(*c, no_tensor, {64, 16}, &errors));
  EXPECT_TRUE(has_error(errors, "circuits/lin.yaml", "weights.w", "'w.weight' is absent"))
      << format_errors(errors);
  errors.clear();
  MapModelFacts bad_block = test::linear_facts(48, 32, DType::Q4_0);
  EXPECT_FALSE(instantiate(*c, bad_block, {64, 16}, &errors));
  EXPECT_TRUE(
      has_error(errors, "circuits/lin.yaml", "weights.w", "not a whole number of q4_0 blocks"))
      << format_errors(errors);
  errors.clear();
  EXPECT_FALSE(instantiate(*c, facts, {64, 65}, &errors));
  EXPECT_TRUE(has_error(errors, "circuits/lin.yaml", "", "max_tokens must be in 1..n_ctx"));
}

const char* kLayered = R"(schema: cke.circuit/1
architecture: toy
hparams:
  n: {key: toy.n, type: i64}
  n_layer: {key: toy.layers, type: i64}
  pattern: {key: toy.pattern, type: i64, default: 2}
  window: {key: toy.window, type: i64, default: "n * 2"}
  eps: {key: toy.eps, type: f32, default: 1e-5}
derived:
  half: "n / 2"
layers: n_layer
checks: ["n % 2 == 0"]
weights:
  norm: {tensor: "blk.{L}.norm", shape: [n], per_layer: true}
  bias: {tensor: "blk.{L}.bias", shape: [n], per_layer: true, optional: true}
  emb: {tensor: emb, shape: [n, 4]}
  out: {tensor: out, shape: [n, 4], fallback: emb}
inputs:
  x: {dtype: f32, shape: [n, T]}
activations:
  a: [n, T]
state:
  cache: {shape: [n, n_ctx], per_layer: true}
outputs:
  y: [4, T]
layer:
  - {name: norm, op: rmsnorm, profile: p, ports: {x: x, w: norm, y: a}, params: {eps: eps, w: "L % pattern < pattern - 1 ? window : 0"}}
  - {name: bias, op: add_bias, profile: p, ports: {x: a, b: bias, y: a}, when: has_bias}
  - {name: heads, op: h, profile: p, ports: {x: {view: a, shape: [half, 2, T]}, c: cache}}
footer:
  - {name: out, op: linear, profile: p, ports: {x: a, w: out, y: y}}
)";

MapModelFacts toy_facts(bool with_bias, bool with_out) {
  MapModelFacts f;
  f.set_key("toy.n", int64_t{8});
  f.set_key("toy.layers", int64_t{3});
  for (int l = 0; l < 3; ++l) {
    f.set_tensor("blk." + std::to_string(l) + ".norm", {DType::F32, {8}});
    if (with_bias) f.set_tensor("blk." + std::to_string(l) + ".bias", {DType::F32, {8}});
  }
  f.set_tensor("emb", {DType::F16, {8, 4}});
  if (with_out) f.set_tensor("out", {DType::BF16, {8, 4}});
  return f;
}

TEST(Instantiate, LayersDefaultsWhenFallbackViews) {
  Graph g = test::graph_ok(kLayered, toy_facts(false, false), 32, 8);
  // 3 layers x (norm, heads) without the bias node, plus the footer.
  ASSERT_EQ(g.nodes.size(), 7u);
  EXPECT_EQ(g.nodes[0].label(), "blk.0.norm");
  EXPECT_EQ(g.nodes[1].label(), "blk.0.heads");
  EXPECT_EQ(g.nodes[6].label(), "out");
  // Per-layer params: window 16 on layers 0 and 2 (L % 2 < 1), 0 on layer 1.
  auto param = [](const GraphNode& n, const std::string& k) {
    for (const auto& [name, v] : n.params)
      if (name == k) return v;
    return Value::integer(-1);
  };
  EXPECT_EQ(param(g.nodes[0], "w"), Value::integer(16));
  EXPECT_EQ(param(g.nodes[2], "w"), Value::integer(0));
  EXPECT_EQ(param(g.nodes[4], "w"), Value::integer(16));
  EXPECT_EQ(param(g.nodes[0], "eps"), Value::real(1e-5f));
  // Per-layer weights and state are distinct buffers; the view reshapes a.
  EXPECT_NE(g.nodes[0].port("w")->buffer, g.nodes[2].port("w")->buffer);
  EXPECT_EQ(g.buffers[g.nodes[2].port("w")->buffer].tensor, "blk.1.norm");
  EXPECT_NE(g.nodes[1].port("c")->buffer, g.nodes[3].port("c")->buffer);
  EXPECT_EQ(g.nodes[1].port("x")->shape,
            (std::vector<Value>{Value::integer(4), Value::integer(2), Value::tokens(1)}));
  EXPECT_EQ(g.buffers[g.nodes[1].port("c")->buffer].shape,
            (std::vector<Value>{Value::integer(8), Value::integer(32)}));
  // Tied output: `out` is absent, the footer reads emb.
  const GraphBuffer& out = g.buffers[g.nodes[6].port("w")->buffer];
  EXPECT_EQ(out.tensor, "emb");
  EXPECT_EQ(out.dtype, DType::F16);

  Graph g2 = test::graph_ok(kLayered, toy_facts(true, true), 32, 8);
  ASSERT_EQ(g2.nodes.size(), 10u);
  EXPECT_EQ(g2.nodes[1].label(), "blk.0.bias");
  EXPECT_EQ(g2.buffers[g2.nodes[9].port("w")->buffer].tensor, "out");
}

TEST(Instantiate, ChecksAndCycles) {
  std::vector<LoadError> errors;
  std::optional<Circuit> c = parse_circuit(kLayered, "toy.yaml", &errors);
  ASSERT_TRUE(c) << format_errors(errors);
  MapModelFacts odd = toy_facts(false, false);
  odd.set_key("toy.n", int64_t{7});
  EXPECT_FALSE(instantiate(*c, odd, {32, 8}, &errors));
  EXPECT_TRUE(has_error(errors, "toy.yaml", "checks[0]", "fails 'n % 2 == 0' (n = 7 (toy.n))"))
      << format_errors(errors);

  std::string cyc = kLayered;
  cyc.replace(cyc.find("default: 2"), 10, "default: pattern + 1");
  errors.clear();
  c = parse_circuit(cyc, "toy.yaml", &errors);
  ASSERT_TRUE(c) << format_errors(errors);
  EXPECT_FALSE(instantiate(*c, toy_facts(false, false), {32, 8}, &errors));
  EXPECT_TRUE(has_error(errors, "toy.yaml", "hparams.pattern", "depends on itself"))
      << format_errors(errors);
}

TEST(Instantiate, ViewMustKeepTheElementCount) {
  std::string bad = kLayered;
  bad.replace(bad.find("[half, 2, T]"), 12, "[half, 3, T]");
  std::vector<LoadError> errors;
  std::optional<Circuit> c = parse_circuit(bad, "toy.yaml", &errors);
  ASSERT_TRUE(c);
  EXPECT_FALSE(instantiate(*c, toy_facts(false, false), {32, 8}, &errors));
  EXPECT_TRUE(has_error(errors, "toy.yaml", "layer[2] (layer 0).ports.x",
                        "does not have the same number of elements"))
      << format_errors(errors);
}

}  // namespace
}  // namespace cke

namespace cke {
namespace {

TEST(Instantiate, AbsurdMetadataIsAnErrorNotACrash) {
  std::vector<LoadError> errors;
  std::optional<Circuit> c = parse_circuit(kLayered, "toy.yaml", &errors);
  ASSERT_TRUE(c);
  MapModelFacts f = toy_facts(false, false);
  f.set_key("toy.window", double{1e30});  // an i64 hparam from a huge float
  EXPECT_FALSE(instantiate(*c, f, {32, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "toy.yaml", "hparams.window", "is not an integer"))
      << format_errors(errors);
  errors.clear();
  f = toy_facts(false, false);
  f.set_key("toy.pattern", double{NAN});
  EXPECT_FALSE(instantiate(*c, f, {32, 8}, &errors));
  errors.clear();
  // Both the output and its fallback absent.
  f = toy_facts(false, false);
  f.erase_tensor("emb");
  EXPECT_FALSE(instantiate(*c, f, {32, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "toy.yaml", "weights.emb", "'emb' is absent"))
      << format_errors(errors);
  EXPECT_TRUE(test::has_error(errors, "toy.yaml", "weights.out", "so is its fallback 'emb'"))
      << format_errors(errors);
  // A buffer larger than any machine.
  std::string big = kLayered;
  big.replace(big.find("a: [n, T]"), 9, "a: [n, 4611686018427387904, T]");
  c = parse_circuit(big, "toy.yaml", &errors);
  ASSERT_TRUE(c);
  errors.clear();
  EXPECT_FALSE(instantiate(*c, toy_facts(false, false), {32, 8}, &errors));
  EXPECT_FALSE(errors.empty());
}

}  // namespace
}  // namespace cke
