// Tokenizer: encode (special-token partition, then SPM/BPE per text fragment), pieces,
// decode, and accessors. Construction is in tokenizer_create.cpp.
#include "runtime/tokenizer/tokenizer.h"

#include <algorithm>

#include "runtime/tokenizer/tokenizer_impl.h"

namespace cke {

namespace {

// A piece of the input: either a token found by the special-token partition, or a range
// of raw text still to be tokenized.
struct Fragment {
  int32_t token;  // kNoToken for raw text
  size_t off, len;
};

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// llama.cpp's tokenizer_st_partition: for each special token, longest text first, split
// every raw fragment at each occurrence (leftmost, non-overlapping). Control and unknown
// tokens take part only with parse_special; user-defined tokens always do. LSTRIP/RSTRIP
// tokens eat the ASCII whitespace before/after them.
std::vector<Fragment> partition(const Tokenizer::Impl& v, std::string_view text,
                                bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({kNoToken, 0, text.size()});
  std::vector<Fragment> next;
  for (const int32_t id : v.special_tokens) {
    const uint32_t a = v.attr[id];
    if (!parse_special && (a & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view tok = v.text[id];
    next.clear();
    bool changed = false;
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      const std::string_view piece = text.substr(f.off, f.len);
      size_t pos = 0;
      while (pos < piece.size()) {
        const size_t hit = piece.find(tok, pos);
        if (hit == std::string_view::npos) break;
        changed = true;
        size_t left_len = hit - pos;
        if (a & kAttrLstrip) {
          while (left_len > 0 && ascii_space(piece[pos + left_len - 1])) --left_len;
        }
        if (left_len > 0) next.push_back({kNoToken, f.off + pos, left_len});
        next.push_back({id, 0, 0});
        pos = hit + tok.size();
        if (a & kAttrRstrip) {
          while (pos < piece.size() && ascii_space(piece[pos])) ++pos;
        }
      }
      if (pos < piece.size()) next.push_back({kNoToken, f.off + pos, piece.size() - pos});
    }
    if (changed) frags.swap(next);
  }
  return frags;
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Impl& v = *impl_;
  std::vector<int32_t> out;
  const std::vector<Fragment> frags = partition(v, text, parse_special);

  if (add_special && v.add_bos && v.bos != kNoToken) out.push_back(v.bos);
  if (v.type == VocabType::SPM) {
    bool prev_special = true;  // the text start counts as "after a special token"
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (v.add_space_prefix && prev_special) buf = ' ';
      buf.append(text.substr(f.off, f.len));
      std::string escaped;
      escaped.reserve(buf.size() + 16);
      for (const char c : buf) {
        if (c == ' ') {
          escaped += "\xE2\x96\x81";  // U+2581
        } else {
          escaped += c;
        }
      }
      v.spm_tokenize(escaped, out);
      prev_special = false;
    }
  } else {
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        continue;
      }
      buf.clear();
      const std::string_view s = text.substr(f.off, f.len);
      if (v.escape_whitespaces) {
        for (const char c : s) {
          if (c == ' ') {
            buf += "\xE2\x96\x81";
          } else {
            buf += c;
          }
        }
      } else {
        buf.assign(s);
      }
      v.bpe_tokenize(buf, out);
    }
  }
  if (add_special && v.add_eos && v.eos != kNoToken) out.push_back(v.eos);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  const Impl& v = *impl_;
  if (!v.valid(id)) return {};
  if (!special && (v.attr[id] & (kAttrUnknown | kAttrControl))) return {};
  return v.piece(id);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool remove_special,
                              bool unparse_special) const {
  const Impl& v = *impl_;
  bool remove_space = v.add_space_prefix;
  if (remove_special && v.add_bos && !ids.empty() && ids.front() == v.bos) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && v.add_eos && !ids.empty() && ids.back() == v.eos) {
    ids = ids.first(ids.size() - 1);
  }
  std::string text;
  for (const int32_t id : ids) {
    std::string piece = token_to_piece(id, unparse_special);
    // The first token loses one leading space (the one SPM's add_space_prefix put there).
    if (remove_space && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    remove_space = false;
    text += piece;
  }
  if (!v.clean_spaces) return text;

  // clean_up_tokenization_spaces, three in-place passes exactly as llama.cpp's detokenize
  // (including its quirks: pass 2 blanks the space after " ' " and later reads it back).
  auto n = static_cast<int64_t>(text.size());
  {  // " ?", " !", " .", " ,": drop the space
    const int64_t n1 = n;
    n = n ? 1 : 0;
    for (int64_t i = 1; i < n1; ++i) {
      const char x = text[i];
      if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --n;
      text[n++] = x;
    }
  }
  {  // " ' ": drop both spaces around a lone apostrophe
    const int64_t n2 = n;
    n = n ? 1 : 0;
    for (int64_t i = 1; i < n2; ++i) {
      const char x = text[i];
      if (x == '\'' && i + 1 < n2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
        --n;
        text[++i] = '\0';
      }
      text[n++] = x;
    }
  }
  {  // " 's", " 'm", " 're", " 've": drop the space
    const int64_t n3 = n;
    n = n ? 1 : 0;
    for (int64_t i = 1; i < n3; ++i) {
      const char x = text[i];
      if (text[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
        const char x1 = text[i + 1];
        if (x1 == 's' || x1 == 'm') {
          --n;
        } else if (i + 2 < n3) {
          const char x2 = text[i + 2];
          if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --n;
        }
      }
      text[n++] = x;
    }
  }
  text.resize(static_cast<size_t>(n));
  return text;
}

int32_t Tokenizer::n_vocab() const {
  return impl_->n();
}
VocabType Tokenizer::type() const {
  return impl_->type;
}
const std::string& Tokenizer::model() const {
  return impl_->model;
}
const std::string& Tokenizer::pre() const {
  return impl_->pre;
}
int32_t Tokenizer::bos() const {
  return impl_->bos;
}
int32_t Tokenizer::eos() const {
  return impl_->eos;
}
int32_t Tokenizer::eot() const {
  return impl_->eot;
}
int32_t Tokenizer::eom() const {
  return impl_->eom;
}
int32_t Tokenizer::unk() const {
  return impl_->unk;
}
int32_t Tokenizer::sep() const {
  return impl_->sep;
}
int32_t Tokenizer::pad() const {
  return impl_->pad;
}
int32_t Tokenizer::nl() const {
  return impl_->nl;
}
int32_t Tokenizer::fim_pre() const {
  return impl_->fim_pre;
}
int32_t Tokenizer::fim_suf() const {
  return impl_->fim_suf;
}
int32_t Tokenizer::fim_mid() const {
  return impl_->fim_mid;
}
int32_t Tokenizer::fim_pad() const {
  return impl_->fim_pad;
}
int32_t Tokenizer::fim_rep() const {
  return impl_->fim_rep;
}
int32_t Tokenizer::fim_sep() const {
  return impl_->fim_sep;
}
bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(impl_->eog.begin(), impl_->eog.end(), id);
}
const std::vector<int32_t>& Tokenizer::eog_ids() const {
  return impl_->eog;
}
bool Tokenizer::add_bos() const {
  return impl_->add_bos;
}
bool Tokenizer::add_eos() const {
  return impl_->add_eos;
}
bool Tokenizer::add_space_prefix() const {
  return impl_->add_space_prefix;
}

std::string_view Tokenizer::token_text(int32_t id) const {
  return impl_->valid(id) ? std::string_view(impl_->text[id]) : std::string_view();
}
float Tokenizer::token_score(int32_t id) const {
  return impl_->valid(id) ? impl_->score[id] : 0.0f;
}
uint32_t Tokenizer::token_attr(int32_t id) const {
  return impl_->valid(id) ? impl_->attr[id] : kAttrUndefined;
}
bool Tokenizer::is_control(int32_t id) const {
  return token_attr(id) & kAttrControl;
}
bool Tokenizer::is_byte(int32_t id) const {
  return token_attr(id) & kAttrByte;
}
std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = impl_->find(text);
  if (id == kNoToken) return std::nullopt;
  return id;
}

}  // namespace cke
