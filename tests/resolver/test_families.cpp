// circuits/glm4.yaml and circuits/nemotron.yaml through the real maps: what each node
// resolves to, and the load errors of malformed models (naming the key or tensor).
#include <gtest/gtest.h>

#include <map>

#include "kernels/registry.h"
#include "resolver/xray.h"
#include "resolver_test_util.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

// The synthetic glm4 / nemotron files of shared/models/synthetic (n_embd 256, 2 layers,
// 4 heads, 2 KV heads, head_dim 64, rope on 32 channels, vocab 512; glm4 FFN 384 with a
// fused [256, 768] ffn_up, nemotron FFN 512), as their metadata and tensor tables say.
MapModelFacts family_facts(const std::string& arch) {
  const bool glm4 = arch == "glm4";
  MapModelFacts f;
  auto key = [&](const std::string& k, MetaValue v) { f.set_key(arch + "." + k, std::move(v)); };
  f.set_key("general.architecture", arch);
  key("embedding_length", int64_t{256});
  key("block_count", int64_t{2});
  key("feed_forward_length", int64_t{glm4 ? 384 : 512});
  key("attention.head_count", int64_t{4});
  key("attention.head_count_kv", int64_t{2});
  key("rope.dimension_count", int64_t{32});
  key(glm4 ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon", double{1e-5f});
  f.set_tensor("token_embd.weight", {DType::F32, {256, 512}});
  f.set_tensor("output_norm.weight", {DType::F32, {256}});
  f.set_tensor("output.weight", {DType::F32, {256, 512}});
  if (!glm4) f.set_tensor("output_norm.bias", {DType::F32, {256}});
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f.set_tensor(b + "attn_norm.weight", {DType::F32, {256}});
    f.set_tensor(b + "attn_q.weight", {DType::F32, {256, 256}});
    f.set_tensor(b + "attn_k.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "attn_v.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "attn_output.weight", {DType::F32, {256, 256}});
    f.set_tensor(b + "ffn_norm.weight", {DType::F32, {256}});
    if (glm4) {
      f.set_tensor(b + "attn_q.bias", {DType::F32, {256}});
      f.set_tensor(b + "attn_k.bias", {DType::F32, {128}});
      f.set_tensor(b + "attn_v.bias", {DType::F32, {128}});
      f.set_tensor(b + "post_attention_norm.weight", {DType::F32, {256}});
      f.set_tensor(b + "ffn_up.weight", {DType::F32, {256, 768}});
      f.set_tensor(b + "ffn_down.weight", {DType::F32, {384, 256}});
      f.set_tensor(b + "post_ffw_norm.weight", {DType::F32, {256}});
    } else {
      f.set_tensor(b + "attn_norm.bias", {DType::F32, {256}});
      f.set_tensor(b + "ffn_norm.bias", {DType::F32, {256}});
      f.set_tensor(b + "ffn_up.weight", {DType::F32, {256, 512}});
      f.set_tensor(b + "ffn_down.weight", {DType::F32, {512, 256}});
    }
  }
  return f;
}

Circuit family_circuit(const std::string& arch) {
  std::vector<LoadError> errors;
  std::optional<Circuit> c = load_circuit(test::source_path("circuits/" + arch + ".yaml"), &errors);
  EXPECT_TRUE(c) << format_errors(errors);
  return c ? *c : Circuit{};
}

struct Resolved {
  Graph graph;
  Resolution res;
  std::map<std::string, const Step*> decode, prefill;  // by node label
};

// The real maps, loaded once: resolved steps point into it.
const Registry* real_registry() {
  static const std::optional<Registry> reg = [] {
    std::vector<LoadError> errors;
    auto r = Registry::load({test::source_path("kernel_maps")}, linked_symbols(), &errors);
    EXPECT_TRUE(r) << format_errors(errors);
    return r;
  }();
  return reg ? &*reg : nullptr;
}

std::optional<Resolved> resolve_family(const std::string& arch) {
  std::vector<LoadError> errors;
  const Registry* reg = real_registry();
  if (!reg) return std::nullopt;
  std::optional<Graph> g =
      instantiate(family_circuit(arch), family_facts(arch), {256, 64}, &errors);
  EXPECT_TRUE(g) << format_errors(errors);
  if (!g) return std::nullopt;
  Resolved r{std::move(*g), {}, {}, {}};
  r.res = resolve(r.graph, *reg, HostCaps::probe());
  EXPECT_TRUE(r.res.ok()) << r.res.fault_report();
  for (const Step& s : r.res.steps)
    (s.phase == Phase::Decode ? r.decode : r.prefill)[r.graph.nodes[s.node].label()] = &s;
  return r;
}

#define REQUIRE_KERNELS() \
  if (kernel_symbols().empty()) GTEST_SKIP() << "the kernel symbol table is empty"

