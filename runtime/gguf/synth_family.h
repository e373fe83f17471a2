// What `cke-gguf synth` writes for each architecture (one row per family) and its presets
// (one row per named shape). The writer and the checks in synth.cpp read these rows only;
// adding a family is adding a row (and its circuit). Names and defaults follow llama.cpp at
// 81ff7abe and shared/models/synthetic/README.md.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace cke::gguf {

enum class SynthNorm {
  rms,    // RMSNorm weights; eps key attention.layer_norm_rms_epsilon
  layer,  // LayerNorm weights and biases (.bias tensors); eps key attention.layer_norm_epsilon
};

enum class SynthFfn {
  gated,    // ffn_gate, ffn_up [n_embd, n_ff], ffn_down [n_ff, n_embd]
  fused,    // one ffn_up [n_embd, 2 n_ff]: rows 0..n_ff-1 the gate, n_ff.. the up half
  ungated,  // ffn_up, ffn_down (an activation between them, no gate)
};

enum class SynthExperts {
  never,
  optional,  // n_expert 0 writes the dense FFN
  required,
};

struct SynthFamily {
  std::string_view arch;  // general.architecture and the metadata key prefix
  SynthNorm norm = SynthNorm::rms;
  SynthFfn ffn = SynthFfn::gated;  // the dense FFN (experts are always gated)
  bool qkv_bias = false;           // attn_{q,k,v}.bias after the projections
  bool qk_norm = false;            // attn_{q,k}_norm [head_dim]: per-head RMSNorm
  bool post_norms = false;         // post_attention_norm and post_ffw_norm [n_embd]
  // Sliding-window attention keys (attention.sliding_window, .sliding_window_pattern,
  // rope.freq_base_swa); their values default to the real model's when not given.
  bool sliding_window = false;
  // Rotary embedding on part of each head (n_rot < head_dim; default half of it, as the HF
  // converter writes partial_rotary_factor 0.5). Without it llama.cpp requires n_rot ==
  // head_dim (the loader or the graph builder asserts it).
  bool partial_rope = false;
  bool tied = false;               // no output.weight by default (llama.cpp uses token_embd)
  bool can_tie = true;             // false: llama.cpp has no tied fallback
  bool q_width_is_n_embd = false;  // llama.cpp creates attn_q as [n_embd, n_embd]
  SynthExperts experts = SynthExperts::never;
  // The expert width's key: expert_feed_forward_length (feed_forward_length is then the
  // dense width), or none (feed_forward_length is the expert width, as llama reads it).
  bool expert_width_key = false;
  std::string_view rope_scaling_type = {};  // rope.scaling.type written when not empty
};

// A named shape: `dims` (synth_apply_dims syntax) applied on top of the preset `base` (or of
// an empty config). Rows with one name and several architectures are that shape per family;
// the first row of a name is its default family.
struct SynthPresetRow {
  std::string_view name, arch, base, dims;
};

std::span<const SynthFamily> synth_families();
const SynthFamily* synth_family(std::string_view arch);  // nullptr if none
std::span<const SynthPresetRow> synth_preset_rows();

// "a, b, c": the families' architectures, the presets' names (each once).
std::string synth_arch_list();
std::string synth_preset_list();

}  // namespace cke::gguf
