#include "runtime/gguf/synth.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <variant>
#include <vector>

#include "kernels/formats/quant.h"
#include "runtime/gguf/quantize.h"
#include "runtime/gguf/synth_family.h"

namespace cke::gguf {

namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// SplitMix64's output function (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Counter-based generator: word k of (seed, stream) is the k-th SplitMix64 output from a
// state derived from both, so any element can be computed without generating the others.
struct Stream {
  uint64_t key;
  Stream(uint64_t seed, uint64_t stream) : key(mix64(seed ^ mix64(stream + kGolden))) {}
  uint64_t word(uint64_t k) const { return mix64(key + (k + 1) * kGolden); }
  // Box-Muller on the pair j: u1 in (0, 1) so the log is finite, u2 in [0, 1).
  void pair(uint64_t j, double* z0, double* z1) const {
    const double u1 = (static_cast<double>(word(2 * j) >> 11) + 0.5) * 0x1p-53;
    const double u2 = static_cast<double>(word(2 * j + 1) >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1)), a = 2.0 * M_PI * u2;
    *z0 = r * std::cos(a);
    *z1 = r * std::sin(a);
  }
};

// out[k] = offset + scale * normal(start + k), k < n.
void fill_normal(const Stream& s, uint64_t start, size_t n, double scale, double offset,
                 float* out) {
  size_t k = 0;
  double z0, z1;
  if (start % 2 && n) {  // odd start: the sine half of the pair
    s.pair(start / 2, &z0, &z1);
    out[k++] = static_cast<float>(offset + scale * z1);
  }
  for (; k + 1 < n; k += 2) {
    s.pair((start + k) / 2, &z0, &z1);
    out[k] = static_cast<float>(offset + scale * z0);
    out[k + 1] = static_cast<float>(offset + scale * z1);
  }
  if (k < n) {
    s.pair((start + k) / 2, &z0, &z1);
    out[k] = static_cast<float>(offset + scale * z0);
  }
}

bool parse_int(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}
bool parse_real(std::string_view s, double* out) {
  try {
    size_t used = 0;
    *out = std::stod(std::string(s), &used);
    return used == s.size() && std::isfinite(*out);
  } catch (...) {
    return false;
  }
}

}  // namespace

double synth_normal(uint64_t seed, uint64_t stream, uint64_t i) {
  double z0, z1;
  Stream(seed, stream).pair(i / 2, &z0, &z1);
  return i % 2 ? z1 : z0;
}

namespace {

using IntField = int64_t SynthConfig::*;
using RealField = double SynthConfig::*;

// The --dims keys. rms_eps is norm_eps's older name.
const std::pair<std::string_view, std::variant<IntField, RealField>> kDims[] = {
    {"n_embd", &SynthConfig::n_embd},
    {"n_layer", &SynthConfig::n_layer},
    {"n_head", &SynthConfig::n_head},
    {"n_head_kv", &SynthConfig::n_head_kv},
    {"n_ff", &SynthConfig::n_ff},
    {"n_ctx", &SynthConfig::n_ctx},
    {"head_dim", &SynthConfig::head_dim},
    {"n_rot", &SynthConfig::n_rot},
    {"n_expert", &SynthConfig::n_expert},
    {"n_expert_used", &SynthConfig::n_expert_used},
    {"n_ff_exp", &SynthConfig::n_ff_exp},
    {"n_swa", &SynthConfig::n_swa},
    {"swa_pattern", &SynthConfig::swa_pattern},
    {"tied", &SynthConfig::tied},
    {"norm_eps", &SynthConfig::norm_eps},
    {"rms_eps", &SynthConfig::norm_eps},
    {"rope_base", &SynthConfig::rope_base},
    {"rope_base_swa", &SynthConfig::rope_base_swa},
};

bool apply_dims_unchecked(SynthConfig* c, std::string_view spec, std::string* why) {
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      *why = "expected key=value, got '" + std::string(item) + "'";
      return false;
    }
    const std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
    const auto* dim = std::find_if(std::begin(kDims), std::end(kDims),
                                   [&](const auto& d) { return d.first == k; });
    if (dim == std::end(kDims)) {
      std::string known;
      for (const auto& d : kDims) known += (known.empty() ? "" : ", ") + std::string(d.first);
      *why = "unknown dimension '" + std::string(k) + "' (" + known + ")";
      return false;
    }
    const bool ok = std::visit(
        [&](auto field) {
          if constexpr (std::is_same_v<decltype(field), IntField>)
            return parse_int(v, &(c->*field));
          else
            return parse_real(v, &(c->*field));
        },
        dim->second);
    if (!ok) {
      *why = "bad value '" + std::string(v) + "' for " + std::string(k);
      return false;
    }
  }
  return true;
}

