// Tokenizer::create: from VocabData to the lookup tables, applying llama.cpp's defaults and
// fix-ups (llama_vocab::impl::load) in the same order, because later steps read what
// earlier ones set (e.g. the EOG scan marks tokens as control, which decides whether they
// are special tokens in the text).
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "runtime/tokenizer/tokenizer_impl.h"
#include "runtime/tokenizer/unicode.h"

namespace cke {

namespace {

uint32_t attr_from_type(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::Unknown:
      return kAttrUnknown;
    case TokenType::Unused:
      return kAttrUnused;
    case TokenType::Normal:
      return kAttrNormal;
    case TokenType::Control:
      return kAttrControl;
    case TokenType::UserDefined:
      return kAttrUserDefined;
    case TokenType::Byte:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

bool fail(std::string* err, std::string msg) {
  if (err) *err = std::move(msg);
  return false;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (s.find(from) == std::string::npos) return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  out.append(s, pos);
  s.swap(out);
}

// llama.cpp's llama_decode_text: GPT-2 alphabet back to bytes; code points outside the
// alphabet are kept visible as "[UNK_BYTE_0x<utf8 hex><whole token text>]".
std::string decode_gpt2_text(const std::string& text) {
  // '!' .. '~' are their own code points in the alphabet (most of a vocabulary's texts).
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '!' && c <= '~'; }))
    return text;
  std::string out;
  for (const uint32_t cpt : tok::utf8_to_cpts(text)) {
    if (const auto b = tok::gpt2_to_byte(cpt)) {
      out.push_back(static_cast<char>(*b));
      continue;
    }
    std::string utf8;
    tok::append_utf8(utf8, cpt);
    out += "[UNK_BYTE_0x";
    static constexpr char kHex[] = "0123456789abcdef";
    for (const char c : utf8) {
      out += kHex[static_cast<uint8_t>(c) >> 4];
      out += kHex[static_cast<uint8_t>(c) & 15];
    }
    out += text + "]";
  }
  return out;
}

// The byte of a byte token "<0xXX>" (strtol of the two hex digits, as llama.cpp).
char byte_token_value(const std::string& text) {
  if (text.size() < 5) return 0;
  const std::string hex = text.substr(3, 2);
  return static_cast<char>(std::strtol(hex.c_str(), nullptr, 16));
}

// Texts of end-of-generation tokens (llama.cpp's list).
constexpr const char* kEogTexts[] = {"<|eot_id|>",
                                     "<|im_end|>",
                                     "<|end|>",
                                     "<|return|>",
                                     "<|call|>",
                                     "<|flush|>",
                                     "<|calls|>",
                                     "<end_of_turn>",
                                     "<|endoftext|>",
                                     "</s>",
                                     "<|eom_id|>",
                                     "<EOT>",
                                     "_<EOT>",
                                     "[EOT]",
                                     "[EOS]",
                                     "<|end_of_text|>",
                                     "<end_of_utterance>",
                                     "<eos>",
                                     "<turn|>",
                                     "<|tool_response>",
                                     "<\xEF\xBD\x9C"
                                     "end\xE2\x96\x81"
                                     "of\xE2\x96\x81"
                                     "sentence\xEF\xBD\x9C>",
                                     "[e~["};

}  // namespace

// Made on demand (token_to_piece copies it out anyway): a table of every token's piece
// cost a 262k vocabulary 20-30 ms of its load.
std::string Tokenizer::Impl::piece(int32_t id) const {
  const uint32_t a = attr[id];
  const std::string& t = text[id];
  if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
  if (a & kAttrNormal) {
    if (type == VocabType::SPM || escape_whitespaces) {
      std::string s = t;
      replace_all(s, "\xE2\x96\x81", " ");
      return s;
    }
    return decode_gpt2_text(t);
  }
  if (a & kAttrByte) return std::string(1, byte_token_value(t));
  return {};  // unused / undefined tokens have no text
}

