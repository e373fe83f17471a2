#include "runtime/gguf/synth.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/formats/quant.h"
#include "runtime/gguf/quantize.h"

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

std::optional<SynthConfig> synth_preset(std::string_view name) {
  SynthConfig c;
  c.preset = std::string(name);
  if (name == "tinyllama-1.1b") {
    c.n_embd = 2048, c.n_layer = 22, c.n_head = 32, c.n_head_kv = 4, c.n_ff = 5632, c.n_ctx = 2048;
  } else if (name == "tiny") {
    c.n_embd = 256, c.n_layer = 2, c.n_head = 4, c.n_head_kv = 2, c.n_ff = 768, c.n_ctx = 4096;
  } else if (name == "qwen3-30b-a3b") {
    c.arch = "qwen3moe";
    c.n_embd = 2048, c.n_layer = 48, c.n_head = 32, c.n_head_kv = 4, c.n_ff = 6144, c.n_ctx = 4096;
    c.head_dim = 128, c.n_expert = 128, c.n_expert_used = 8, c.n_ff_exp = 768;
    c.rms_eps = 1e-6, c.rope_base = 1e6;
  } else {
    return std::nullopt;
  }
  return c;
}

bool synth_check(const SynthConfig& c, std::string* why) {
  auto bad = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  const bool qwen = c.arch == "qwen3moe";
  if (c.arch != "llama" && !qwen)
    return bad("unsupported architecture '" + c.arch + "' (llama, qwen3moe)");
  for (auto [n, v] : {std::pair{"n_embd", c.n_embd},
                      {"n_layer", c.n_layer},
                      {"n_head", c.n_head},
                      {"n_head_kv", c.n_head_kv},
                      {"n_ff", c.n_ff},
                      {"n_ctx", c.n_ctx}})
    if (v <= 0 || v > (int64_t{1} << 24)) return bad(std::string(n) + " must be in 1..2^24");
  for (auto [n, v] : {std::pair{"head_dim", c.head_dim},
                      {"n_expert", c.n_expert},
                      {"n_expert_used", c.n_expert_used},
                      {"n_ff_exp", c.n_ff_exp}})
    if (v < 0 || v > (int64_t{1} << 24)) return bad(std::string(n) + " must be in 0..2^24");
  if (c.head_dim == 0 && c.n_embd % c.n_head != 0)
    return bad("n_embd must be a multiple of n_head (or give head_dim)");
  if (c.head_dim % 2 != 0) return bad("head_dim must be even");
  if (c.n_head % c.n_head_kv != 0) return bad("n_head must be a multiple of n_head_kv");
  if (qwen && c.n_expert == 0) return bad("qwen3moe needs experts (n_expert > 0)");
  if (c.n_expert > 512) return bad("n_expert must be at most 512 (llama.cpp's LLAMA_MAX_EXPERTS)");
  if (c.n_expert > 0 && (c.n_expert_used < 1 || c.n_expert_used > c.n_expert))
    return bad("n_expert_used must be in 1..n_expert");
  if (c.n_expert == 0 && (c.n_expert_used != 0 || c.n_ff_exp != 0))
    return bad("n_expert_used and n_ff_exp need experts (n_expert > 0)");
  if (!(c.rms_eps > 0)) return bad("rms_eps must be positive");
  if (!(c.rope_base > 0)) return bad("rope_base must be positive");
  if (!is_quantize_target(c.type))
    return bad("unsupported type " + std::string(dtype_name(c.type)));
  return true;
}

