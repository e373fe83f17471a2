#include "runtime/gguf/synth_family.h"

#include <algorithm>
#include <vector>

namespace cke::gguf {

namespace {

// One row per circuit family (circuits/*.yaml; llama with experts is the llama row).
constexpr SynthFamily kFamilies[] = {
    {.arch = "llama", .experts = SynthExperts::optional},
    {.arch = "qwen2", .qkv_bias = true},
    {.arch = "qwen3", .qk_norm = true, .tied = true},
    {.arch = "gemma3", .qk_norm = true, .post_norms = true, .sliding_window = true, .tied = true},
    {.arch = "glm4",
     .ffn = SynthFfn::fused,
     .qkv_bias = true,
     .post_norms = true,
     .partial_rope = true},
    // The HF converter writes rope.scaling.type "none" when there is no scaling factor.
    {.arch = "nemotron",
     .norm = SynthNorm::layer,
     .ffn = SynthFfn::ungated,
     .partial_rope = true,
     .can_tie = false,
     .q_width_is_n_embd = true,
     .rope_scaling_type = "none"},
    {.arch = "qwen3moe",
     .qk_norm = true,
     .experts = SynthExperts::required,
     .expert_width_key = true},
};

// "tiny" is the common shape of shared/models/synthetic (n_embd 256, 2 layers, 4 heads of
// 64, 2 KV heads, ctx 4096), with each family's row there: synthesizing `--preset tiny
// --arch X` gives synth-X-F32.gguf's metadata and tensor shapes. The other shapes are the
// real models' (their HF config.json); "-l4" keeps 4 of the layers.
constexpr SynthPresetRow kPresets[] = {
    {"tiny", "llama", "", "n_embd=256,n_layer=2,n_head=4,n_head_kv=2,n_ff=768,n_ctx=4096"},
    {"tiny", "qwen2", "tiny", "norm_eps=1e-6,rope_base=1e6"},
    {"tiny", "qwen3", "tiny", "norm_eps=1e-6,rope_base=1e6"},
    {"tiny", "gemma3", "tiny",
     "norm_eps=1e-6,rope_base=1e6,rope_base_swa=10000,n_swa=32,swa_pattern=2"},
    {"tiny", "glm4", "tiny", "n_ff=384"},
    {"tiny", "nemotron", "tiny", "n_ff=512"},
    {"tiny", "qwen3moe", "tiny",
     "n_ff=256,n_expert=4,n_expert_used=2,n_ff_exp=128,norm_eps=1e-6,rope_base=1e6"},
    {"tinyllama-1.1b", "llama", "",
     "n_embd=2048,n_layer=22,n_head=32,n_head_kv=4,n_ff=5632,n_ctx=2048"},
    {"qwen2.5-0.5b", "qwen2", "",
     "n_embd=896,n_layer=24,n_head=14,n_head_kv=2,n_ff=4864,n_ctx=32768,norm_eps=1e-6,"
     "rope_base=1e6,tied=1"},
    {"qwen3-0.6b", "qwen3", "",
     "n_embd=1024,n_layer=28,n_head=16,n_head_kv=8,head_dim=128,n_ff=3072,n_ctx=40960,"
     "norm_eps=1e-6,rope_base=1e6"},
    {"gemma3-1b", "gemma3", "",
     "n_embd=1152,n_layer=26,n_head=4,n_head_kv=1,head_dim=256,n_ff=6912,n_ctx=32768,"
     "norm_eps=1e-6,rope_base=1e6,rope_base_swa=10000,n_swa=512,swa_pattern=6"},
    {"glm4-9b", "glm4", "",
     "n_embd=4096,n_layer=40,n_head=32,n_head_kv=2,head_dim=128,n_ff=13696,n_ctx=32768"},
    {"glm4-9b-l4", "glm4", "glm4-9b", "n_layer=4"},
    {"nemotron-mini-4b", "nemotron", "",
     "n_embd=3072,n_layer=32,n_head=24,n_head_kv=8,head_dim=128,n_ff=9216,n_ctx=4096"},
    {"nemotron-mini-4b-l4", "nemotron", "nemotron-mini-4b", "n_layer=4"},
    {"qwen3-30b-a3b", "qwen3moe", "",
     "n_embd=2048,n_layer=48,n_head=32,n_head_kv=4,head_dim=128,n_ff=6144,n_ctx=4096,"
     "n_expert=128,n_expert_used=8,n_ff_exp=768,norm_eps=1e-6,rope_base=1e6"},
    {"mixtral-8x7b", "llama", "",
     "n_embd=4096,n_layer=32,n_head=32,n_head_kv=8,n_ff=14336,n_ctx=32768,n_expert=8,"
     "n_expert_used=2,rope_base=1e6"},
};

template <typename Rows, typename Name>
std::string join_names(const Rows& rows, Name name) {
  std::vector<std::string_view> seen;
  std::string out;
  for (const auto& r : rows) {
    if (std::find(seen.begin(), seen.end(), name(r)) != seen.end()) continue;
    seen.push_back(name(r));
    out += (out.empty() ? "" : ", ") + std::string(name(r));
  }
  return out;
}

}  // namespace

std::span<const SynthFamily> synth_families() {
  return kFamilies;
}

const SynthFamily* synth_family(std::string_view arch) {
  for (const SynthFamily& f : kFamilies)
    if (f.arch == arch) return &f;
  return nullptr;
}

std::span<const SynthPresetRow> synth_preset_rows() {
  return kPresets;
}

std::string synth_arch_list() {
  return join_names(kFamilies, [](const SynthFamily& f) { return f.arch; });
}

std::string synth_preset_list() {
  return join_names(kPresets, [](const SynthPresetRow& p) { return p.name; });
}

}  // namespace cke::gguf
