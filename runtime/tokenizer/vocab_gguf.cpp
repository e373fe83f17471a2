#include "runtime/tokenizer/vocab_gguf.h"

namespace cke {

namespace {

struct Reader {
  const gguf::File& f;
  std::string* err;

  bool fail(std::string_view key, const std::string& why) const {
    if (err) *err = f.path() + ": " + std::string(key) + ": " + why;
    return false;
  }

  // Optional string: absent leaves `out` alone.
  bool str(std::string_view key, std::string& out, bool required) const {
    if (!f.has(key)) return required ? fail(key, "missing") : true;
    gguf::GgufError e;
    const auto s = f.str(key, &e);
    if (!s) return err && (*err = e.message, false);
    out.assign(*s);
    return true;
  }

  bool strings(std::string_view key, std::vector<std::string>& out, bool required) const {
    if (!f.has(key)) return required ? fail(key, "missing") : true;
    gguf::GgufError e;
    const auto* a = f.str_array(key, &e);
    if (!a) return err && (*err = e.message, false);
    out.assign(a->begin(), a->end());
    return true;
  }

  // Numeric array of any integer or real element type, converted to T.
  template <typename T>
  bool numbers(std::string_view key, std::vector<T>& out) const {
    const gguf::Value* v = f.find(key);
    if (!v) return true;
    if (v->type != gguf::ValueType::ARRAY) return fail(key, "expected an array");
    if (!v->reals.empty()) {
      out.assign(v->reals.begin(), v->reals.end());
    } else if (!v->ints.empty()) {
      out.assign(v->ints.begin(), v->ints.end());
    } else if (!v->nums.empty()) {
      out.assign(v->nums.begin(), v->nums.end());
    } else if (v->array_size() != 0) {
      return fail(key, "expected a numeric array");
    }
    return true;
  }

  // Special id: kept only if it is an integer inside [0, n).
  void id(std::string_view key, int32_t& out, size_t n) const {
    if (!f.has(key)) return;
    gguf::GgufError e;
    const auto v = f.u32(key, &e);
    if (v && *v < n) out = static_cast<int32_t>(*v);
  }

  bool flag(std::string_view key, std::optional<bool>& out) const {
    if (!f.has(key)) return true;
    gguf::GgufError e;
    const auto b = f.boolean(key, &e);
    if (!b) return err && (*err = e.message, false);
    out = *b;
    return true;
  }
};

}  // namespace

std::optional<VocabData> vocab_from_gguf(const gguf::File& file, std::string* err) {
  const Reader r{file, err};
  VocabData v;
  if (!r.str("tokenizer.ggml.model", v.model, true)) return std::nullopt;
  if (!r.str("tokenizer.ggml.pre", v.pre, false)) return std::nullopt;
  if (!r.str("general.name", v.name, false)) return std::nullopt;
  if (!r.str("general.architecture", v.arch, false)) return std::nullopt;
  if (!r.strings("tokenizer.ggml.tokens", v.tokens, true)) return std::nullopt;
  if (!r.numbers("tokenizer.ggml.scores", v.scores)) return std::nullopt;
  if (!r.numbers("tokenizer.ggml.token_type", v.types)) return std::nullopt;
  const bool needs_merges = v.model == "gpt2" || v.model == "gemma4";
  if (!r.strings("tokenizer.ggml.merges", v.merges, needs_merges)) return std::nullopt;

  const size_t n = v.tokens.size();
  r.id("tokenizer.ggml.bos_token_id", v.bos, n);
  r.id("tokenizer.ggml.eos_token_id", v.eos, n);
  r.id("tokenizer.ggml.eot_token_id", v.eot, n);
  r.id("tokenizer.ggml.eom_token_id", v.eom, n);
  r.id("tokenizer.ggml.unknown_token_id", v.unk, n);
  r.id("tokenizer.ggml.seperator_token_id", v.sep, n);  // sic: llama.cpp's spelling
  r.id("tokenizer.ggml.padding_token_id", v.pad, n);
  r.id("tokenizer.ggml.mask_token_id", v.mask, n);
  r.id("tokenizer.ggml.fim_pre_token_id", v.fim_pre, n);
  r.id("tokenizer.ggml.fim_suf_token_id", v.fim_suf, n);
  r.id("tokenizer.ggml.fim_mid_token_id", v.fim_mid, n);
  r.id("tokenizer.ggml.fim_pad_token_id", v.fim_pad, n);
  r.id("tokenizer.ggml.fim_rep_token_id", v.fim_rep, n);
  r.id("tokenizer.ggml.fim_sep_token_id", v.fim_sep, n);
  // Deprecated spellings, read after the new ones (so they win), as llama.cpp does.
  r.id("tokenizer.ggml.prefix_token_id", v.fim_pre, n);
  r.id("tokenizer.ggml.suffix_token_id", v.fim_suf, n);
  r.id("tokenizer.ggml.middle_token_id", v.fim_mid, n);

  if (!r.flag("tokenizer.ggml.add_bos_token", v.add_bos) ||
      !r.flag("tokenizer.ggml.add_eos_token", v.add_eos) ||
      !r.flag("tokenizer.ggml.add_sep_token", v.add_sep) ||
      !r.flag("tokenizer.ggml.add_space_prefix", v.add_space_prefix)) {
    return std::nullopt;
  }
  return v;
}

}  // namespace cke
