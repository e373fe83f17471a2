// The real data: kernel_maps/ (with the symbols linked into this binary) and circuits/.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "kernels/registry.h"
#include "resolver/conversions.h"
#include "resolver/data_dirs.h"
#include "resolver/data_file.h"
#include "resolver/xray.h"
#include "resolver_test_util.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

using test::stories_facts;

std::optional<Registry> real_registry(std::vector<LoadError>* errors) {
  return Registry::load({test::source_path("kernel_maps")}, linked_symbols(), errors);
}

Circuit llama_circuit() {
  std::vector<LoadError> errors;
  std::optional<Circuit> c = load_circuit(test::source_path("circuits/llama.yaml"), &errors);
  EXPECT_TRUE(c) << format_errors(errors);
  return c ? *c : Circuit{};
}

#define REQUIRE_KERNELS()                                                                     \
  if (kernel_symbols().empty())                                                               \
  GTEST_SKIP() << "the kernel symbol table is empty (reference kernels not linked yet); the " \
                  "real maps cannot be checked against it"

TEST(RealTree, EveryLinkedKernelHasAMapAndEveryMapASymbol) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  for (const KernelSymbol& s : kernel_symbols()) {
    const KernelMap* m = reg->find_map(s.name);
    EXPECT_TRUE(m) << "no kernel map for linked kernel " << s.name;
    if (m) {
      EXPECT_EQ(m->impl.function, s.name);
    }
  }
  for (const KernelMap& m : reg->maps()) {
    // Generated providers are checked against the generator table in tests/jit_kernels.
    if (m.impl.function.empty()) {
      EXPECT_FALSE(m.impl.generator.empty()) << m.id;
    } else {
      EXPECT_TRUE(find_kernel_symbol(m.impl.function)) << m.id;
    }
    const Contract* c = reg->find_contract(m.contract);
    ASSERT_TRUE(c) << m.id;
    EXPECT_EQ(c->profile, "ggml");
    EXPECT_FALSE(c->thread_count_changes_arithmetic);
  }
}

TEST(RealTree, DataDirsDefaultToTheSourceTree) {
  DataDirs d = data_dirs_at(compiled_data_dir());
  ASSERT_EQ(d.kernel_maps.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(d.kernel_maps[0] / "contracts"));
  EXPECT_TRUE(find_circuit("llama", d.circuits).has_value());
  EXPECT_FALSE(find_circuit("no_such_arch", d.circuits).has_value());
}

TEST(RealTree, EnvironmentOverridesDataDirs) {
  ::setenv("CKE_KERNEL_MAPS", "/x/maps:/y/maps", 1);
  ::setenv("CKE_CIRCUITS", "/z/circuits", 1);
  DataDirs d = default_data_dirs();
  ::unsetenv("CKE_KERNEL_MAPS");
  ::unsetenv("CKE_CIRCUITS");
  EXPECT_EQ(d.kernel_maps, (std::vector<std::filesystem::path>{"/x/maps", "/y/maps"}));
  EXPECT_EQ(d.circuits, (std::vector<std::filesystem::path>{"/z/circuits"}));
  EXPECT_EQ(default_data_dirs().kernel_maps, data_dirs_at(compiled_data_dir()).kernel_maps);
}

TEST(RealTree, EveryCircuitLoads) {
  std::vector<LoadError> errors;
  auto files = list_yaml_files(test::source_path("circuits"), &errors);
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    std::optional<Circuit> c = load_circuit(f, &errors);
    ASSERT_TRUE(c) << format_errors(errors);
    EXPECT_TRUE(circuit_stem_matches(f.stem().string(), c->architecture)) << f;
  }
}