// The preset row's config: its base's, then its architecture and dims.
bool build_preset(const SynthPresetRow& row, SynthConfig* c, std::string* why) {
  if (!row.base.empty()) {
    const auto rows = synth_preset_rows();
    const auto base = std::find_if(rows.begin(), rows.end(),
                                   [&](const SynthPresetRow& r) { return r.name == row.base; });
    if (base == rows.end() || !build_preset(*base, c, why)) return false;
  }
  c->arch = std::string(row.arch);
  return apply_dims_unchecked(c, row.dims, why);
}

// What the config leaves to the family, resolved.
struct Resolved {
  int64_t head_dim, n_rot, n_ff_exp, n_swa, swa_pattern;
  double rope_base_swa;
  bool tied;
};

Resolved resolve(const SynthConfig& c, const SynthFamily& f) {
  Resolved r;
  r.head_dim = c.head_dim > 0 ? c.head_dim : c.n_embd / c.n_head;
  r.n_rot = c.n_rot > 0 ? c.n_rot : f.partial_rope ? r.head_dim / 2 : r.head_dim;
  r.n_ff_exp = c.n_ff_exp > 0 ? c.n_ff_exp : c.n_ff;
  r.n_swa = c.n_swa > 0 ? c.n_swa : 512;
  r.swa_pattern = c.swa_pattern > 0 ? c.swa_pattern : 6;
  r.rope_base_swa = c.rope_base_swa > 0 ? c.rope_base_swa : 10000.0;
  r.tied = c.tied < 0 ? f.tied : c.tied == 1;
  return r;
}

// "a, b" of the families with `has`.
std::string families_with(bool SynthFamily::*has) {
  std::string out;
  for (const SynthFamily& f : synth_families())
    if (f.*has) out += (out.empty() ? "" : ", ") + std::string(f.arch);
  return out;
}

}  // namespace

std::optional<SynthConfig> synth_preset(std::string_view name, std::string_view arch,
                                        std::string* why) {
  std::string scratch;
  if (!why) why = &scratch;
  const SynthPresetRow* row = nullptr;
  for (const SynthPresetRow& r : synth_preset_rows())
    if (r.name == name && (!row || (r.arch == arch && row->arch != arch))) row = &r;
  if (!row) {
    *why = "unknown preset '" + std::string(name) + "' (" + synth_preset_list() + ")";
    return std::nullopt;
  }
  if (!arch.empty() && !synth_family(arch)) {
    *why = "unsupported architecture '" + std::string(arch) + "' (" + synth_arch_list() + ")";
    return std::nullopt;
  }
  SynthConfig c;
  if (!build_preset(*row, &c, why)) return std::nullopt;
  if (!arch.empty()) c.arch = std::string(arch);
  c.preset = std::string(name);
  return c;
}

