// The mixture-of-experts circuits (circuits/qwen3moe.yaml, circuits/llama.moe.yaml): how a
// model finds its one circuit (`select`), what each MoE node resolves to, and the load errors
// of malformed models (naming the key or the tensor).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "kernels/registry.h"
#include "resolver/conversions.h"
#include "resolver_test_util.h"
#include "tests/common/shared.h"

namespace cke {
namespace {

// The synthetic MoE files of shared/models/synthetic (n_embd 256, 2 layers, 4 heads, 2 KV
// heads, head_dim 64, vocab 512, 4 experts of width 128, 2 used), with `wt` expert weights.
// `arch` "qwen3moe" (q/k norms, expert_feed_forward_length) or "llama" (with experts).
MapModelFacts moe_facts(const std::string& arch, DType wt = DType::F32) {
  const bool qwen = arch == "qwen3moe";
  MapModelFacts f;
  auto key = [&](const std::string& k, MetaValue v) { f.set_key(arch + "." + k, std::move(v)); };
  f.set_key("general.architecture", arch);
  key("embedding_length", int64_t{256});
  key("block_count", int64_t{2});
  key("feed_forward_length", int64_t{qwen ? 256 : 128});
  if (qwen) key("expert_feed_forward_length", int64_t{128});
  key("expert_count", int64_t{4});
  key("expert_used_count", int64_t{2});
  key("attention.head_count", int64_t{4});
  key("attention.head_count_kv", int64_t{2});
  key("attention.layer_norm_rms_epsilon", double{qwen ? 1e-6f : 1e-5f});
  f.set_tensor("token_embd.weight", {DType::F32, {256, 512}});
  f.set_tensor("output_norm.weight", {DType::F32, {256}});
  f.set_tensor("output.weight", {DType::F32, {256, 512}});
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f.set_tensor(b + "attn_norm.weight", {DType::F32, {256}});
    f.set_tensor(b + "attn_q.weight", {DType::F32, {256, 256}});
    f.set_tensor(b + "attn_k.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "attn_v.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "attn_output.weight", {DType::F32, {256, 256}});
    if (qwen) {
      f.set_tensor(b + "attn_q_norm.weight", {DType::F32, {64}});
      f.set_tensor(b + "attn_k_norm.weight", {DType::F32, {64}});
    }
    f.set_tensor(b + "ffn_norm.weight", {DType::F32, {256}});
    f.set_tensor(b + "ffn_gate_inp.weight", {DType::F32, {256, 4}});
    f.set_tensor(b + "ffn_gate_exps.weight", {wt, {256, 128, 4}});
    f.set_tensor(b + "ffn_up_exps.weight", {wt, {256, 128, 4}});
    f.set_tensor(b + "ffn_down_exps.weight", {DType::Q8_0, {128, 256, 4}});
  }
  return f;
}

// A dense llama model of the same shape (FFN 128).
MapModelFacts dense_llama() {
  MapModelFacts f = moe_facts("llama");
  f.erase_key("llama.expert_count");
  f.erase_key("llama.expert_used_count");
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    for (const char* t : {"ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"})
      f.erase_tensor(b + t + ".weight");
    f.set_tensor(b + "ffn_gate.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "ffn_up.weight", {DType::F32, {256, 128}});
    f.set_tensor(b + "ffn_down.weight", {DType::F32, {128, 256}});
  }
  return f;
}

std::vector<std::filesystem::path> circuit_dirs() {
  return {test::source_path("circuits")};
}

std::optional<Circuit> selected(const std::string& arch, const ModelFacts& f, std::string* err) {
  return select_circuit(arch, circuit_dirs(), f, err);
}

TEST(Moe, EachModelSelectsExactlyOneCircuit) {
  std::string err;
  std::optional<Circuit> c = selected("llama", dense_llama(), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(c->file.ends_with("circuits/llama.yaml")) << c->file;
  c = selected("llama", moe_facts("llama"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(c->file.ends_with("circuits/llama.moe.yaml")) << c->file;
  // expert_count present but 0: the dense model, as llama.cpp reads it.
  MapModelFacts zero = dense_llama();
  zero.set_key("llama.expert_count", int64_t{0});
  c = selected("llama", zero, &err);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(c->file.ends_with("circuits/llama.yaml")) << c->file;
  c = selected("qwen3moe", moe_facts("qwen3moe"), &err);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(c->file.ends_with("circuits/qwen3moe.yaml")) << c->file;
  // The dense circuit is not the MoE file's (it would not read the expert tensors).
  EXPECT_EQ(circuit_files("llama", circuit_dirs()).size(), 2u);
  EXPECT_EQ(circuit_files("llama4", circuit_dirs()).size(), 0u);  // no prefix matches
}

TEST(Moe, SelectionFailsClosed) {
  std::string err;
  // No circuit selects a negative expert count: both are named with the value they saw.
  MapModelFacts neg = moe_facts("llama");
  neg.set_key("llama.expert_count", int64_t{-1});
  EXPECT_FALSE(selected("llama", neg, &err));
  EXPECT_NE(err.find("no circuits of architecture 'llama' describe this model"), std::string::npos)
      << err;
  EXPECT_NE(err.find("llama.yaml: select 'n_expert == 0' is false (n_expert = -1 "
                     "(llama.expert_count))"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("llama.moe.yaml: select 'n_expert > 0' is false"), std::string::npos) << err;

  // Two circuits of one architecture that both select a model: ambiguous, an error.
  const auto dir = std::filesystem::temp_directory_path() / "cke_moe_select";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<LoadError> errors;
  std::ifstream in(test::source_path("circuits/qwen3moe.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir / "qwen3moe.yaml") << text;
  std::ofstream(dir / "qwen3moe.copy.yaml") << text;
  EXPECT_FALSE(select_circuit("qwen3moe", {dir}, moe_facts("qwen3moe"), &err));
  EXPECT_NE(err.find("2 circuits of architecture 'qwen3moe' describe this model"),
            std::string::npos)
      << err;
  // A select that cannot be evaluated (a key without default): an error, not "no".
  std::string bad = text;
  bad.replace(bad.find("architecture: qwen3moe\n"), 23,
              "architecture: qwen3moe\nselect: \"n_shared > 0\"\n");
  bad.replace(bad.find("hparams:\n"), 9,
              "hparams:\n  n_shared: {key: qwen3moe.expert_shared_count, type: i64}\n");
  std::filesystem::remove(dir / "qwen3moe.copy.yaml");
  std::ofstream(dir / "qwen3moe.yaml") << bad;
  EXPECT_FALSE(select_circuit("qwen3moe", {dir}, moe_facts("qwen3moe"), &err));
  EXPECT_NE(err.find("'qwen3moe.expert_shared_count' is absent and has no default"),
            std::string::npos)
      << err;
  // A circuit file of another architecture under this one's name.
  std::string other = text;
  other.replace(other.find("architecture: qwen3moe\n"), 23, "architecture: qwen3\n");
  std::ofstream(dir / "qwen3moe.yaml") << other;
  EXPECT_FALSE(select_circuit("qwen3moe", {dir}, moe_facts("qwen3moe"), &err));
  EXPECT_NE(err.find("'qwen3' in a file of architecture 'qwen3moe'"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

TEST(Moe, SelectIsCheckedLikeEveryExpression) {
  std::vector<LoadError> errors;
  std::ifstream in(test::source_path("circuits/qwen3moe.yaml"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* sel : {"n_nope > 0", "T > 1", "L == 0"}) {
    std::string t = text;
    t.replace(t.find("architecture: qwen3moe\n"), 23,
              std::string("architecture: qwen3moe\nselect: \"") + sel + "\"\n");
    errors.clear();
    EXPECT_FALSE(parse_circuit(t, "qwen3moe.yaml", &errors)) << sel;
    EXPECT_TRUE(test::has_error(errors, "qwen3moe.yaml", "select", "unknown name")) << sel;
  }
}

struct Resolved {
  Graph graph;
  Resolution res;
  std::map<std::string, const Step*> decode, prefill;  // by node label
};

const Registry* real_registry() {
  static const std::optional<Registry> reg = [] {
    std::vector<LoadError> errors;
    auto r = Registry::load({test::source_path("kernel_maps")}, linked_symbols(), &errors);
    EXPECT_TRUE(r) << format_errors(errors);
    return r;
  }();
  return reg ? &*reg : nullptr;
}

std::optional<Resolved> resolve_moe(const std::string& arch, const MapModelFacts& f) {
  std::vector<LoadError> errors;
  std::string err;
  std::optional<Circuit> c = selected(arch, f, &err);
  EXPECT_TRUE(c) << err;
  const Registry* reg = real_registry();
  if (!c || !reg) return std::nullopt;
  std::optional<Graph> g = instantiate(*c, f, {256, 64}, &errors);
  EXPECT_TRUE(g) << format_errors(errors);
  if (!g || !insert_conversions(&*g, *reg, &errors)) return std::nullopt;
  Resolved r{std::move(*g), {}, {}, {}};
  r.res = resolve(r.graph, *reg, HostCaps::probe());
  EXPECT_TRUE(r.res.ok()) << r.res.fault_report();
  for (const Step& s : r.res.steps)
    (s.phase == Phase::Decode ? r.decode : r.prefill)[r.graph.nodes[s.node].label()] = &s;
  return r;
}

#define REQUIRE_KERNELS() \
  if (kernel_symbols().empty()) GTEST_SKIP() << "the kernel symbol table is empty"

TEST(Moe, NodesResolveToTheMulMatIdArithmetic) {
  REQUIRE_KERNELS();
  for (const std::string arch : {"qwen3moe", "llama"}) {
    SCOPED_TRACE(arch);
    // Q4_K experts of 128 rows: ggml repacks them (q4_K_8x8) and runs one gemv per pair.
    std::optional<Resolved> r = resolve_moe(arch, moe_facts(arch, DType::Q4_K));
    ASSERT_TRUE(r);
    for (auto* phase : {&r->decode, &r->prefill}) {
      EXPECT_EQ(phase->at("blk.0.moe_route")->provider->contract,
                "moe_route.softmax_norm.f32.ggml");
      EXPECT_EQ(phase->at("blk.0.moe_group")->provider->contract, "moe_group.i32.ggml");
      EXPECT_EQ(phase->at("blk.1.moe_gather")->provider->contract, "moe_gather.f32.ggml");
      EXPECT_EQ(phase->at("blk.1.ffn_gate_exps")->provider->contract, "linear_id.q4_Kx8.ggml");
      EXPECT_EQ(phase->at("blk.1.ffn_up_exps")->provider->contract, "linear_id.q4_Kx8.ggml");
      EXPECT_EQ(phase->at("blk.1.ffn_down_exps")->provider->contract, "linear_id.q8_0.ggml");
      EXPECT_EQ(phase->at("blk.1.moe_combine")->provider->contract, "moe_combine.f32.ggml");
      // The expert activations: the plain quantizer for every pair (no 4x8 gemm quantizer).
      EXPECT_EQ(phase->at("blk.1.ffn_gate_exps.x_q8_K")->provider->contract, "act_quant.q8_K.ggml");
    }
    // The router: an ordinary F32 linear (tinyBLAS for a batch, vec_dot for one token).
    EXPECT_EQ(r->decode.at("blk.0.router")->provider->contract, "linear.f32.ggml");
    EXPECT_EQ(r->prefill.at("blk.0.router")->provider->contract, "linear.f32_tinyblas.ggml");
    // Expert dims: K, N, E, and P = n_used * T pairs (a run-time multiple of T in prefill).
    const Step& d = *r->decode.at("blk.0.ffn_down_exps");
    EXPECT_EQ(d.args[4].i64, 128);
    EXPECT_EQ(d.args[5].i64, 256);
    EXPECT_EQ(d.args[6].i64, 4);
    EXPECT_EQ(d.args[7].i64, 2);
    const Step& p = *r->prefill.at("blk.0.ffn_down_exps");
    EXPECT_EQ(p.args[7].kind, BoundArg::Kind::Runtime);
    EXPECT_EQ(p.args[7].i64, 2);
  }
  // 100 expert rows: not a multiple of 8, so ggml's plain vec_dot (linear_id.q4_K).
  MapModelFacts f = moe_facts("qwen3moe", DType::Q4_K);
  f.set_key("qwen3moe.expert_feed_forward_length", int64_t{100});
  for (int l = 0; l < 2; ++l)
    for (const char* t : {"ffn_gate_exps", "ffn_up_exps"})
      f.set_tensor("blk." + std::to_string(l) + "." + t + ".weight", {DType::Q4_K, {256, 100, 4}});
  for (int l = 0; l < 2; ++l)
    f.set_tensor("blk." + std::to_string(l) + ".ffn_down_exps.weight", {DType::F32, {100, 256, 4}});
  std::optional<Resolved> r = resolve_moe("qwen3moe", f);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->prefill.at("blk.0.ffn_up_exps")->provider->contract, "linear_id.q4_K.ggml");
  // F32 experts: ggml_vec_dot_f32 in every phase (mul_mat_id never runs tinyBLAS).
  EXPECT_EQ(r->prefill.at("blk.0.ffn_down_exps")->provider->contract, "linear_id.f32.ggml");
  EXPECT_EQ(r->decode.at("blk.0.ffn_down_exps")->provider->contract, "linear_id.f32.ggml");
}

// The generated router and grouping keep a row of n_expert values on their frame (E <= 512,
// their maps' shape predicate), and the circuits admit at most 512 experts (llama.cpp's
// LLAMA_MAX_EXPERTS): every model that loads gets the generated ones on a host with AVX2.
TEST(Moe, TheLargestExpertCountRunsTheGeneratedRouter) {
  REQUIRE_KERNELS();
  if (!HostCaps::probe().has(Feature::avx2)) GTEST_SKIP() << "no AVX2: the references run";
  MapModelFacts f = moe_facts("qwen3moe");
  f.set_key("qwen3moe.expert_count", int64_t{512});
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f.set_tensor(b + "ffn_gate_inp.weight", {DType::F32, {256, 512}});
    for (const char* t : {"ffn_gate_exps", "ffn_up_exps"})
      f.set_tensor(b + t + ".weight", {DType::F32, {256, 128, 512}});
    f.set_tensor(b + "ffn_down_exps.weight", {DType::Q8_0, {128, 256, 512}});
  }
  std::optional<Resolved> r = resolve_moe("qwen3moe", f);
  ASSERT_TRUE(r);
  for (auto* phase : {&r->decode, &r->prefill}) {
    EXPECT_NE(phase->at("blk.0.moe_route")->provider->id, "moe_route_softmax_norm_f32__ref");
    EXPECT_EQ(phase->at("blk.0.moe_group")->provider->id, "moe_group__avx2");
  }
  // One more expert is a load error of the circuit, not a reference fallback.
  f.set_key("qwen3moe.expert_count", int64_t{513});
  std::string err;
  std::optional<Circuit> c = selected("qwen3moe", f, &err);
  ASSERT_TRUE(c) << err;
  std::vector<LoadError> errors;
  EXPECT_FALSE(instantiate(*c, f, {256, 64}, &errors));
  EXPECT_TRUE(test::has_error(errors, "circuits/qwen3moe.yaml", "checks[5]", "n_expert <= 512"))
      << format_errors(errors);
}

// Bad input is a load error naming the key or the tensor.
TEST(Moe, ModelErrorsNameKeyAndTensor) {
  std::string err;
  std::vector<LoadError> errors;
  auto fails = [&](const std::string& arch, const MapModelFacts& f) {
    errors.clear();
    std::optional<Circuit> c = selected(arch, f, &err);
    EXPECT_TRUE(c) << err;
    return c && !instantiate(*c, f, {64, 8}, &errors);
  };
  // expert_used_count > expert_count, or 0.
  for (const std::string arch : {"qwen3moe", "llama"}) {
    const std::string file = arch == "llama" ? "circuits/llama.moe.yaml" : "circuits/qwen3moe.yaml";
    for (int64_t used : {5, 0, -1}) {
      MapModelFacts f = moe_facts(arch);
      f.set_key(arch + ".expert_used_count", used);
      EXPECT_TRUE(fails(arch, f)) << arch << " used " << used;
      bool named = false;
      for (const LoadError& e : errors)
        named = named || (e.file.ends_with(file) && e.path.starts_with("checks[") &&
                          e.reason.find("n_used = " + std::to_string(used) + " (" + arch +
                                        ".expert_used_count)") != std::string::npos);
      EXPECT_TRUE(named) << arch << " used " << used << ": " << format_errors(errors);
    }
    // An expert tensor whose expert dim disagrees with expert_count.
    MapModelFacts f = moe_facts(arch);
    f.set_tensor("blk.1.ffn_down_exps.weight", {DType::Q8_0, {128, 256, 5}});
    EXPECT_TRUE(fails(arch, f));
    EXPECT_TRUE(test::has_error(errors, file, "weights.ffn_down_exps",
                                "tensor 'blk.1.ffn_down_exps.weight' has shape [128, 256, 5], the "
                                "circuit expects [128, 256, 4]"))
        << format_errors(errors);
    // A 2-D expert tensor (no expert dim).
    f = moe_facts(arch);
    f.set_tensor("blk.0.ffn_gate_exps.weight", {DType::F32, {256, 512}});
    EXPECT_TRUE(fails(arch, f));
    EXPECT_TRUE(test::has_error(errors, file, "weights.ffn_gate_exps",
                                "tensor 'blk.0.ffn_gate_exps.weight' has shape [256, 512]"))
        << format_errors(errors);
    // Grouped expert selection is another circuit (none here): the key is named.
    f = moe_facts(arch);
    f.set_key(arch + ".expert_group_count", int64_t{2});
    EXPECT_TRUE(fails(arch, f));
    bool named = false;
    for (const LoadError& e : errors)
      named = named || e.reason.find("(" + arch + ".expert_group_count)") != std::string::npos;
    EXPECT_TRUE(named) << format_errors(errors);
  }
  // qwen3moe needs expert_count (no default), and a used count.
  MapModelFacts f = moe_facts("qwen3moe");
  f.erase_key("qwen3moe.expert_count");
  EXPECT_TRUE(fails("qwen3moe", f));
  EXPECT_TRUE(test::has_error(errors, "circuits/qwen3moe.yaml", "hparams.n_expert",
                              "metadata key 'qwen3moe.expert_count' is absent and has no default"))
      << format_errors(errors);
  // Without expert_feed_forward_length the width is feed_forward_length / expert_used_count.
  f = moe_facts("qwen3moe");
  f.erase_key("qwen3moe.expert_feed_forward_length");
  errors.clear();
  std::optional<Circuit> c = selected("qwen3moe", f, &err);
  ASSERT_TRUE(c) << err;
  std::optional<Graph> g = instantiate(*c, f, {64, 8}, &errors);
  ASSERT_TRUE(g) << format_errors(errors);
  EXPECT_EQ(g->value("n_ff_exp")->i, 128);                  // 256 / 2
  f.set_key("qwen3moe.feed_forward_length", int64_t{300});  // 150: not the tensors' 128
  EXPECT_TRUE(fails("qwen3moe", f));
  EXPECT_TRUE(test::has_error(errors, "circuits/qwen3moe.yaml", "weights.ffn_gate_exps",
                              "the circuit expects [256, 150, 4]"))
      << format_errors(errors);
}

}  // namespace
}  // namespace cke