// stories260K (all F32) through circuits/llama.yaml and the real maps, both phases.
TEST(RealTree, LlamaResolvesStories260KBothPhases) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  std::optional<Graph> g = instantiate(llama_circuit(), stories_facts(), {256, 64}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  // Header 1, 16 nodes per layer x 5, footer 2.
  ASSERT_EQ(g->nodes.size(), 1u + 16 * 5 + 2);
  for (const HostCaps& caps : {HostCaps::probe(), *HostCaps::for_level("scalar")}) {
    Resolution r = resolve(*g, *reg, caps);
    ASSERT_TRUE(r.ok()) << r.fault_report();
    ASSERT_EQ(r.steps.size(), 2 * g->nodes.size());
    for (const Decision& d : r.decisions)
      EXPECT_FALSE(d.winner.empty()) << g->nodes[d.query.node].label();
  }
  // Capped at scalar: the reference providers (every generated one needs AVX2); the
  // generated linears of the default plan are checked in QuantizedWeightsPickTheirContracts.
  Resolution r = resolve(*g, *reg, *HostCaps::for_level("scalar"));
  std::map<std::string, std::string> chosen;  // decode winners by node label
  std::map<std::string, const Step*> steps;
  for (const Step* s : r.steps_for(Phase::Decode)) {
    chosen[g->nodes[s->node].label()] = s->provider->id;
    steps[g->nodes[s->node].label()] = s;
  }
  EXPECT_EQ(chosen["embed"], "embed_f32__ref");
  EXPECT_EQ(chosen["blk.0.attn_norm"], "rmsnorm_f32__ref");
  EXPECT_EQ(chosen["blk.2.wq"], "linear_f32_f32__ref");
  EXPECT_EQ(chosen["blk.4.rope_k"], "rope_normal_f32__ref");
  EXPECT_EQ(chosen["blk.1.kv_store"], "kv_store_f32__ref");
  EXPECT_EQ(chosen["blk.3.attention"], "attention_f32__ref");
  EXPECT_EQ(chosen["blk.0.attn_residual"], "add_f32__ref");
  EXPECT_EQ(chosen["blk.0.swiglu"], "swiglu_f32__ref");
  EXPECT_EQ(chosen["output"], "linear_f32_f32__ref");

  // The attention call, argument by argument (call_abi of attention_f32__ref).
  const Step& att = *steps["blk.3.attention"];
  ASSERT_EQ(att.args.size(), 14u);
  EXPECT_EQ(g->buffers[att.args[1].buffer].label(), "k_cache@3");
  EXPECT_EQ(g->buffers[att.args[3].buffer].label(), "attn");
  EXPECT_EQ(att.args[4].i64, 8);    // head_dim = 64 / 8
  EXPECT_EQ(att.args[5].i64, 8);    // n_head
  EXPECT_EQ(att.args[6].i64, 4);    // n_head_kv, solved from k_cache's head_dim * n_head_kv
  EXPECT_EQ(att.args[7].i64, 256);  // n_ctx
  EXPECT_EQ(att.args[8].kind, BoundArg::Kind::Runtime);
  EXPECT_EQ(att.args[8].runtime, RuntimeValue::Pos0);
  EXPECT_EQ(att.args[9].i64, 1);  // T in decode
  EXPECT_EQ(att.args[10].kind, BoundArg::Kind::F32);
  EXPECT_EQ(att.args[10].f32, 1.0f / std::sqrt(8.0f));  // llama.cpp's 1.0f/sqrtf(head_dim)
  EXPECT_EQ(att.args[11].i64, 0);                       // window
  EXPECT_EQ(att.parallel.extent, Value::integer(8));    // split over query heads

  const Step& rope = *steps["blk.0.rope_q"];
  EXPECT_EQ(rope.args[1].i64, 8);  // head_dim
  EXPECT_EQ(rope.args[2].i64, 8);  // n_heads
  EXPECT_EQ(rope.args[5].i64, 8);  // n_rot
  EXPECT_EQ(rope.args[6].f32, 10000.0f);
  EXPECT_EQ(rope.args[7].f32, 1.0f);
  const Step& norm = *steps["blk.0.attn_norm"];
  EXPECT_EQ(norm.args[5].f32, 1e-5f);
  // The residual add works in place: y and a are the same buffer x.
  const Step& res = *steps["blk.0.attn_residual"];
  EXPECT_EQ(res.args[0].buffer, res.args[2].buffer);
  EXPECT_EQ(res.args[3].i64, 64);  // n = E * T = 64 in decode

  // Prefill: T and E * T are runtime values.
  for (const Step* s : r.steps_for(Phase::Prefill)) {
    if (g->nodes[s->node].label() != "blk.0.attn_residual") continue;
    EXPECT_EQ(s->args[3].kind, BoundArg::Kind::Runtime);
    EXPECT_EQ(s->args[3].runtime, RuntimeValue::NTokens);
    EXPECT_EQ(s->args[3].i64, 64);
  }
  nlohmann::json trace = xray_trace(r, *g, *reg, HostCaps::probe(), {});
  EXPECT_EQ(trace["decisions"].size(), 2 * g->nodes.size());
  EXPECT_TRUE(trace["ok"].get<bool>());
}

