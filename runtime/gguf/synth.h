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
  std::string arch = "llama";  // a row of synth_families()
  std::string preset;
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_ff = 0, n_ctx = 0;
  int64_t head_dim = 0;  // 0: n_embd / n_head
  int64_t n_rot = 0;     // rotated channels per head; 0: the family's (head_dim, or half)
  // Mixture of experts: n_expert experts of width n_ff_exp (0: n_ff), n_expert_used per
  // token; n_expert 0 is a dense model (qwen3moe needs experts).
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  // Sliding-window attention (gemma3): the window, the pattern (layer L is local when
  // L % pattern < pattern - 1) and the local layers' RoPE base; 0: Gemma 3's 512, 6, 10000.
  int64_t n_swa = 0, swa_pattern = 0;
  double rope_base_swa = 0;
  int64_t tied = -1;       // 1: no output.weight (tied to token_embd), 0: written, -1: the family's
  double norm_eps = 1e-5;  // RMSNorm or LayerNorm epsilon, as the family's norm is
  double rope_base = 10000.0;
  DType type = DType::F32;
  uint64_t seed = 0;
};

// The preset `name` for `arch` (empty: the preset's own family): its row for that family if
// it has one (so "tiny" is each family's shared/models/synthetic shape), else its first row
// with the architecture replaced. See synth_family.cpp for the shapes. nullopt with *why
// naming the presets or the architectures on error.
std::optional<SynthConfig> synth_preset(std::string_view name, std::string_view arch = {},
                                        std::string* why = nullptr);

// Applies "key=val,key=val" overrides (n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx,
// head_dim, n_rot, n_expert, n_expert_used, n_ff_exp, n_swa, swa_pattern, tied, norm_eps
// (or rms_eps), rope_base, rope_base_swa) and checks the result against the family; false
// with *why naming the field on error.
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
