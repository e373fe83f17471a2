// Helpers of the resolver tests: small maps, contracts and circuits written as YAML text,
// fake kernel symbols, and in-memory model facts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "resolver/circuit.h"
#include "resolver/contract.h"
#include "resolver/graph.h"
#include "resolver/kernel_map.h"
#include "resolver/registry.h"
#include "resolver/resolve.h"

namespace cke::test {

inline std::string fixtures(const std::string& rel) {
  return std::string(CKE_RESOLVER_FIXTURES) + "/" + rel;
}

// Any name resolves to a symbol with the linear kernel signature
// (x, w, y, K, N, T, n0, n1).
inline SymbolLookup fake_linear_symbols() {
  static const KernelSymbol kSym{"fake_linear",
                                 nullptr,
                                 8,
                                 {ArgKind::Ptr, ArgKind::Ptr, ArgKind::Ptr, ArgKind::I64,
                                  ArgKind::I64, ArgKind::I64, ArgKind::I64, ArgKind::I64}};
  return [](std::string_view) { return &kSym; };
}

// A linear provider (the interface of the real linear maps).
struct MapSpec {
  std::string id = "lin_a";
  std::string contract = "linear.q4_0.t";
  std::string status = "production";
  int priority = 100;
  std::string phases = "[prefill, decode]";
  std::string wdtype = "q4_0";
  std::string isa = "[]";
  std::string shape = "[]";
  std::string y_extra = "";  // appended inside y's port mapping, e.g. ", may_alias: [x]"
  std::string w_extra = "";  // appended inside w's port mapping, e.g. ", layout: q4_0_r16"
  std::string interface = "linear.row_major_weight.v1";
};

inline std::string linear_map(const MapSpec& s) {
  return "schema: cke.kernel_map/1\n"
         "id: " +
         s.id +
         "\n"
         "op: linear\n"
         "interface: " +
         s.interface +
         "\n"
         "contract: " +
         s.contract +
         "\n"
         "selection: {status: " +
         s.status + ", priority: " + std::to_string(s.priority) + ", phases: " + s.phases +
         "}\n"
         "requires: {isa: " +
         s.isa + ", shape: " + s.shape +
         "}\n"
         "ports:\n"
         "  inputs: {x: {dtype: f32, shape: [K, T]}}\n"
         "  weights: {w: {dtype: " +
         s.wdtype + ", shape: [K, N]" + s.w_extra +
         "}}\n"
         "  outputs: {y: {dtype: f32, shape: [N, T]" +
         s.y_extra +
         "}}\n"
         "impl: {function: " +
         s.id +
         "}\n"
         "call_abi: [input:x, weight:w, output:y, dim:K, dim:N, dim:T, range:begin, range:end]\n"
         "parallel: {dim: N, min_chunk: 16, changes_arithmetic: false}\n";
}

inline std::string linear_contract(const std::string& id, const std::string& wdtype,
                                   const std::string& reference, const std::string& profile = "t") {
  return "schema: cke.contract/1\n"
         "id: " +
         id +
         "\n"
         "op: linear\n"
         "profile: " +
         profile +
         "\n"
         "ports: {x: f32, w: " +
         wdtype +
         ", y: f32}\n"
         "accumulator: f32\n"
         "reduction_order: test\n"
         "rounding: [test]\n"
         "thread_count_changes_arithmetic: false\n"
         "reference: " +
         reference +
         "\n"
         "comparison: bit_exact\n";
}

inline KernelMap parse_map_ok(const std::string& text, const std::string& file = "test.map") {
  std::vector<LoadError> errors;
  std::optional<KernelMap> m = parse_kernel_map(text, file, &errors);
  EXPECT_TRUE(m.has_value()) << format_errors(errors) << text;
  return m ? *m : KernelMap{};
}

inline Contract parse_contract_ok(const std::string& text,
                                  const std::string& file = "test.contract") {
  std::vector<LoadError> errors;
  std::optional<Contract> c = parse_contract(text, file, &errors);
  EXPECT_TRUE(c.has_value()) << format_errors(errors) << text;
  return c ? *c : Contract{};
}

inline Registry build_ok(const std::vector<std::string>& maps,
                         const std::vector<std::string>& contracts,
                         const SymbolLookup& symbols = {}) {
  std::vector<KernelMap> ms;
  std::vector<Contract> cs;
  for (size_t i = 0; i < maps.size(); ++i)
    ms.push_back(parse_map_ok(maps[i], "map" + std::to_string(i)));
  for (size_t i = 0; i < contracts.size(); ++i)
    cs.push_back(parse_contract_ok(contracts[i], "contract" + std::to_string(i)));
  std::vector<LoadError> errors;
  std::optional<Registry> r = Registry::build(ms, cs, symbols, &errors);
  EXPECT_TRUE(r.has_value()) << format_errors(errors);
  return r ? std::move(*r) : Registry{};
}

// One linear node x[K,T] * w[K,N] -> y[N,T] with weight dtype `wdtype` and `profile`.
// With `in_place` the node reads and writes one buffer h (K must equal N).
inline std::string linear_circuit(const std::string& profile = "t", bool in_place = false) {
  std::string s =
      "schema: cke.circuit/1\n"
      "architecture: lin\n"
      "hparams:\n"
      "  K: {key: t.k, type: i64}\n"
      "  N: {key: t.n, type: i64}\n"
      "layers: 0\n"
      "weights:\n"
      "  w: {tensor: w.weight, shape: [K, N]}\n"
      "inputs:\n"
      "  x: {dtype: f32, shape: [K, T]}\n"
      "activations:\n"
      "  h: [K, T]\n"
      "outputs:\n"
      "  y: [N, T]\n"
      "layer: []\n"
      "header:\n";
  if (in_place)
    s += "  - {name: proj, op: linear, profile: " + profile + ", ports: {x: h, w: w, y: h}}\n";
  else
    s += "  - {name: proj, op: linear, profile: " + profile + ", ports: {x: x, w: w, y: y}}\n";
  return s;
}

inline MapModelFacts linear_facts(int64_t K, int64_t N, DType wdtype) {
  MapModelFacts f;
  f.set_key("t.k", int64_t{K});
  f.set_key("t.n", int64_t{N});
  f.set_tensor("w.weight", TensorFact{wdtype, {K, N}});
  return f;
}

inline Graph graph_ok(const std::string& circuit_text, const ModelFacts& facts, int64_t n_ctx = 64,
                      int64_t max_tokens = 16) {
  std::vector<LoadError> errors;
  std::optional<Circuit> c = parse_circuit(circuit_text, "test.circuit", &errors);
  EXPECT_TRUE(c.has_value()) << format_errors(errors);
  if (!c) return Graph{};
  std::optional<Graph> g = instantiate(*c, facts, {n_ctx, max_tokens}, &errors);
  EXPECT_TRUE(g.has_value()) << format_errors(errors);
  return g ? std::move(*g) : Graph{};
}

// stories260K's hyper-parameters and tensor table (n_embd 64, 5 layers, 8 heads, 4 KV
// heads, FFN 172, vocab 512), every tensor F32 unless `matrix` says otherwise for the 2-D
// per-layer matrices (ffn_down gets `down`, when given).
inline MapModelFacts stories_facts(DType matrix = DType::F32,
                                   std::optional<DType> down = std::nullopt) {
  MapModelFacts f;
  f.set_key("general.architecture", std::string("llama"));
  f.set_key("llama.context_length", int64_t{2048});
  f.set_key("llama.embedding_length", int64_t{64});
  f.set_key("llama.feed_forward_length", int64_t{172});
  f.set_key("llama.attention.head_count", int64_t{8});
  f.set_key("llama.attention.head_count_kv", int64_t{4});
  f.set_key("llama.block_count", int64_t{5});
  f.set_key("llama.rope.dimension_count", int64_t{8});
  f.set_key("llama.attention.layer_norm_rms_epsilon", double{1e-5f});
  f.set_tensor("token_embd.weight", {DType::F32, {64, 512}});
  f.set_tensor("output_norm.weight", {DType::F32, {64}});
  f.set_tensor("output.weight", {DType::F32, {64, 512}});
  for (int l = 0; l < 5; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    f.set_tensor(b + "attn_q.weight", {matrix, {64, 64}});
    f.set_tensor(b + "attn_k.weight", {matrix, {64, 32}});
    f.set_tensor(b + "attn_v.weight", {matrix, {64, 32}});
    f.set_tensor(b + "attn_output.weight", {matrix, {64, 64}});
    f.set_tensor(b + "attn_norm.weight", {DType::F32, {64}});
    f.set_tensor(b + "ffn_gate.weight", {matrix, {64, 172}});
    f.set_tensor(b + "ffn_down.weight", {down.value_or(matrix), {172, 64}});
    f.set_tensor(b + "ffn_up.weight", {matrix, {64, 172}});
    f.set_tensor(b + "ffn_norm.weight", {DType::F32, {64}});
  }
  return f;
}

inline const Candidate* find_candidate(const Decision& d, const std::string& id) {
  for (const Candidate& c : d.candidates)
    if (c.id == id) return &c;
  return nullptr;
}

// True when some error has this file (suffix match), exactly this path, and a reason
// containing `reason`.
inline bool has_error(const std::vector<LoadError>& errors, const std::string& file,
                      const std::string& path, const std::string& reason) {
  for (const LoadError& e : errors)
    if (e.file.size() >= file.size() &&
        e.file.compare(e.file.size() - file.size(), file.size(), file) == 0 && e.path == path &&
        e.reason.find(reason) != std::string::npos)
      return true;
  return false;
}

}  // namespace cke::test