TEST(RealTree, QuantizedWeightsPickTheirContracts) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  // As stories260K-Q4_0: q4_0 matrices, ffn_down (K = 172, not a multiple of 32) in f16.
  std::optional<Graph> g =
      instantiate(llama_circuit(), stories_facts(DType::Q4_0, DType::F16), {256, 64}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  ASSERT_TRUE(insert_conversions(&*g, *reg, &errors)) << format_errors(errors);
  Resolution r = resolve(*g, *reg, *HostCaps::for_level("avx2"));
  ASSERT_TRUE(r.ok()) << r.fault_report();
  for (const Step& s : r.steps) {
    const std::string label = g->nodes[s.node].label();
    if (label == "blk.1.wk") {
      // N = 32, a multiple of 8: ggml's repacked arithmetic, generated, on the q4_0_r16
      // copy in both phases (the prefill gemm 16x4, the decode gemv).
      EXPECT_EQ(s.provider->id, s.phase == Phase::Decode ? "linear_q4_0r16_f32_16x1__avx2"
                                                         : "linear_q4_0r16_f32_16x4__avx2");
      EXPECT_EQ(s.contract->id, "linear.q4_0x8.ggml");
      EXPECT_EQ(s.contract->activation_quant, DType::Q8_0);
    }
    if (label == "blk.1.ffn_gate") {  // N = 172: the vec_dot lanes
      EXPECT_EQ(s.provider->id, s.phase == Phase::Decode ? "linear_q4_0_f32_4x1__avx2"
                                                         : "linear_q4_0_f32_4x2__avx2");
      EXPECT_EQ(s.contract->id, "linear.q4_0.ggml");
    }
    if (label == "blk.1.ffn_down") {  // f16: the generated f32-lane tiles, 1x1 at AVX2
      EXPECT_EQ(s.provider->id, "linear_f16_f32_1x1__avx2");
      EXPECT_EQ(s.contract->id, "linear.f16.ggml");
      EXPECT_EQ(s.contract->activation_quant, DType::F16);
    }
  }
  // The conversions are steps of their own: one Q8_0 conversion of the attention's normed
  // input shared by wq/wk/wv, a new one after ffn_norm rewrote xn (gate/up share it), one
  // of attn for wo, an F16 one for the f16 ffn_down; by their own providers.
  std::vector<std::string> layer1;
  for (const GraphNode& n : g->nodes)
    if (n.layer == 1) layer1.push_back(n.name);
  EXPECT_EQ(layer1,
            (std::vector<std::string>{"attn_norm", "wq.x_q8_0",       "wq",       "wk",
                                      "wv",        "rope_q",          "rope_k",   "kv_store",
                                      "attention", "wo.x_q8_0",       "wo",       "attn_residual",
                                      "ffn_norm",  "ffn_gate.x_q8_0", "ffn_gate", "ffn_up",
                                      "swiglu",    "ffn_down.x_f16",  "ffn_down", "ffn_residual"}));
  std::map<std::string, const Step*> dec;
  for (const Step* s : r.steps_for(Phase::Decode)) dec[g->nodes[s->node].label()] = s;
  // attn_norm and the conversion after it are one fused step (rmsnorm_act_quant.q8_0.ggml,
  // its generated provider above both steps'); the conversion of attn stays a step.
  ASSERT_TRUE(dec.count("blk.1.attn_norm"));
  EXPECT_FALSE(dec.count("blk.1.wq.x_q8_0"));
  EXPECT_EQ(dec["blk.1.attn_norm"]->provider->id, "rmsnorm_act_quant_q8_0_f32_16l__avx2");
  EXPECT_EQ(dec["blk.1.attn_norm"]->span, 2u);
  EXPECT_EQ(dec["blk.1.wo.x_q8_0"]->provider->id, "act_quant_q8_0_f32_16l__avx2");
  EXPECT_EQ(dec["blk.1.ffn_down.x_f16"]->provider->id, "act_quant_f16__ref");
  const int conv_out = dec["blk.1.attn_norm"]->args[3].buffer;  // output:y
  for (const char* l : {"blk.1.wq", "blk.1.wk", "blk.1.wv"})
    EXPECT_EQ(dec[l]->args[0].buffer, conv_out) << l;  // the one converted buffer
  EXPECT_EQ(g->buffers[size_t(conv_out)].dtype, DType::Q8_0);
  EXPECT_EQ(g->buffers[size_t(conv_out)].name, "xn_q8_0");
  // A second pass changes nothing: every port already has its contract's dtype.
  const size_t n_nodes = g->nodes.size();
  ASSERT_TRUE(insert_conversions(&*g, *reg, &errors));
  EXPECT_EQ(g->nodes.size(), n_nodes);

  // q4_0 ffn_down cannot even be instantiated: 172 is not a whole number of blocks.
  errors.clear();
  EXPECT_FALSE(instantiate(llama_circuit(), stories_facts(DType::Q4_0), {256, 64}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/llama.yaml", "weights.ffn_down",
                              "not a whole number of q4_0 blocks"))
      << format_errors(errors);
}