bool synth_apply_dims(SynthConfig* c, std::string_view spec, std::string* why) {
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
    int64_t* field = k == "n_embd"          ? &c->n_embd
                     : k == "n_layer"       ? &c->n_layer
                     : k == "n_head"        ? &c->n_head
                     : k == "n_head_kv"     ? &c->n_head_kv
                     : k == "n_ff"          ? &c->n_ff
                     : k == "n_ctx"         ? &c->n_ctx
                     : k == "head_dim"      ? &c->head_dim
                     : k == "n_expert"      ? &c->n_expert
                     : k == "n_expert_used" ? &c->n_expert_used
                     : k == "n_ff_exp"      ? &c->n_ff_exp
                                            : nullptr;
    bool ok;
    if (field)
      ok = parse_int(v, field);
    else if (k == "rms_eps")
      ok = parse_real(v, &c->rms_eps);
    else if (k == "rope_base")
      ok = parse_real(v, &c->rope_base);
    else {
      *why = "unknown dimension '" + std::string(k) +
             "' (n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx, head_dim, n_expert, "
             "n_expert_used, n_ff_exp, rms_eps, rope_base)";
      return false;
    }
    if (!ok) {
      *why = "bad value '" + std::string(v) + "' for " + std::string(k);
      return false;
    }
  }
  return synth_check(*c, why);
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
  const int64_t head_dim = c.head_dim > 0 ? c.head_dim : c.n_embd / c.n_head;
  const int64_t q_dim = head_dim * c.n_head, n_embd_kv = head_dim * c.n_head_kv;
  const bool qwen = c.arch == "qwen3moe", moe = c.n_expert > 0;
  const int64_t n_ff_exp = c.n_ff_exp > 0 ? c.n_ff_exp : c.n_ff;
  auto key = [&c](const char* k) { return c.arch + "." + k; };

  Writer w;
  w.add_str("general.architecture", c.arch);
  w.add_str("general.name", "cke-synth " + (c.preset.empty() ? std::string("custom") : c.preset));
  w.add_u32(key("vocab_size"), static_cast<uint32_t>(n_vocab));
  w.add_u32(key("context_length"), static_cast<uint32_t>(c.n_ctx));
  w.add_u32(key("embedding_length"), static_cast<uint32_t>(c.n_embd));
  w.add_u32(key("block_count"), static_cast<uint32_t>(c.n_layer));
  // llama reads its expert width from feed_forward_length; qwen3moe has its own key.
  w.add_u32(key("feed_forward_length"), static_cast<uint32_t>(moe && !qwen ? n_ff_exp : c.n_ff));
  w.add_u32(key("rope.dimension_count"), static_cast<uint32_t>(head_dim));
  w.add_u32(key("attention.head_count"), static_cast<uint32_t>(c.n_head));
  w.add_u32(key("attention.head_count_kv"), static_cast<uint32_t>(c.n_head_kv));
  if (head_dim * c.n_head != c.n_embd) {
    w.add_u32(key("attention.key_length"), static_cast<uint32_t>(head_dim));
    w.add_u32(key("attention.value_length"), static_cast<uint32_t>(head_dim));
  }
  w.add_f32(key("attention.layer_norm_rms_epsilon"), static_cast<float>(c.rms_eps));
  w.add_f32(key("rope.freq_base"), static_cast<float>(c.rope_base));
  if (moe) {
    w.add_u32(key("expert_count"), static_cast<uint32_t>(c.n_expert));
    w.add_u32(key("expert_used_count"), static_cast<uint32_t>(c.n_expert_used));
    if (qwen) w.add_u32(key("expert_feed_forward_length"), static_cast<uint32_t>(n_ff_exp));
  }
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
  auto norm = [&](std::string name, int64_t n) {
    const Stream s(c.seed, stream++);
    w.add_tensor_fill(std::move(name), DType::F32, {n}, [s, n](std::span<uint8_t> dst, GgufError*) {
      std::vector<float> v(static_cast<size_t>(n));
      fill_normal(s, 0, v.size(), 0.1, 1.0, v.data());
      std::memcpy(dst.data(), v.data(), dst.size());
      return true;
    });
  };
  matrix("token_embd.weight", c.n_embd, n_vocab);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    norm(b + "attn_norm.weight", c.n_embd);
    matrix(b + "attn_q.weight", c.n_embd, q_dim);
    matrix(b + "attn_k.weight", c.n_embd, n_embd_kv);
    matrix(b + "attn_v.weight", c.n_embd, n_embd_kv);
    if (qwen) {
      norm(b + "attn_q_norm.weight", head_dim);
      norm(b + "attn_k_norm.weight", head_dim);
    }
    matrix(b + "attn_output.weight", q_dim, c.n_embd);
    norm(b + "ffn_norm.weight", c.n_embd);
    if (moe) {
      matrix(b + "ffn_gate_inp.weight", c.n_embd, c.n_expert, 1, true);
      matrix(b + "ffn_gate_exps.weight", c.n_embd, n_ff_exp, c.n_expert);
      matrix(b + "ffn_up_exps.weight", c.n_embd, n_ff_exp, c.n_expert);
      matrix(b + "ffn_down_exps.weight", n_ff_exp, c.n_embd, c.n_expert);
    } else {
      matrix(b + "ffn_gate.weight", c.n_embd, c.n_ff);
      matrix(b + "ffn_up.weight", c.n_embd, c.n_ff);
      matrix(b + "ffn_down.weight", c.n_ff, c.n_embd);
    }
  }
  norm("output_norm.weight", c.n_embd);
  matrix("output.weight", c.n_embd, n_vocab);
  return w.write(out, err);
}

}  // namespace cke::gguf