bool synth_check(const SynthConfig& c, std::string* why) {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  const SynthFamily* fam = synth_family(c.arch);
  if (!fam) return bad("unsupported architecture '" + c.arch + "' (" + synth_arch_list() + ")");
  const SynthFamily& f = *fam;
  const std::string& a = c.arch;
  for (auto [n, v] : {std::pair{"n_embd", c.n_embd},
                      {"n_layer", c.n_layer},
                      {"n_head", c.n_head},
                      {"n_head_kv", c.n_head_kv},
                      {"n_ff", c.n_ff},
                      {"n_ctx", c.n_ctx}})
    if (v <= 0 || v > (int64_t{1} << 24)) return bad(std::string(n) + " must be in 1..2^24");
  for (auto [n, v] : {std::pair{"head_dim", c.head_dim},
                      {"n_rot", c.n_rot},
                      {"n_expert", c.n_expert},
                      {"n_expert_used", c.n_expert_used},
                      {"n_ff_exp", c.n_ff_exp},
                      {"n_swa", c.n_swa},
                      {"swa_pattern", c.swa_pattern}})
    if (v < 0 || v > (int64_t{1} << 24)) return bad(std::string(n) + " must be in 0..2^24");
  if (c.head_dim == 0 && c.n_embd % c.n_head != 0)
    return bad("n_embd must be a multiple of n_head (or give head_dim)");
  const Resolved r = resolve(c, f);
  if (r.head_dim % 2 != 0) return bad("head_dim (" + std::to_string(r.head_dim) + ") must be even");
  if (c.n_head % c.n_head_kv != 0) return bad("n_head must be a multiple of n_head_kv");
  const std::string hd = std::to_string(r.head_dim);
  if (f.q_width_is_n_embd && c.n_head * r.head_dim != c.n_embd)
    return bad("head_dim: " + a +
               " needs n_head * head_dim = n_embd (llama.cpp makes attn_q [n_embd, n_embd])");
  if (f.partial_rope && (r.n_rot % 2 != 0 || r.n_rot > r.head_dim))
    return bad("n_rot must be even and at most head_dim (" + hd + ")");
  if (!f.partial_rope && r.n_rot != r.head_dim)
    return bad("n_rot: " + a + " rotates whole heads (n_rot = head_dim = " + hd +
               "; partial rotary: " + families_with(&SynthFamily::partial_rope) + ")");
  // Experts.
  if (f.experts == SynthExperts::never && (c.n_expert || c.n_expert_used || c.n_ff_exp))
    return bad(std::string(c.n_expert        ? "n_expert"
                           : c.n_expert_used ? "n_expert_used"
                                             : "n_ff_exp") +
               ": " + a + " has no experts");
  if (f.experts == SynthExperts::required && c.n_expert == 0)
    return bad("n_expert: " + a + " needs experts (n_expert > 0)");
  if (c.n_expert > 512) return bad("n_expert must be at most 512 (llama.cpp's LLAMA_MAX_EXPERTS)");
  if (c.n_expert > 0 && (c.n_expert_used < 1 || c.n_expert_used > c.n_expert))
    return bad("n_expert_used must be in 1..n_expert");
  if (c.n_expert == 0 && (c.n_expert_used != 0 || c.n_ff_exp != 0))
    return bad("n_expert_used and n_ff_exp need experts (n_expert > 0)");
  // Sliding window.
  if (!f.sliding_window) {
    for (auto [n, given] : {std::pair{"n_swa", c.n_swa != 0},
                            {"swa_pattern", c.swa_pattern != 0},
                            {"rope_base_swa", c.rope_base_swa != 0}})
      if (given)
        return bad(std::string(n) + ": " + a + " has no sliding-window attention (" +
                   families_with(&SynthFamily::sliding_window) + " has)");
  }
  if (!(c.rope_base_swa >= 0 && c.rope_base_swa < 1e30))
    return bad("rope_base_swa must be in (0, 1e30)");
  // Output head.
  if (c.tied < -1 || c.tied > 1) return bad("tied must be 0 or 1");
  if (r.tied && !f.can_tie)
    return bad("tied: " + a + " needs output.weight (llama.cpp has no tied fallback)");
  if (!(c.norm_eps > 0 && c.norm_eps < 1)) return bad("norm_eps must be in (0, 1)");
  if (!(c.rope_base > 0 && c.rope_base < 1e30)) return bad("rope_base must be in (0, 1e30)");
  if (!is_quantize_target(c.type))
    return bad("unsupported type " + std::string(dtype_name(c.type)));
  return true;
}

bool synth_apply_dims(SynthConfig* c, std::string_view spec, std::string* why) {
  return apply_dims_unchecked(c, spec, why) && synth_check(*c, why);
}

namespace {

// The built-in vocabulary (see synth.h). Token types are llama.cpp's: 1 normal,
// 2 unknown, 3 control, 6 byte.
void add_builtin_vocab(Writer& w) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  tokens.push_back("\xe2\x96\x81");  // U+2581, SentencePiece's word-boundary mark
  types.push_back(1);
  for (char ch = '!'; ch <= '~'; ++ch) {
    tokens.push_back(std::string(1, ch));
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 259; i < scores.size(); ++i) scores[i] = -static_cast<float>(i - 259);
  w.add_str("tokenizer.ggml.model", "llama");
  w.add_str_array("tokenizer.ggml.tokens", tokens);
  w.add_f32_array("tokenizer.ggml.scores", scores);
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
}