TEST(RealTree, TiedOutputUsesTheEmbeddingTable) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg);
  MapModelFacts facts = stories_facts();
  facts.erase_tensor("output.weight");
  std::optional<Graph> g = instantiate(llama_circuit(), facts, {64, 8}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  const GraphNode& out = g->nodes.back();
  ASSERT_EQ(out.name, "output");
  EXPECT_EQ(g->buffers[out.port("w")->buffer].tensor, "token_embd.weight");
  EXPECT_EQ(out.port("w")->buffer, g->nodes.front().port("table")->buffer);
  EXPECT_TRUE(resolve(*g, *reg, HostCaps::synthetic({})).ok());
}

TEST(RealTree, ModelErrorsNameKeyAndTensor) {
  std::vector<LoadError> errors;
  MapModelFacts no_layers = stories_facts();
  no_layers.erase_key("llama.block_count");
  EXPECT_FALSE(instantiate(llama_circuit(), no_layers, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/llama.yaml", "hparams.n_layer",
                              "metadata key 'llama.block_count' is absent and has no default"))
      << format_errors(errors);
  errors.clear();
  MapModelFacts bad = stories_facts();
  bad.set_tensor("blk.3.attn_k.weight", {DType::F32, {64, 64}});
  EXPECT_FALSE(instantiate(llama_circuit(), bad, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(
      errors, "circuits/llama.yaml", "weights.wk",
      "tensor 'blk.3.attn_k.weight' has shape [64, 64], the circuit expects [64, 32]"))
      << format_errors(errors);
  errors.clear();
  MapModelFacts gqa = stories_facts();
  gqa.set_key("llama.attention.head_count_kv", int64_t{3});
  EXPECT_FALSE(instantiate(llama_circuit(), gqa, {64, 8}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/llama.yaml", "checks[0]", "n_head_kv = 3"))
      << format_errors(errors);
  // Values out of range name the key they came from (a NaN fails every comparison).
  const std::vector<std::pair<std::string, MetaValue>> hostile = {
      {"llama.attention.layer_norm_rms_epsilon", double{NAN}},
      {"llama.attention.layer_norm_rms_epsilon", double{-1}},
      {"llama.attention.layer_norm_rms_epsilon", double{INFINITY}},
      {"llama.rope.freq_base", double{0}},
      {"llama.rope.freq_base", double{NAN}},
      {"llama.rope.scaling.factor", double{-2}},
      {"llama.rope.dimension_count", int64_t{7}},
      {"llama.rope.dimension_count", int64_t{0}},
      {"llama.rope.dimension_count", int64_t{10}}};
  for (const auto& [key, value] : hostile) {
    errors.clear();
    MapModelFacts f = stories_facts();
    f.set_key(key, value);
    EXPECT_FALSE(instantiate(llama_circuit(), f, {64, 8}, &errors)) << key;
    bool named = false;
    for (const LoadError& e : errors)
      named =
          named || (e.path.starts_with("checks[") && e.reason.find("(" + key) != std::string::npos);
    EXPECT_TRUE(named) << key << ": " << format_errors(errors);
  }
}

TEST(RealTree, MissingContractIsAFaultNotAFallback) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg);
  // An f16 norm weight: no rmsnorm contract takes it, so the plan refuses to build.
  MapModelFacts facts = stories_facts();
  facts.set_tensor("blk.2.ffn_norm.weight", {DType::F16, {64}});
  std::optional<Graph> g = instantiate(llama_circuit(), facts, {64, 8}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  Resolution r = resolve(*g, *reg, HostCaps::probe());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.faults.size(), 2u);  // blk.2.ffn_norm in prefill and in decode
  const Decision& d = r.decisions[r.faults[0]];
  EXPECT_EQ(d.fault, "no_contract");
  EXPECT_EQ(g->nodes[d.query.node].label(), "blk.2.ffn_norm");
  EXPECT_NE(d.message.find("rmsnorm.f32.ggml: port w: f32 (query f16)"), std::string::npos)
      << d.message;
}

// The synthetic models of shared/models/synthetic (n_embd 256, 2 layers, 4 heads, 2 KV
// heads, head_dim 64, FFN 768, vocab 512), as their GGUF metadata and tensor tables say.
MapModelFacts synth_facts(const std::string& arch) {
  MapModelFacts f;
  auto key = [&](const std::string& k, MetaValue v) { f.set_key(arch + "." + k, std::move(v)); };
  f.set_key("general.architecture", arch);
  key("embedding_length", int64_t{256});
  key("block_count", int64_t{2});
  key("feed_forward_length", int64_t{768});
  key("attention.head_count", int64_t{4});
  key("attention.head_count_kv", int64_t{2});
  key("attention.key_length", int64_t{64});
  key("attention.value_length", int64_t{64});
  key("rope.dimension_count", int64_t{64});
  key("attention.layer_norm_rms_epsilon", double{1e-6f});
  key("rope.freq_base", double{1e6});
  if (arch == "gemma3") {
    key("rope.freq_base_swa", double{1e4});
    key("attention.sliding_window", int64_t{32});
    key("attention.sliding_window_pattern", int64_t{2});
  }
  f.set_tensor("token_embd.weight", {DType::F32, {256, 512}});
  f.set_tensor("output_norm.weight", {DType::F32, {256}});
  if (arch == "qwen2") f.set_tensor("output.weight", {DType::F32, {256, 512}});
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f.set_tensor(b + "attn_norm.weight", {DType::F32, {256}});
    f.set_tensor(b + "attn_q.weight", {DType::F32, {256, 256}});
    f.set_tensor(b + "attn_k.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "attn_v.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "attn_output.weight", {DType::F32, {256, 256}});
    f.set_tensor(b + "ffn_norm.weight", {DType::F32, {256}});
    f.set_tensor(b + "ffn_gate.weight", {DType::F32, {256, 768}});
    f.set_tensor(b + "ffn_up.weight", {DType::F32, {256, 768}});
    f.set_tensor(b + "ffn_down.weight", {DType::F32, {768, 256}});
    if (arch == "qwen2") {
      f.set_tensor(b + "attn_q.bias", {DType::F32, {256}});
      f.set_tensor(b + "attn_k.bias", {DType::F32, {128}});
      f.set_tensor(b + "attn_v.bias", {DType::F32, {128}});
    } else {
      f.set_tensor(b + "attn_q_norm.weight", {DType::F32, {64}});
      f.set_tensor(b + "attn_k_norm.weight", {DType::F32, {64}});
    }
    if (arch == "gemma3") {
      f.set_tensor(b + "post_attention_norm.weight", {DType::F32, {256}});
      f.set_tensor(b + "post_ffw_norm.weight", {DType::F32, {256}});
    }
  }
  return f;
}

