// BPE ("gpt2", "gemma4") tokenizer on small hand-made vocabularies; expected ids worked out
// by hand from the merge rule (lowest rank first, ties leftmost), the pre-tokenizer split
// and llama.cpp's decode rules.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "runtime/tokenizer/tokenizer.h"

namespace cke {
namespace {

using Ids = std::vector<int32_t>;

// GPT-2's bytes_to_unicode, written out independently of the library: printable Latin-1
// bytes stand for themselves, the rest get U+0100, U+0101, ... in byte order.
std::string g(std::string_view bytes) {
  std::string out;
  for (const unsigned char b : bytes) {
    unsigned cp = b;
    if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
      unsigned n = 0;
      for (unsigned x = 0; x < b; ++x) {
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++n;
      }
      cp = 256 + n;
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// Byte tokens first (id = byte), then one token per merge result, then `extra`.
struct Bpe {
  VocabData v;
  std::map<std::string, int32_t> id;
  int32_t operator[](const std::string& text) const { return id.at(text); }
};

Bpe bpe_vocab(const std::string& pre, const std::vector<std::string>& merges,
              const std::vector<std::pair<std::string, int32_t>>& extra = {}) {
  Bpe b;
  b.v.model = "gpt2";
  b.v.pre = pre;
  auto add = [&](const std::string& t, int32_t type) {
    if (b.id.count(t)) return;
    b.id[t] = static_cast<int32_t>(b.v.tokens.size());
    b.v.tokens.push_back(t);
    b.v.types.push_back(type);
  };
  for (int x = 0; x < 256; ++x) add(g(std::string(1, static_cast<char>(x))), 1);
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ');
    add(m.substr(0, sp) + m.substr(sp + 1), 1);
  }
  for (const auto& [t, type] : extra) add(t, type);
  b.v.merges = merges;
  return b;
}

Tokenizer make(VocabData v) {
  std::string err;
  auto t = Tokenizer::create(std::move(v), &err);
  EXPECT_TRUE(t) << err;
  if (!t) std::abort();
  return std::move(*t);
}

const std::string G = g(" ");  // "Ġ"

TEST(Bpe, MergesByRank) {
  const auto b = bpe_vocab("gpt-2", {"h e", "l l", "he ll", "hell o", G + " w", "o r", G + "w or"});
  const auto t = make(b.v);
  // "hello" merges all the way; " world" -> Ġw (rank 4), or (5), Ġwor (6), then l, d.
  EXPECT_EQ(t.encode("hello world", false, false), (Ids{b["hello"], b[G + "wor"], b["l"], b["d"]}));
  EXPECT_EQ(t.decode(t.encode("hello world", false, false)), "hello world");
  EXPECT_EQ(t.token_to_piece(b[G + "wor"]), " wor");
}

TEST(Bpe, LowerRankWinsOverPosition) {
  const auto b1 = bpe_vocab("gpt-2", {"b c", "a b"});
  EXPECT_EQ(make(b1.v).encode("abc", false, false), (Ids{b1["a"], b1["bc"]}));
  const auto b2 = bpe_vocab("gpt-2", {"a b", "b c"});
  EXPECT_EQ(make(b2.v).encode("abc", false, false), (Ids{b2["ab"], b2["c"]}));
  // Equal ranks cannot happen, but the same pair twice: leftmost merges first.
  const auto b3 = bpe_vocab("gpt-2", {"x x"});
  EXPECT_EQ(make(b3.v).encode("xxx", false, false), (Ids{b3["xx"], b3["x"]}));
}

TEST(Bpe, PreTokenizerDecidesWords) {
  // gpt-2 keeps "12345" one word: 3+4 merge. llama3 cuts "123" "45": no merge possible.
  const auto b = bpe_vocab("gpt-2", {"3 4"});
  EXPECT_EQ(make(b.v).encode("12345", false, false), (Ids{'1', '2', b["34"], '5'}));
  auto l3 = bpe_vocab("llama-bpe", {"3 4"});
  l3.v.bos = 0;  // llama3 adds BOS by default, so it needs one
  EXPECT_EQ(make(l3.v).encode("12345", false, false), (Ids{'1', '2', '3', '4', '5'}));
}

TEST(Bpe, IgnoreMergesTakesWholeWords) {
  // "abc" is a token, but no merge builds it: llama3 (ignore_merges) uses it whole.
  auto l3 = bpe_vocab("llama-bpe", {"a b"}, {{"abc", 1}});
  l3.v.bos = 0;
  EXPECT_EQ(make(l3.v).encode("abc", false, false), (Ids{l3["abc"]}));
  const auto gp = bpe_vocab("gpt-2", {"a b"}, {{"abc", 1}});
  EXPECT_EQ(make(gp.v).encode("abc", false, false), (Ids{gp["ab"], gp["c"]}));
}

TEST(Bpe, MissingBytesAreDropped) {
  auto b = bpe_vocab("gpt-2", {});
  b.v.tokens['z'] = "[no z]";  // the vocab has no token for byte 'z'
  const auto t = make(b.v);
  EXPECT_EQ(t.encode("azb", false, false), (Ids{'a', 'b'}));
}

TEST(Bpe, NonAsciiTextIsByteEncoded) {
  const std::string e = "\xC3\xA9";  // é = bytes C3 A9 -> "Ã©" in GPT-2's alphabet
  const auto b = bpe_vocab("gpt-2", {g("\xC3") + " " + g("\xA9")});
  const auto t = make(b.v);
  EXPECT_EQ(t.encode(e, false, false), (Ids{b[g(e)]}));
  EXPECT_EQ(t.token_to_piece(b[g(e)]), e);
  EXPECT_EQ(t.encode("\xFF", false, false), (Ids{0xEF, 0xBF, 0xBD}));  // malformed -> U+FFFD
}

TEST(Bpe, SpecialIdsAndDefaults) {
  auto b = bpe_vocab("gpt-2", {}, {{"<|endoftext|>", 3}});
  const int32_t eot = b["<|endoftext|>"];
  const auto t = make(b.v);
  EXPECT_EQ(t.bos(), 11);  // llama.cpp's default for gpt2 vocabs without the key
  EXPECT_EQ(t.eos(), 11);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.eot(), eot);  // found by its text
  EXPECT_TRUE(t.is_eog(eot));
  EXPECT_EQ(t.nl(), '\n');  // byte token for "\n" ("Ċ")
  EXPECT_EQ(t.encode("a<|endoftext|>", false, true), (Ids{'a', eot}));
  // Without parse_special it is text: "<|" "endoftext" "|>", all bytes (no merges).
  EXPECT_EQ(t.encode("<|endoftext|>", false, false).size(), 13u);
  EXPECT_EQ(t.encode("a", true, false), (Ids{'a'}));  // no BOS by default
}

TEST(Bpe, CleanUpSpacesOnDecode) {
  const auto b = bpe_vocab("gpt-2", {G + " ,", G + " '", G + "' s"});
  const auto t = make(b.v);
  const Ids ids = {'a', b[G + ","], b[G + "'s"]};  // "a" " ," " 's"
  EXPECT_EQ(t.decode(ids), "a,'s");
  auto q = bpe_vocab("qwen2", {G + " ,", G + " '", G + "' s"});
  const auto u = make(q.v);  // qwen2 keeps the spaces
  EXPECT_EQ(u.decode(Ids{'a', q[G + ","], q[G + "'s"]}), "a , 's");
  // " ' " loses both spaces; " 't" keeps its space.
  EXPECT_EQ(t.decode(Ids{'a', ' ', '\'', ' ', 'b'}), "a'b");
  EXPECT_EQ(t.decode(Ids{'a', ' ', '\'', 't'}), "a 't");
  EXPECT_EQ(t.decode(Ids{'x', ' ', '?', ' ', '!'}), "x?!");
}

TEST(Bpe, PieceOfTokenOutsideByteAlphabet) {
  auto b = bpe_vocab("gpt-2", {}, {{"\xE2\x82\xAC", 1}});  // "€" cannot come from bytes
  const auto t = make(b.v);
  EXPECT_EQ(t.token_to_piece(b["\xE2\x82\xAC"]), "[UNK_BYTE_0xe282ac\xE2\x82\xAC]");
}

TEST(Bpe, UnsupportedPreIsAnError) {
  auto b = bpe_vocab("kimi-k2", {});
  std::string err;
  EXPECT_FALSE(Tokenizer::create(b.v, &err));
  EXPECT_NE(err.find("kimi-k2"), std::string::npos) << err;
}

TEST(Bpe, Gemma4StyleNoByteEncoding) {
  // Raw UTF-8 with ' ' -> U+2581, byte fallback through <0xXX>, BOS always added.
  const std::string sp = "\xE2\x96\x81";
  VocabData v;
  v.model = "gemma4";
  v.tokens = {"<pad>", "<eos>", "<bos>"};
  v.types = {3, 3, 3};
  for (int x = 0; x < 256; ++x) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", x);
    v.tokens.push_back(buf);
    v.types.push_back(6);
  }
  const int32_t base = static_cast<int32_t>(v.tokens.size());
  for (const std::string& t :
       std::vector<std::string>{"a", sp, "a" + sp, "b", "a" + sp + "b", "\n\n"}) {
    v.tokens.push_back(t);
    v.types.push_back(1);
  }
  v.merges = {"a " + sp, "a" + sp + " b"};
  std::string err;
  EXPECT_FALSE(Tokenizer::create(v, &err));  // add_bos is forced, and there is no BOS id
  v.bos = 2;
  v.eos = 1;
  const auto t = make(v);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.encode("a b", true, false), (Ids{2, base + 4}));
  EXPECT_EQ(t.decode(Ids{base + 4}), "a b");
  // 'c' is no token: bytes. A run of newlines that is a token stays whole.
  EXPECT_EQ(t.encode("c\n\n", false, false), (Ids{3 + 'c', base + 5}));
  EXPECT_EQ(t.encode("\n", false, false), (Ids{3 + '\n'}));
}

}  // namespace
}  // namespace cke
