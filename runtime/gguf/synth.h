// Random-weight models with a real structure and a real tokenizer (`cke-gguf synth`).
//
// Weights come from a counter-based generator, so every element is a pure function of
// (seed, tensor index, element index): the file is identical for a seed whatever the
// thread count. See docs/gguf.md ("synth") for the exact definition.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "runtime/gguf/gguf.h"

namespace cke::gguf {

struct SynthConfig {
  std::string arch = "llama";  // llama (dense, or with experts) or qwen3moe
  std::string preset;
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_ff = 0, n_ctx = 0;
  int64_t head_dim = 0;  // 0: n_embd / n_head
  // Mixture of experts: n_expert experts of width n_ff_exp (0: n_ff), n_expert_used per
  // token; n_expert 0 is a dense model (qwen3moe needs experts).
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  double rms_eps = 1e-5;
  double rope_base = 10000.0;
  DType type = DType::F32;
  uint64_t seed = 0;
};

// Presets: "tinyllama-1.1b" (2048/22 layers/32 heads/4 kv/5632/ctx 2048), "tiny"
// (256/2/4/2/768/ctx 4096, the shape of shared/models/synthetic) and "qwen3-30b-a3b"
// (qwen3moe: 2048/48 layers/32 heads of 128/4 kv, 128 experts of 768, 8 used, ctx 4096;
// --dims n_layer=4 makes a few-layer model of that shape).
std::optional<SynthConfig> synth_preset(std::string_view name);

// Applies "key=val,key=val" overrides (n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx,
// head_dim, n_expert, n_expert_used, n_ff_exp, rms_eps, rope_base) and checks the result;
// false with *why on error.
bool synth_apply_dims(SynthConfig* c, std::string_view spec, std::string* why);
bool synth_check(const SynthConfig& c, std::string* why);

// Standard normal number `i` of stream `stream` for `seed` (see docs/gguf.md).
double synth_normal(uint64_t seed, uint64_t stream, uint64_t i);

// Writes the model to `out`, copying every `tokenizer.*` key of `vocab` verbatim. Without
// a vocab file (nullptr) a small built-in SentencePiece-style vocabulary is used: <unk>,
// <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, "▁" and the 94 printable ASCII characters
// (354 tokens, so a model can be made where ../shared is absent).
bool synth_write(const SynthConfig& c, const File* vocab, const std::string& out, GgufError* err,
                 const std::function<void(const std::string&)>& note = {});

}  // namespace cke::gguf