struct Resolved {
  Graph graph;
  Resolution res;
  std::map<std::string, const Step*> decode, prefill;  // by node label
};

std::optional<Resolved> resolve_arch(const std::string& arch, const Registry& reg) {
  std::vector<LoadError> errors;
  std::optional<Circuit> c = load_circuit(test::source_path("circuits/" + arch + ".yaml"), &errors);
  EXPECT_TRUE(c) << format_errors(errors);
  if (!c) return std::nullopt;
  std::optional<Graph> g = instantiate(*c, synth_facts(arch), {256, 64}, &errors);
  EXPECT_TRUE(g) << format_errors(errors);
  if (!g) return std::nullopt;
  Resolved r{std::move(*g), {}, {}, {}};
  r.res = resolve(r.graph, reg, HostCaps::probe());
  EXPECT_TRUE(r.res.ok()) << r.res.fault_report();
  for (const Step& s : r.res.steps)
    (s.phase == Phase::Decode ? r.decode : r.prefill)[r.graph.nodes[s.node].label()] = &s;
  return r;
}

TEST(RealTree, Qwen2BiasesAndNeox) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  std::optional<Resolved> r = resolve_arch("qwen2", *reg);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->graph.nodes.size(), 1u + 19 * 2 + 2);
  // reference or generated (host caps)
  EXPECT_EQ(r->decode["blk.0.bk"]->provider->contract, "add_bias.f32.ggml");
  EXPECT_EQ(r->graph.buffers[r->decode["blk.0.bk"]->args[1].buffer].tensor, "blk.0.attn_k.bias");
  EXPECT_EQ(r->decode["blk.0.bk"]->args[3].i64, 128);  // n = kv_dim
  EXPECT_EQ(r->decode["blk.1.rope_q"]->provider->contract, "rope.neox.f32.ggml");
  EXPECT_EQ(r->decode["blk.1.rope_q"]->args[6].f32, 1e6f);  // freq_base
  EXPECT_EQ(r->graph.buffers[r->decode["output"]->args[1].buffer].tensor, "output.weight");
}

