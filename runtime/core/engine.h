// The C++ API: load a GGUF model, compile it for this host (resolve → plan → JIT glue), and
// evaluate tokens through the frozen plan.
//
//   auto e = cke::Engine::load({.model_path = "m.gguf"}, &err);
//   e->eval(ids, &logits, /*all_logits=*/false, &err);   // prefill (chunks) or decode (1 token)
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"

namespace cke {

struct EngineOptions {
  std::string model_path;
  int32_t n_ctx = 0;      // KV cache cells; 0: the model's context_length, at most 4096
  int32_t n_batch = 256;  // prefill chunk (tokens per prefill call)
  // Sequences: each has n_ctx cells of its own in the KV cache (cke-server's slots). With
  // more than one, decode_batch evaluates one token of several sequences in one plan call.
  // At most n_batch.
  int32_t n_seq = 1;
  // KV cache type: "f32" (llama.cpp's `exact` configuration: no flash attention) or "f16"
  // (llama.cpp's default: F16 cache with flash attention; half the cache bytes).
  std::string cache_type = "f32";
  int32_t n_threads = 0;  // 0: physical cores
  std::string isa;        // HostCaps cap ("avx2", "avx512", "scalar", feature list); "" = probed
  bool allow_candidate = false;
  // The decode tiles' software prefetch ahead of their weight stream: "" the host's choice
  // (HostCaps::decode_stream_prefetch, probed), "on" or "off" to measure both on a new host.
  std::string decode_prefetch;
  // Only providers that read the file's own weight blocks (no repacked copies at load).
  bool no_repack = false;
  // The weights the plan reads in the file's own layout stay in the file's mapping (page-cache
  // pages, 4 KiB) instead of a copy in 2 MiB pages made at load (engine.cpp: place_weights).
  bool mmap_weights = false;
  std::vector<std::string> kernel_map_dirs;  // empty: CKE_KERNEL_MAPS or the build's
  std::vector<std::string> circuit_dirs;     // empty: CKE_CIRCUITS or the build's
  // Run the plan through C emitted (by emit_c) into this directory instead of the JIT glue:
  // compiled with the system C compiler ($CC or cc) into a shared object and loaded.
  std::string run_emitted_dir;
  // The memory the model file, KV cache and activations may need together; 0: the machine's
  // physical memory. Loading fails up front, naming the sizes, when they need more.
  int64_t memory_limit_bytes = 0;
  // Compile only: resolve, plan and JIT, for what reads the plan (plan_text, emit_c, the
  // X-Ray trace), with no weight copies made and no memory check: an audit of a model needs
  // neither its repack time nor the memory to run it. Such an engine refuses eval and
  // decode_batch (an error, not a crash).
  bool plan_only = false;
};

struct EngineStats {
  double load_ms = 0;        // open + validate + tokenizer
  double compile_ms = 0;     // circuit, resolve, plan, JIT: the sum of the three below
  double maps_ms = 0;        //   kernel maps, contracts and the circuit read and checked
  double resolve_ms = 0;     //   the graph instantiated and every op resolved
  double jit_ms = 0;         //   kernels generated and JIT-compiled, plans and glue built
  double repack_ms = 0;      // the repack step: weights copied into the layouts the plan reads
  int64_t repack_bytes = 0;  // memory of those copies
  // The weights read in the file's layout: copied into 2 MiB pages at load (bytes, in
  // repack_ms), or why they stay in the file's mapping.
  int64_t weight_copy_bytes = 0;
  std::string weight_pages;    // "2 MiB pages (copy)" or "file mapping (<reason>)"
  bool repack_reused = false;  // the copies of another engine of the same file and plan
  int64_t n_params = 0;        // elements of every tensor in the file (llama-bench's "params")
  int64_t file_bytes = 0;
  // Weight bytes one decode step reads: every weight a decode step takes whole (an embed
  // step reads one row, so its table is not counted unless a matmul also reads it); of an
  // expert tensor, the experts one token uses (expert_used_count of expert_count).
  int64_t decode_weight_bytes = 0;
  int64_t decode_weight_elements = 0;  // their elements: the multiply-adds of one token
};

// llama.cpp's KV cache flags (-ctk, -ctv, -fa on|off|auto, also 1|0) to
// EngineOptions::cache_type. CKE runs the two pairings llama.cpp's references cover: an F32
// cache without flash attention and an F16 cache with it (`auto` follows the cache type).
// false and *err naming the flag for any other combination.
bool kv_cache_from_flags(const std::string& type_k, const std::string& type_v,
                         const std::string& flash_attn, std::string* cache_type, std::string* err);

class Engine {
 public:
  static std::unique_ptr<Engine> load(const EngineOptions& options, std::string* err);
  ~Engine();

  const Tokenizer& tokenizer() const;
  int32_t n_vocab() const;
  int32_t n_ctx() const;
  int32_t n_threads() const;
  int32_t n_seq() const;
  int32_t n_batch() const;  // tokens of one prefill call: eval runs longer prompts in chunks
  int32_t pos(int32_t seq = 0) const;  // tokens in the KV cache of sequence `seq`
  const std::string& architecture() const;
  const EngineStats& stats() const;

  // Evaluates `tokens` at positions pos() .. pos()+n-1 and appends them to the KV cache:
  // one token runs the decode plan, more run the prefill plan in chunks of n_batch.
  // `logits` receives n rows of n_vocab (all_logits) or the last row only.
  bool eval(std::span<const int32_t> tokens, std::vector<float>* logits, bool all_logits,
            std::string* err);
  // The same for sequence `seq` (its own cells; eval above is sequence 0).
  bool eval(int32_t seq, std::span<const int32_t> tokens, std::vector<float>* logits,
            bool all_logits, std::string* err);
  // One decode step of several sequences in one plan call: tokens[i] is appended to sequence
  // seqs[i] (distinct) at its position pos(seqs[i]); the weights are read once for all of
  // them. `logits` receives one row of n_vocab per token, the bits each sequence's own
  // eval of that token would give.
  bool decode_batch(std::span<const int32_t> seqs, std::span<const int32_t> tokens,
                    std::vector<float>* logits, std::string* err);
  // Forgets cache cells at and after `pos` (0 = empty), of sequence 0 or of `seq`.
  void rewind(int32_t pos);
  void rewind(int32_t seq, int32_t pos);

  // Writes the frozen plan as C (cke_plan.h, cke_plan.c) into `dir` (cke-run --emit-c).
  bool emit_c(const std::string& dir, std::string* err) const;
  bool runs_emitted_c() const;

  std::string plan_text() const;  // cke-run --plan
  // X-Ray (cke.xray/1), with the plan's hash; made on the first call (not thread-safe).
  const nlohmann::json& trace() const;

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cke
