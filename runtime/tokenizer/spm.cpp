// SentencePiece-style ("llama") tokenization of one piece of text, as llama.cpp's
// llm_tokenizer_spm_session: start from UTF-8 characters, repeatedly merge the adjacent
// pair whose concatenation is the highest-scoring token (ties: leftmost), then emit each
// final symbol as its token or, if it is none, as byte tokens.
#include <queue>

#include "runtime/tokenizer/tokenizer_impl.h"
#include "runtime/tokenizer/unicode.h"

namespace cke {

int32_t Tokenizer::Impl::spm_byte_to_token(uint8_t b) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char buf[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
  const int32_t id = find(std::string_view(buf, 6));
  if (id != kNoToken) return id;
  const char raw = static_cast<char>(b);
  return find(std::string_view(&raw, 1));
}

namespace {

struct Symbol {
  int prev, next;
  size_t start, n;  // byte range in the text; n == 0 once merged away
};

struct Bigram {
  int left, right;
  float score;
  size_t size;
};

// Highest score first; equal scores: leftmost first.
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

}  // namespace

void Tokenizer::Impl::spm_tokenize(const std::string& text, std::vector<int32_t>& out) const {
  std::vector<Symbol> sym;
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(tok::utf8_len(text[off]), text.size() - off);
    const int idx = static_cast<int>(sym.size());
    sym.push_back({idx - 1, off + len == text.size() ? -1 : idx + 1, off, len});
    off += len;
  }
  if (sym.empty()) return;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const std::string_view s(text.data() + sym[left].start, sym[left].n + sym[right].n);
    const int32_t id = find(s);
    if (id == kNoToken) return;
    queue.push({left, right, score[id], s.size()});
  };
  for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = sym[b.left];
    Symbol& r = sym[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  // Every merged symbol is a token (only token pairs are merged), so only single
  // characters can be missing from the vocab; llama.cpp's rev_merge lookup for those
  // never finds anything and they fall back to bytes.
  for (int i = 0; i != -1; i = sym[i].next) {
    const std::string_view s(text.data() + sym[i].start, sym[i].n);
    const int32_t id = find(s);
    if (id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (const char ch : s) {
      int32_t bid = spm_byte_to_token(static_cast<uint8_t>(ch));
      // llama.cpp throws here (a vocab without byte tokens); we emit UNK if there is one.
      if (bid == kNoToken) bid = unk;
      if (bid != kNoToken) out.push_back(bid);
    }
  }
}

}  // namespace cke