TEST(RealTree, Qwen3PerHeadNormsAndTiedOutput) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  std::optional<Resolved> r = resolve_arch("qwen3", *reg);
  ASSERT_TRUE(r);
  const Step& qn = *r->decode["blk.0.q_norm"];
  EXPECT_EQ(qn.provider->contract, "rmsnorm.f32.ggml");  // reference or generated (host caps)
  EXPECT_EQ(qn.args[0].buffer, qn.args[2].buffer);       // in place on q
  EXPECT_EQ(r->graph.buffers[qn.args[1].buffer].tensor, "blk.0.attn_q_norm.weight");
  EXPECT_EQ(qn.args[3].i64, 64);  // n = head_dim
  EXPECT_EQ(qn.args[4].i64, 4);   // rows = n_head * T, T = 1
  const Step& kp = *r->prefill["blk.0.k_norm"];
  EXPECT_EQ(kp.args[4].kind, BoundArg::Kind::Runtime);  // rows = n_head_kv * n_tokens
  EXPECT_EQ(kp.args[4].runtime, RuntimeValue::NTokens);
  EXPECT_EQ(kp.args[4].i64, 2);
  EXPECT_EQ(r->graph.buffers[r->decode["output"]->args[1].buffer].tensor, "token_embd.weight");
}