std::optional<Tokenizer> Tokenizer::create(VocabData v, std::string* err) {
  auto impl = std::make_shared<Impl>();
  Impl& k = *impl;
  k.model = v.model;

  // Vocab type and its defaults.
  std::optional<tok::PreConfig> pre;
  if (v.model == "llama") {
    k.type = VocabType::SPM;
    k.bos = 1, k.eos = 2, k.unk = 0;
    k.add_space_prefix = true;
    k.add_bos = true;
    k.escape_whitespaces = true;
    k.pre = "default";
  } else if (v.model == "gpt2" || v.model == "gemma4") {
    k.type = VocabType::BPE;
    if (v.model == "gpt2") {
      k.bos = 11, k.eos = 11;  // llama.cpp's (odd) defaults, disabled if out of range
    }
    pre = tok::bpe_pre_config(v.model == "gemma4" ? "gemma4" : v.pre, err);
    if (!pre) return std::nullopt;
    k.pre = pre->name;
    k.clean_spaces = pre->clean_spaces;
    k.ignore_merges = pre->ignore_merges;
    k.add_bos = pre->add_bos;
    k.add_sep = pre->add_sep;
    k.escape_whitespaces = pre->escape_whitespaces;
    k.byte_encode = pre->byte_encode;
    k.newline_words = pre->newline_words;
    if (pre->no_bos) k.bos = kNoToken;
    auto splitter = tok::RegexSplitter::create(pre->regexes, err);
    if (!splitter) return std::nullopt;
    k.splitter = std::move(splitter);
  } else if (v.model == "bert" || v.model == "t5" || v.model == "rwkv" || v.model == "plamo2" ||
             v.model == "no_vocab" || v.model == "none" || v.model == "hybriddna" ||
             v.model == "whitespace") {
    fail(err, "unsupported tokenizer model '" + v.model + "'");
    return std::nullopt;
  } else {
    fail(err, "unknown tokenizer model '" + v.model + "'");
    return std::nullopt;
  }
  if (v.add_space_prefix) k.add_space_prefix = *v.add_space_prefix;

  // Tokens, scores, types.
  const size_t n = v.tokens.size();
  if (n == 0) return fail(err, "vocab has no tokens"), std::nullopt;
  if (n > static_cast<size_t>(INT32_MAX)) return fail(err, "vocab too large"), std::nullopt;
  if (!v.scores.empty() && v.scores.size() < n) {
    fail(err, "scores has " + std::to_string(v.scores.size()) + " entries for " +
                  std::to_string(n) + " tokens");
    return std::nullopt;
  }
  if (!v.types.empty() && v.types.size() < n) {
    fail(err, "token_type has " + std::to_string(v.types.size()) + " entries for " +
                  std::to_string(n) + " tokens");
    return std::nullopt;
  }
  k.text = std::move(v.tokens);
  k.score.assign(n, 0.0f);
  k.attr.assign(n, kAttrNormal);
  for (size_t i = 0; i < n; ++i) {
    if (k.text[i].empty()) k.text[i] = "[EMPTY_" + std::to_string(i) + "]";
    if (!v.scores.empty()) k.score[i] = v.scores[i];
    if (!v.types.empty()) k.attr[i] = attr_from_type(v.types[i]);
  }
  // The texts stay as they are from here on (the index points at them).
  if (const int32_t dup = k.token_index.add_all(n, [](size_t) { return true; }); dup != kNoToken) {
    fail(err, "duplicate token in vocabulary: '" + k.text[dup] + "' has ids " +
                  std::to_string(k.find(k.text[dup])) + " and " + std::to_string(dup));
    return std::nullopt;
  }

  // Merges: rank = index; a later duplicate keeps the first rank. A line is split at its
  // first space after the first byte, so the line itself is the "left right" key. (A line
  // without one is llama.cpp's key " ", which no lookup asks for: a symbol is never empty.)
  if (k.type == VocabType::BPE) {
    k.merges = std::move(v.merges);
    k.merge_index.add_all(k.merges.size(),
                          [&](size_t i) { return k.merges[i].find(' ', 1) != std::string::npos; });
  }

  // Newline token (before the special-token scan, as in llama.cpp).
  if (k.type == VocabType::SPM) {
    k.nl = k.spm_byte_to_token('\n');
  } else {
    std::vector<int32_t> ids;
    k.bpe_tokenize("\n", ids);
    k.nl = ids.empty() ? kNoToken : ids[0];
  }

  // Special ids: defaults out of range are disabled; metadata in range overrides.
  auto set_id = [&](int32_t& id, int32_t meta) {
    if (id >= 0 && id >= k.n()) id = kNoToken;
    if (meta >= 0 && meta < k.n()) id = meta;
  };
  set_id(k.bos, v.bos);
  set_id(k.eos, v.eos);
  set_id(k.eot, v.eot);
  set_id(k.eom, v.eom);
  set_id(k.unk, v.unk);
  set_id(k.sep, v.sep);
  set_id(k.pad, v.pad);
  set_id(k.mask, v.mask);
  set_id(k.fim_pre, v.fim_pre);
  set_id(k.fim_suf, v.fim_suf);
  set_id(k.fim_mid, v.fim_mid);
  set_id(k.fim_pad, v.fim_pad);
  set_id(k.fim_rep, v.fim_rep);
  set_id(k.fim_sep, v.fim_sep);
  if (k.nl == kNoToken) k.nl = k.pad;

  if (v.add_bos) k.add_bos = *v.add_bos;
  if (v.add_eos) k.add_eos = *v.add_eos;
  if (v.add_sep) k.add_sep = *v.add_sep;
  if (k.pre == "gemma4") k.add_bos = true;  // llama.cpp forces it for Gemma 4
  if (k.add_bos && k.bos == kNoToken) {
    return fail(err, "add_bos_token is true, but bos_token_id is not set"), std::nullopt;
  }
  if (k.add_eos && k.eos == kNoToken) {
    return fail(err, "add_eos_token is true, but eos_token_id is not set"), std::nullopt;
  }

  // Special tokens recognised by their text. llama.cpp scans its hash map, so when several
  // candidates exist which one it picks depends on hash order; we take the lowest id. (Texts
  // are unique, so the lowest id of the names found is the first match of a scan by id.)
  auto mark_control = [&](int32_t id) { k.attr[id] |= kAttrControl; };
  auto detect = [&](int32_t& id, std::initializer_list<const char*> names) {
    if (id != kNoToken) return;
    for (const char* name : names) {
      const int32_t i = k.find(name);
      if (i != kNoToken && (id == kNoToken || i < id)) id = i;
    }
    if (id != kNoToken) mark_control(id);
  };
  detect(k.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                 "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                 "<\xEF\xBD\x9C"
                 "end\xE2\x96\x81"
                 "of\xE2\x96\x81"
                 "sentence\xEF\xBD\x9C>",
                 "<end_of_utterance>"});
  detect(k.eom, {"<|eom_id|>"});
  detect(k.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                     "<\xEF\xBD\x9C"
                     "fim\xE2\x96\x81"
                     "begin\xEF\xBD\x9C>",
                     "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"});
  detect(k.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                     "<\xEF\xBD\x9C"
                     "fim\xE2\x96\x81"
                     "hole\xEF\xBD\x9C>",
                     "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"});
  detect(k.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                     "<\xEF\xBD\x9C"
                     "fim\xE2\x96\x81"
                     "end\xEF\xBD\x9C>",
                     "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"});
  detect(k.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  detect(k.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect(k.fim_sep, {"<|file_sep|>"});

  // Control tokens whose text says "unused" are unused.
  for (int32_t i = 0; i < k.n(); ++i) {
    if ((k.attr[i] & kAttrControl) && k.text[i].find("unused") != std::string::npos) {
      k.attr[i] |= kAttrUnused;
    }
  }

  // End-of-generation set.
  std::vector<int32_t> eog;
  for (const int32_t id : {k.fim_pad, k.fim_rep, k.fim_sep}) {
    if (id != kNoToken) eog.push_back(id);
  }
  for (const char* t : kEogTexts) {
    if (const int32_t i = k.find(t); i != kNoToken) {
      eog.push_back(i);
      mark_control(i);
    }
  }
  for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    if (const int32_t i = k.find(t); i != kNoToken) k.attr[i] = kAttrUserDefined;  // gpt-oss
  }
  for (const int32_t id : {k.eos, k.eot, k.eom}) {
    if (id != kNoToken) eog.push_back(id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  auto eog_with_text = [&](std::string_view t) -> int32_t {
    for (const int32_t id : eog) {
      if (k.text[id] == t) return id;
    }
    return kNoToken;
  };
  auto eog_erase = [&](int32_t id) { eog.erase(std::find(eog.begin(), eog.end(), id)); };
  {  // o200k_harmony / solar-open: "<|end|>" is not end of generation there
    const bool has_return = eog_with_text("<|return|>") != kNoToken;
    const bool has_call =
        eog_with_text("<|call|>") != kNoToken || eog_with_text("<|calls|>") != kNoToken;
    const bool has_flush = eog_with_text("<|flush|>") != kNoToken;
    const int32_t end_id = eog_with_text("<|end|>");
    if (end_id != kNoToken && ((has_return && has_call) || (has_call && has_flush))) {
      eog_erase(end_id);
      k.attr[end_id] = kAttrUserDefined;
    }
  }
  {  // gemma4 / paddleocr: "</s>" is not end of generation there
    const int32_t s_id = eog_with_text("</s>");
    if (s_id != kNoToken && eog_with_text("<|tool_response>") != kNoToken) {
      eog_erase(s_id);
      k.attr[s_id] = kAttrNormal;
    }
  }
  k.eog = std::move(eog);

  // Tokens matched in raw text: longest first (std::sort, as llama.cpp, so ties between
  // equal lengths come out in the same order).
  for (int32_t i = 0; i < k.n(); ++i) {
    if (k.attr[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      k.special_tokens.push_back(i);
    }
  }
  std::sort(k.special_tokens.begin(), k.special_tokens.end(),
            [&](int32_t a, int32_t b) { return k.text[a].size() > k.text[b].size(); });

  // Per-model whitespace stripping around special tokens, keyed on names as llama.cpp does.
  std::string lname = v.name;
  for (char& c : lname) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto set_attr = [&](std::string_view t, uint32_t a, bool on) {
    const int32_t id = k.find(t);
    if (id == kNoToken) return;
    k.attr[id] = on ? (k.attr[id] | a) : (k.attr[id] & ~a);
  };
  const bool jina_mask = v.pre == "jina-v2-de" || v.pre == "jina-v2-es" ||
                         v.pre == "jina-v2-code" ||
                         v.arch.find("nomic-bert-moe") != std::string::npos ||
                         v.arch.find("jina-bert-v3") != std::string::npos;
  if (jina_mask) {
    set_attr("<mask>", kAttrLstrip, true);
  } else if (lname.find("phi-3") != std::string::npos || lname.find("phi3") != std::string::npos) {
    for (const int32_t id : k.special_tokens) k.attr[id] |= kAttrRstrip;
    set_attr("</s>", kAttrRstrip, true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRstrip, false);
  } else if (lname.find("modern-bert") != std::string::npos) {
    set_attr("[MASK]", kAttrLstrip, true);
  }

  return Tokenizer(std::move(impl));
}

}  // namespace cke