TEST(Families, Glm4FusedSwigluBiasesPostNormsPartialRope) {
  REQUIRE_KERNELS();
  std::optional<Resolved> r = resolve_family("glm4");
  ASSERT_TRUE(r);
  const Step& sw = *r->decode.at("blk.0.swiglu");
  EXPECT_EQ(sw.provider->contract, "glu.swiglu_fused.f32.ggml");
  EXPECT_EQ(sw.args[2].i64, 384);  // n = the half width
  EXPECT_NE(sw.args[0].buffer, sw.args[1].buffer);
  EXPECT_EQ(r->decode.at("blk.1.bq")->provider->contract, "add_bias.f32.ggml");
  EXPECT_EQ(r->decode.at("blk.0.rope_q")->provider->contract, "rope.normal.f32.ggml");
  EXPECT_EQ(r->decode.at("blk.0.rope_q")->args[5].i64, 32);  // n_rot of head_dim 64
  EXPECT_EQ(r->decode.at("blk.1.attn_post_norm")->provider->contract, "rmsnorm.f32.ggml");
  EXPECT_EQ(r->graph.buffers[r->decode.at("blk.1.ffn_post_norm")->args[1].buffer].tensor,
            "blk.1.post_ffw_norm.weight");
  EXPECT_EQ(r->decode.at("blk.0.attention")->args[10].f32, 0.125f);
}

TEST(Families, NemotronLayerNormReluSqrPartialNeox) {
  REQUIRE_KERNELS();
  std::optional<Resolved> r = resolve_family("nemotron");
  ASSERT_TRUE(r);
  const Step& ln = *r->decode.at("blk.0.attn_norm");
  EXPECT_EQ(ln.provider->contract, "layernorm.f32.ggml");
  EXPECT_EQ(r->graph.buffers[ln.args[2].buffer].tensor, "blk.0.attn_norm.bias");
  EXPECT_EQ(ln.args[6].f32, 1e-5f);
  EXPECT_EQ(r->decode.at("output_norm")->provider->contract, "layernorm.f32.ggml");
  const Step& act = *r->prefill.at("blk.1.relu_sqr");
  EXPECT_EQ(act.provider->contract, "unary.relu_sqr.f32.ggml");
  EXPECT_EQ(act.args[0].buffer, act.args[1].buffer);  // in place on up
  EXPECT_EQ(r->decode.at("blk.0.rope_k")->provider->contract, "rope.neox.f32.ggml");
  EXPECT_EQ(r->decode.at("blk.0.rope_k")->args[5].i64, 32);
  // The optional biases are absent: no nodes.
  EXPECT_EQ(r->decode.count("blk.0.bo"), 0u);
  EXPECT_EQ(r->decode.count("blk.0.ffn_up_b"), 0u);
  // With them present they run.
  MapModelFacts f = family_facts("nemotron");
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f.set_tensor(b + "attn_output.bias", {DType::F32, {256}});
    f.set_tensor(b + "ffn_up.bias", {DType::F32, {512}});
    f.set_tensor(b + "ffn_down.bias", {DType::F32, {256}});
  }
  std::vector<LoadError> errors;
  std::optional<Graph> g = instantiate(family_circuit("nemotron"), f, {256, 64}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  int biases = 0;
  for (const auto& n : g->nodes) biases += n.label().ends_with("_b") || n.label().ends_with(".bo");
  EXPECT_EQ(biases, 6);
}

// Bad input is a load error naming the tensor or key.
TEST(Families, MalformedModelsNameTensorAndKey) {
  std::vector<LoadError> errors;
  // A fused FFN tensor of odd width.
  MapModelFacts odd = family_facts("glm4");
  odd.set_tensor("blk.0.ffn_up.weight", {DType::F32, {256, 767}});
  odd.set_tensor("blk.1.ffn_up.weight", {DType::F32, {256, 767}});
  EXPECT_FALSE(instantiate(family_circuit("glm4"), odd, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/glm4.yaml", "checks[3]",
                              "n_up = 767 (blk.0.ffn_up.weight dim 1)"))
      << format_errors(errors);
  // Even, but not twice the FFN width: the shape names the tensor.
  errors.clear();
  MapModelFacts wide = family_facts("glm4");
  wide.set_tensor("blk.1.ffn_up.weight", {DType::F32, {256, 770}});
  EXPECT_FALSE(instantiate(family_circuit("glm4"), wide, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/glm4.yaml", "weights.ffn_up",
                              "tensor 'blk.1.ffn_up.weight' has shape [256, 770]"))
      << format_errors(errors);
  // A partial rope count larger than the head.
  for (const std::string arch : {"glm4", "nemotron"}) {
    errors.clear();
    MapModelFacts f = family_facts(arch);
    f.set_key(arch + ".rope.dimension_count", int64_t{66});
    EXPECT_FALSE(instantiate(family_circuit(arch), f, {64, 8}, &errors)) << arch;
    bool named = false;
    for (const LoadError& e : errors)
      named = named || (e.path.starts_with("checks[") &&
                        e.reason.find("n_rot = 66 (" + arch + ".rope.dimension_count)") !=
                            std::string::npos);
    EXPECT_TRUE(named) << arch << ": " << format_errors(errors);
  }
  // nemotron: no tied output, and the LayerNorm epsilon key is required.
  errors.clear();
  MapModelFacts untied = family_facts("nemotron");
  untied.erase_tensor("output.weight");
  EXPECT_FALSE(instantiate(family_circuit("nemotron"), untied, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/nemotron.yaml", "weights.output", "output.weight"))
      << format_errors(errors);
  errors.clear();
  MapModelFacts no_eps = family_facts("nemotron");
  no_eps.erase_key("nemotron.attention.layer_norm_epsilon");
  EXPECT_FALSE(instantiate(family_circuit("nemotron"), no_eps, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/nemotron.yaml", "hparams.eps",
                              "'nemotron.attention.layer_norm_epsilon' is absent"))
      << format_errors(errors);
}

}  // namespace
}  // namespace cke