TEST(RealTree, Gemma3WindowsScalesAndGeglu) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  std::optional<Resolved> r = resolve_arch("gemma3", *reg);
  ASSERT_TRUE(r);
  // reference or generated (host caps)
  EXPECT_EQ(r->decode["embed_scale"]->provider->contract, "scale.f32.ggml");
  EXPECT_EQ(r->decode["embed_scale"]->args[3].f32, 16.0f);     // sqrtf(256)
  EXPECT_EQ(r->decode["blk.0.q_scale"]->args[3].f32, 0.125f);  // 1/sqrt(64), after RoPE
  EXPECT_EQ(r->decode["blk.0.geglu"]->provider->contract, "glu.geglu.f32.ggml");
  // swa_pattern 2: layer 0 local (window 32, rope base 1e4), layer 1 global (1e6, no window).
  const Step& a0 = *r->decode["blk.0.attention"];
  const Step& a1 = *r->decode["blk.1.attention"];
  EXPECT_EQ(a0.args[10].f32, 1.0f);  // softmax scale 1: Q was scaled instead
  EXPECT_EQ(a0.args[11].i64, 32);
  EXPECT_EQ(a1.args[11].i64, 0);
  EXPECT_EQ(r->decode["blk.0.rope_k"]->args[6].f32, 1e4f);
  EXPECT_EQ(r->decode["blk.1.rope_k"]->args[6].f32, 1e6f);
  // Post-norms in place before the residual adds.
  const Step& pn = *r->decode["blk.1.ffn_post_norm"];
  EXPECT_EQ(pn.args[0].buffer, pn.args[2].buffer);
  EXPECT_EQ(r->graph.buffers[pn.args[1].buffer].tensor, "blk.1.post_ffw_norm.weight");
}

// resolve() decides each distinct question once (resolve.cpp decision_key) and copies the
// answer to the other nodes asking it. The oracle: decide_query for every node on its own.
// Every decision and every single-node step must be the same, field by field.
void expect_same_as_one_by_one(const Graph& g, const Registry& reg, const HostCaps& caps,
                               const std::string& what) {
  SCOPED_TRACE(what);
  const ResolveOptions options;
  const Resolution r = resolve(g, reg, caps, options);
  const size_t n = g.nodes.size();
  ASSERT_EQ(r.decisions.size(), options.phases.size() * n);
  std::map<std::pair<int, size_t>, const Step*> steps;
  for (const Step& s : r.steps)
    if (s.span == 1) steps[{int(s.phase), s.node}] = &s;
  auto same_args = [](const std::vector<BoundArg>& a, const std::vector<BoundArg>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].kind != b[i].kind || a[i].source != b[i].source || a[i].buffer != b[i].buffer ||
          a[i].layout != b[i].layout || a[i].i64 != b[i].i64 ||
          std::memcmp(&a[i].f32, &b[i].f32, 4) != 0 || a[i].runtime != b[i].runtime)
        return false;
    return true;
  };
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    const size_t node = i % n;
    const Phase phase = options.phases[i / n];
    std::optional<Step> step;
    const Decision d = decide_query(
        g, reg, caps, options, [&](Phase p) { return make_query(g, node, p); }, phase, &step);
    const Decision& got = r.decisions[i];
    const std::string label =
        g.nodes[node].label() + (phase == Phase::Decode ? " decode" : " prefill");
    EXPECT_EQ(got.query.node, node) << label;
    EXPECT_EQ(got.winner, d.winner) << label;
    EXPECT_EQ(got.contract, d.contract) << label;
    EXPECT_EQ(got.contract_matches, d.contract_matches) << label;
    EXPECT_EQ(got.repacks, d.repacks) << label;
    EXPECT_EQ(got.decode_batch, d.decode_batch) << label;
    EXPECT_EQ(got.fault, d.fault) << label;
    EXPECT_EQ(got.message, d.message) << label;
    ASSERT_EQ(got.candidates.size(), d.candidates.size()) << label;
    for (size_t c = 0; c < d.candidates.size(); ++c) {
      const Candidate &x = got.candidates[c], &y = d.candidates[c];
      EXPECT_TRUE(x.id == y.id && x.stage == y.stage && x.eligible == y.eligible &&
                  x.winner == y.winner && x.reason == y.reason && x.detail == y.detail)
          << label << ": " << x.id << " " << x.reason << " (" << x.detail << ") against " << y.id
          << " " << y.reason << " (" << y.detail << ")";
    }
    const auto it = steps.find({int(phase), node});
    if (!step || it == steps.end()) continue;  // a fault, or fused into a step of several
    const Step& s = *it->second;
    EXPECT_EQ(s.provider, step->provider) << label;
    EXPECT_EQ(s.contract, step->contract) << label;
    EXPECT_TRUE(same_args(s.args, step->args)) << label;
    EXPECT_TRUE(same_args(s.batch_args, step->batch_args)) << label;
    EXPECT_TRUE(s.parallel.enabled == step->parallel.enabled &&
                s.parallel.dim == step->parallel.dim &&
                s.parallel.extent == step->parallel.extent &&
                s.parallel.min_chunk == step->parallel.min_chunk)
        << label;
  }
}