constexpr int64_t kBuiltinVocab = 3 + 256 + 1 + 94;

}  // namespace

bool synth_write(const SynthConfig& c, const File* vocab, const std::string& out, GgufError* err,
                 const std::function<void(const std::string&)>& note) {
  std::string why;
  if (!synth_check(c, &why)) {
    if (err) err->message = "synth: " + why;
    return false;
  }
  int64_t n_vocab = kBuiltinVocab;
  if (vocab) {
    const auto* tokens = vocab->str_array("tokenizer.ggml.tokens", err);
    if (!tokens) return false;
    n_vocab = static_cast<int64_t>(tokens->size());
    if (n_vocab == 0) {
      if (err) err->message = vocab->path() + ": tokenizer.ggml.tokens: empty vocabulary";
      return false;
    }
  }
  const SynthFamily& f = *synth_family(c.arch);
  const Resolved r = resolve(c, f);
  const int64_t q_dim = r.head_dim * c.n_head, n_embd_kv = r.head_dim * c.n_head_kv;
  const bool moe = c.n_expert > 0, layer_norm = f.norm == SynthNorm::layer;
  auto key = [&c](const char* k) { return c.arch + "." + k; };
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };

  // Metadata in the order of llama.cpp's converter (as the shared synthetic files).
  Writer w;
  w.add_str("general.architecture", c.arch);
  w.add_str("general.name", "cke-synth " + (c.preset.empty() ? std::string("custom") : c.preset));
  w.add_u32(key("context_length"), u32(c.n_ctx));
  w.add_u32(key("embedding_length"), u32(c.n_embd));
  w.add_u32(key("block_count"), u32(c.n_layer));
  w.add_u32(key("feed_forward_length"), u32(moe && !f.expert_width_key ? r.n_ff_exp : c.n_ff));
  w.add_u32(key("attention.head_count"), u32(c.n_head));
  w.add_u32(key("attention.head_count_kv"), u32(c.n_head_kv));
  w.add_u32(key("attention.key_length"), u32(r.head_dim));
  w.add_u32(key("attention.value_length"), u32(r.head_dim));
  w.add_u32(key("rope.dimension_count"), u32(r.n_rot));
  w.add_f32(key(layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"),
            static_cast<float>(c.norm_eps));
  w.add_f32(key("rope.freq_base"), static_cast<float>(c.rope_base));
  if (f.sliding_window) {
    w.add_f32(key("rope.freq_base_swa"), static_cast<float>(r.rope_base_swa));
    w.add_u32(key("attention.sliding_window"), u32(r.n_swa));
    w.add_u32(key("attention.sliding_window_pattern"), u32(r.swa_pattern));
  }
  if (!f.rope_scaling_type.empty())
    w.add_str(key("rope.scaling.type"), std::string(f.rope_scaling_type));
  if (moe) {
    w.add_u32(key("expert_count"), u32(c.n_expert));
    w.add_u32(key("expert_used_count"), u32(c.n_expert_used));
    if (f.expert_width_key) w.add_u32(key("expert_feed_forward_length"), u32(r.n_ff_exp));
  }
  w.add_u32(key("vocab_size"), u32(n_vocab));
  if (dtype_info(c.type).block_size > 1) w.add_u32("general.quantization_version", 2);
  w.add_u32("general.file_type", *llama_ftype(c.type));
  if (vocab) {
    for (const auto& [k, v] : vocab->metadata())
      if (k.substr(0, 10) == "tokenizer.") w.add_value(std::string(k), v);
  } else {
    add_builtin_vocab(w);
  }

  // Tensors in llama.cpp's order; the stream of tensor i is i.
  uint64_t stream = 0;
  // A matrix of ne1 rows of ne0, or ne2 such matrices (the experts' [ne0, ne1, ne2]);
  // `keep_f32`: llama-quantize never quantizes it (the MoE router).
  auto matrix = [&](std::string name, int64_t ne0, int64_t ne1, int64_t ne2 = 1,
                    bool keep_f32 = false) {
    const DType to = keep_f32 ? DType::F32 : fitting_type(c.type, ne0);
    if (to != c.type && note && !keep_f32)
      note(name + ": row length " + std::to_string(ne0) + " does not fit " +
           std::string(dtype_name(c.type)) + "; using " + std::string(dtype_name(to)));
    const Stream s(c.seed, stream++);
    std::vector<int64_t> ne = {ne0, ne1};
    if (ne2 > 1) ne.push_back(ne2);
    const int64_t rows = ne1 * ne2;
    w.add_tensor_fill(
        std::move(name), to, ne, [s, to, ne0, rows](std::span<uint8_t> dst, GgufError*) {
          const size_t rb = row_bytes(to, ne0);
          tbb::parallel_for(
              tbb::blocked_range<int64_t>(0, rows, 8), [&](const tbb::blocked_range<int64_t>& r) {
                std::vector<float> row(static_cast<size_t>(ne0));
                for (int64_t i = r.begin(); i < r.end(); ++i) {
                  fill_normal(s, static_cast<uint64_t>(i * ne0), row.size(), 0.02, 0.0, row.data());
                  quantize_row(to, row.data(), dst.data() + i * rb, ne0);
                }
              });
          return true;
        });
  };
  // An F32 vector `offset + 0.1 z`: norm weights (offset 1) and biases (offset 0).
  auto vec = [&](std::string name, int64_t n, double offset) {
    const Stream s(c.seed, stream++);
    w.add_tensor_fill(std::move(name), DType::F32, {n},
                      [s, n, offset](std::span<uint8_t> dst, GgufError*) {
                        std::vector<float> v(static_cast<size_t>(n));
                        fill_normal(s, 0, v.size(), 0.1, offset, v.data());
                        std::memcpy(dst.data(), v.data(), dst.size());
                        return true;
                      });
  };
  // `stem`.weight, and `stem`.bias for a LayerNorm.
  auto norm = [&](const std::string& stem, int64_t n) {
    vec(stem + ".weight", n, 1.0);
    if (layer_norm) vec(stem + ".bias", n, 0.0);
  };
  matrix("token_embd.weight", c.n_embd, n_vocab);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm", c.n_embd);
    matrix(b + "attn_q.weight", c.n_embd, q_dim);
    matrix(b + "attn_k.weight", c.n_embd, n_embd_kv);
    matrix(b + "attn_v.weight", c.n_embd, n_embd_kv);
    if (f.qkv_bias) {
      vec(b + "attn_q.bias", q_dim, 0.0);
      vec(b + "attn_k.bias", n_embd_kv, 0.0);
      vec(b + "attn_v.bias", n_embd_kv, 0.0);
    }
    if (f.qk_norm) {
      norm(b + "attn_q_norm", r.head_dim);
      norm(b + "attn_k_norm", r.head_dim);
    }
    matrix(b + "attn_output.weight", q_dim, c.n_embd);
    if (f.post_norms) norm(b + "post_attention_norm", c.n_embd);
    norm(b + "ffn_norm", c.n_embd);
    if (moe) {
      matrix(b + "ffn_gate_inp.weight", c.n_embd, c.n_expert, 1, true);
      matrix(b + "ffn_gate_exps.weight", c.n_embd, r.n_ff_exp, c.n_expert);
      matrix(b + "ffn_up_exps.weight", c.n_embd, r.n_ff_exp, c.n_expert);
      matrix(b + "ffn_down_exps.weight", r.n_ff_exp, c.n_embd, c.n_expert);
    } else {
      if (f.ffn == SynthFfn::gated) matrix(b + "ffn_gate.weight", c.n_embd, c.n_ff);
      matrix(b + "ffn_up.weight", c.n_embd, f.ffn == SynthFfn::fused ? 2 * c.n_ff : c.n_ff);
      matrix(b + "ffn_down.weight", c.n_ff, c.n_embd);
    }
    if (f.post_norms) norm(b + "post_ffw_norm", c.n_embd);
  }
  norm("output_norm", c.n_embd);
  if (!r.tied) matrix("output.weight", c.n_embd, n_vocab);
  return w.write(out, err);
}

}  // namespace cke::gguf
