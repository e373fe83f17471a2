// Byte-pair encoding of one piece of text, as llama.cpp's llm_tokenizer_bpe_session: split
// the text into words with the pre-tokenizer, then inside each word start from UTF-8
// characters and repeatedly merge the adjacent pair with the lowest merge rank (ties:
// leftmost). A final symbol that is not a token falls back to byte tokens.
#include <queue>

#include "runtime/tokenizer/tokenizer_impl.h"
#include "runtime/tokenizer/unicode.h"

namespace cke {

int32_t Tokenizer::Impl::bpe_rank(std::string_view left, std::string_view right,
                                  std::string& key) const {
  // Merge texts never contain ' ' (byte encoding maps it to U+0120, gemma4 escapes it), and
  // the rank map's keys are "left right"; llama.cpp asserts this instead.
  if (left.find(' ') != std::string_view::npos || right.find(' ') != std::string_view::npos) {
    return -1;
  }
  key.assign(left);
  key += ' ';
  key += right;
  return merge_index.find(key);
}

namespace {

struct Symbol {
  int prev, next;
  size_t start, n;  // byte range in the word; n == 0 once merged away
};

struct Bigram {
  int left, right;
  int rank;
  size_t size;
};

// Lowest rank first; equal ranks: leftmost first.
struct BigramGreater {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
  }
};

}  // namespace

void Tokenizer::Impl::bpe_tokenize(const std::string& text, std::vector<int32_t>& out) const {
  const std::vector<std::string> words = splitter->split(text, byte_encode);
  std::vector<Symbol> sym;
  std::string key;

  for (const std::string& word : words) {
    sym.clear();
    size_t offset = 0;
    if (ignore_merges && find(word) != kNoToken) {
      sym.push_back({-1, -1, 0, word.size()});
      offset = word.size();
    } else if (newline_words && word.find_first_not_of('\n') == std::string::npos &&
               find(word) != kNoToken) {
      sym.push_back({-1, -1, 0, word.size()});  // gemma4: runs of '\n' are tokens
      offset = word.size();
    }
    while (offset < word.size()) {
      const size_t len = std::min(word.size() - offset, tok::utf8_len(word[offset]));
      const int idx = static_cast<int>(sym.size());
      sym.push_back({idx - 1, offset + len == word.size() ? -1 : idx + 1, offset, len});
      offset += len;
    }

    std::priority_queue<Bigram, std::vector<Bigram>, BigramGreater> queue;
    auto try_add = [&](int left, int right) {
      if (left == -1 || right == -1) return;
      const std::string_view l(word.data() + sym[left].start, sym[left].n);
      const std::string_view r(word.data() + sym[right].start, sym[right].n);
      const int rank = bpe_rank(l, r, key);
      if (rank < 0) return;
      queue.push({left, right, rank, l.size() + r.size()});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& l = sym[b.left];
      Symbol& r = sym[b.right];
      // Stale entry: one side merged away or grew. (llama.cpp compares the texts; since
      // symbols only grow and stay contiguous, equal sizes mean equal texts.)
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      l.n += r.n;
      r.n = 0;
      l.next = r.next;
      if (r.next >= 0) sym[r.next].prev = b.left;
      try_add(l.prev, b.left);
      try_add(b.left, l.next);
    }

    for (const Symbol& s : sym) {
      if (s.n == 0) continue;
      const std::string_view str(word.data() + s.start, s.n);
      const int32_t id = find(str);
      if (id != kNoToken) {
        out.push_back(id);
        continue;
      }
      // Byte fallback, byte by byte of the (encoded) symbol text, skipping misses.
      for (const char ch : str) {
        int32_t bid;
        if (byte_encode) {
          bid = find(std::string_view(&ch, 1));
        } else {
          static constexpr char kHex[] = "0123456789ABCDEF";
          const auto b = static_cast<uint8_t>(ch);
          const char buf[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
          bid = find(std::string_view(buf, 6));
        }
        if (bid != kNoToken) out.push_back(bid);
      }
    }
  }
}

}  // namespace cke