TEST(RealTree, EachQuestionDecidedOnceAnswersAsOneByOne) {
  REQUIRE_KERNELS();
  std::vector<LoadError> errors;
  std::optional<Registry> reg = real_registry(&errors);
  ASSERT_TRUE(reg) << format_errors(errors);
  const std::vector<HostCaps> caps = {HostCaps::probe(), *HostCaps::for_level("avx2"),
                                      *HostCaps::for_level("scalar")};
  // Quantized weights with conversion steps (shared converted buffers, repacked copies).
  std::optional<Graph> q =
      instantiate(llama_circuit(), stories_facts(DType::Q4_0, DType::F16), {256, 64}, &errors);
  ASSERT_TRUE(q) << format_errors(errors);
  ASSERT_TRUE(insert_conversions(&*q, *reg, &errors)) << format_errors(errors);
  for (const HostCaps& c : caps) expect_same_as_one_by_one(*q, *reg, c, "llama q4_0");
  // Per-layer params (Gemma3: windows and rope bases alternate), in-place steps (Qwen3's
  // head norms), biases (Qwen2).
  for (const char* arch : {"gemma3", "qwen3", "qwen2"}) {
    std::optional<Circuit> c =
        load_circuit(test::source_path(std::string("circuits/") + arch + ".yaml"), &errors);
    ASSERT_TRUE(c) << format_errors(errors);
    std::optional<Graph> g = instantiate(*c, synth_facts(arch), {256, 64}, &errors);
    ASSERT_TRUE(g) << format_errors(errors);
    for (const HostCaps& h : caps) expect_same_as_one_by_one(*g, *reg, h, arch);
  }
  // Faults: each faulting node's own decision and message.
  MapModelFacts facts = stories_facts();
  facts.set_tensor("blk.2.ffn_norm.weight", {DType::F16, {64}});
  facts.set_tensor("blk.3.ffn_norm.weight", {DType::F16, {64}});
  std::optional<Graph> f = instantiate(llama_circuit(), facts, {64, 8}, &errors);
  ASSERT_TRUE(f) << format_errors(errors);
  expect_same_as_one_by_one(*f, *reg, caps[0], "faults");
  EXPECT_EQ(resolve(*f, *reg, caps[0]).faults.size(), 4u);
}

}  // namespace
}  // namespace cke
