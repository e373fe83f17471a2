// SPM ("llama") tokenizer on small hand-made vocabularies; expected ids worked out by hand
// from the merge rule (highest score first, ties leftmost) and llama.cpp's special-token,
// BOS/EOS and detokenizer rules.
#include <gtest/gtest.h>

#include <cstdio>

#include "runtime/tokenizer/tokenizer.h"

namespace cke {
namespace {

using Ids = std::vector<int32_t>;
constexpr const char* kSp = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// <unk> <s> </s>, the 256 byte tokens (id 3 + byte), then `pieces` (id 259 + index).
VocabData spm_vocab(const std::vector<std::pair<std::string, float>>& pieces) {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {2, 3, 3};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.tokens.push_back(buf);
    v.types.push_back(6);
    v.scores.push_back(0);
  }
  for (const auto& [text, score] : pieces) {
    v.tokens.push_back(text);
    v.types.push_back(1);
    v.scores.push_back(score);
  }
  return v;
}

constexpr int32_t P(int i) {
  return 259 + i;
}  // i-th piece
constexpr int32_t B(unsigned char b) {
  return 3 + b;
}  // byte token

Tokenizer make(VocabData v) {
  std::string err;
  auto t = Tokenizer::create(std::move(v), &err);
  EXPECT_TRUE(t) << err;
  if (!t) std::abort();
  return std::move(*t);
}

std::string sp(std::string s) {
  return std::string(kSp) + s;
}

TEST(Spm, MergesHighestScoreFirst) {
  // "abc" -> "▁abc": pairs ▁a(-3) ab(-4) bc(-2); bc wins, then a+bc = abc(-1.5) wins, and
  // "▁abc" is no token. Greedy left-to-right merging would give ▁a + bc instead.
  const auto t = make(spm_vocab({{kSp, -1},
                                 {"a", -1},
                                 {"b", -1},
                                 {"c", -1},
                                 {sp("a"), -3},
                                 {"ab", -4},
                                 {"bc", -2},
                                 {"abc", -1.5f}}));
  EXPECT_EQ(t.encode("abc", false, false), (Ids{P(0), P(7)}));
  EXPECT_EQ(t.decode(Ids{P(0), P(7)}), "abc");
}

TEST(Spm, EqualScoresMergeLeftmostFirst) {
  // "▁xxx": both x+x pairs score -1; the left one merges, leaving xx + x.
  const auto t = make(spm_vocab({{kSp, 0}, {"x", 0}, {"xx", -1}}));
  EXPECT_EQ(t.encode("xxx", false, false), (Ids{P(0), P(2), P(1)}));
}

TEST(Spm, ByteFallback) {
  const auto t = make(spm_vocab({{kSp, 0}, {"a", 0}}));
  EXPECT_EQ(t.encode("a\xC3\xA9", false, false), (Ids{P(0), P(1), B(0xC3), B(0xA9)}));
  EXPECT_EQ(t.decode(Ids{P(0), P(1), B(0xC3), B(0xA9)}), "a\xC3\xA9");
  EXPECT_EQ(t.encode("\n", false, false), (Ids{P(0), B('\n')}));
  EXPECT_EQ(t.nl(), B('\n'));
}

TEST(Spm, SpacesAndPrefix) {
  const auto t = make(spm_vocab({{kSp, 0}, {"a", 0}, {"b", 0}, {sp("a"), 1}, {sp("b"), 1}}));
  // " " becomes ▁ and a ▁ is put in front: "▁a▁▁b" -> ▁a ▁ ▁b.
  EXPECT_EQ(t.encode("a  b", false, false), (Ids{P(3), P(0), P(4)}));
  EXPECT_EQ(t.decode(Ids{P(3), P(0), P(4)}), "a  b");
  // Only the first token's leading space is dropped on decode.
  EXPECT_EQ(t.decode(Ids{P(0), P(3)}), " a");

  VocabData no_prefix = spm_vocab({{kSp, 0}, {"a", 0}, {sp("a"), 1}});
  no_prefix.add_space_prefix = false;
  const auto u = make(std::move(no_prefix));
  EXPECT_EQ(u.encode("a", false, false), (Ids{P(1)}));
  EXPECT_EQ(u.decode(Ids{P(2)}), " a");  // nothing to strip either
}

TEST(Spm, BosEosAndEmptyText) {
  VocabData v = spm_vocab({{kSp, 0}, {"a", 0}, {sp("a"), 1}});
  const auto t = make(v);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_eos());
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_EQ(t.unk(), 0);
  EXPECT_EQ(t.encode("a", true, false), (Ids{1, P(2)}));
  EXPECT_EQ(t.encode("", true, false), (Ids{1}));
  EXPECT_EQ(t.encode("", false, false), (Ids{}));
  v.add_eos = true;
  v.add_bos = false;
  const auto u = make(std::move(v));
  EXPECT_EQ(u.encode("a", true, false), (Ids{P(2), 2}));
  // remove_special drops the trailing EOS; without it EOS is a control token -> "".
  EXPECT_EQ(u.decode(Ids{P(2), 2}, true), "a");
  EXPECT_EQ(u.decode(Ids{P(2), 2}, false, true), "a</s>");
}

TEST(Spm, MetadataIdsOverrideDefaults) {
  VocabData v = spm_vocab({{kSp, 0}});
  v.bos = 2;
  v.eos = 1;
  v.unk = 100000;  // out of range: the default (0) stays
  const auto t = make(std::move(v));
  EXPECT_EQ(t.bos(), 2);
  EXPECT_EQ(t.eos(), 1);
  EXPECT_EQ(t.unk(), 0);
  EXPECT_TRUE(t.is_eog(1));
  EXPECT_TRUE(t.is_eog(2));  // "</s>" is in llama.cpp's EOG text list
}

TEST(Spm, SpecialTokensInText) {
  auto v = spm_vocab({{kSp, 0}, {"x", 0}, {sp("x"), 1}});
  v.tokens.push_back("<tool>");  // user-defined: always matched
  v.types.push_back(4);
  v.scores.push_back(0);
  const int32_t tool = static_cast<int32_t>(v.tokens.size()) - 1;
  const auto t = make(std::move(v));
  // Control token "<s>" only with parse_special; after a special token the text gets the
  // space prefix again.
  EXPECT_EQ(t.encode("<s>x", false, true), (Ids{1, P(2)}));
  EXPECT_EQ(t.encode("<s>x", false, false), (Ids{P(0), B('<'), B('s'), B('>'), P(1)}));
  EXPECT_EQ(t.encode("x<tool>x", false, false), (Ids{P(2), tool, P(2)}));
  EXPECT_EQ(t.encode("<tool><tool>", false, false), (Ids{tool, tool}));
  // Pieces: control tokens are hidden unless special; user-defined ones are text.
  EXPECT_EQ(t.token_to_piece(1), "");
  EXPECT_EQ(t.token_to_piece(1, true), "<s>");
  EXPECT_EQ(t.token_to_piece(tool), "<tool>");
  EXPECT_EQ(t.token_to_piece(B('A')), "A");
  EXPECT_EQ(t.token_to_piece(P(2)), " x");
  EXPECT_EQ(t.token_to_piece(-1), "");
  EXPECT_EQ(t.token_to_piece(t.n_vocab()), "");
  EXPECT_EQ(t.decode(Ids{1, P(2)}), " x");  // BOS took the leading-space removal
}

TEST(Spm, LongestSpecialTokenFirst) {
  auto v = spm_vocab({{kSp, 0}});
  for (const char* s : {"<a>", "<a><b>"}) {
    v.tokens.push_back(s);
    v.types.push_back(4);
    v.scores.push_back(0);
  }
  const int32_t a = static_cast<int32_t>(v.tokens.size()) - 2;
  const auto t = make(std::move(v));
  EXPECT_EQ(t.encode("<a><b><a>", false, false), (Ids{a + 1, a}));
}

TEST(Spm, Phi3StripsWhitespaceAfterSpecialTokens) {
  auto v = spm_vocab({{kSp, 0}, {"h", 0}, {"i", 0}, {sp("hi"), 1}, {"hi", 1}});
  v.tokens.push_back("<|user|>");
  v.types.push_back(4);
  v.scores.push_back(0);
  const int32_t user = static_cast<int32_t>(v.tokens.size()) - 1;
  auto phi = v;
  phi.name = "Phi3";
  const auto plain = make(std::move(v));
  const auto p3 = make(std::move(phi));
  // Plain: "\nhi" after the token becomes "▁\nhi" -> ▁ <0x0A> hi.
  EXPECT_EQ(plain.encode("<|user|>\nhi", false, false), (Ids{user, P(0), B('\n'), P(4)}));
  // phi-3 (RSTRIP on special tokens): the newline is eaten.
  EXPECT_EQ(p3.encode("<|user|>\nhi", false, false), (Ids{user, P(3)}));
}

TEST(Spm, CreateErrors) {
  std::string err;
  auto dup = spm_vocab({{"a", 0}, {"a", 0}});
  EXPECT_FALSE(Tokenizer::create(dup, &err));
  EXPECT_NE(err.find("duplicate"), std::string::npos) << err;

  auto short_scores = spm_vocab({{"a", 0}});
  short_scores.scores.resize(10);
  EXPECT_FALSE(Tokenizer::create(short_scores, &err));
  EXPECT_NE(err.find("scores"), std::string::npos) << err;

  auto bert = spm_vocab({});
  bert.model = "bert";
  EXPECT_FALSE(Tokenizer::create(bert, &err));
  EXPECT_NE(err.find("unsupported"), std::string::npos) << err;

  auto unknown = spm_vocab({});
  unknown.model = "foo";
  EXPECT_FALSE(Tokenizer::create(unknown, &err));
  EXPECT_NE(err.find("unknown"), std::string::npos) << err;

  VocabData empty;
  empty.model = "llama";
  EXPECT_FALSE(Tokenizer::create(empty, &err));

  // add_bos with no BOS token at all (the default id 1 is out of range here).
  VocabData tiny;
  tiny.model = "llama";
  tiny.tokens = {"a"};
  EXPECT_FALSE(Tokenizer::create(tiny, &err));
  EXPECT_NE(err.find("bos"), std::string::npos) << err;
  tiny.add_bos = false;
  EXPECT_TRUE(Tokenizer::create(tiny, &err)) << err;
}

TEST(Spm, DuplicateTokenTextIsAnError) {
  std::string err;
  EXPECT_FALSE(Tokenizer::create(spm_vocab({{"ab", 0}, {"cd", 0}, {"ab", 0}}), &err));
  EXPECT_EQ(err, "duplicate token in vocabulary: 'ab' has ids 259 and 261");
}

TEST(Spm, EmptyTokenTextIsRenamed) {
  auto v = spm_vocab({{"", 0}});
  const auto t = make(std::move(v));
  EXPECT_EQ(t.token_text(P(0)), "[EMPTY_259]");
}

}  // namespace
}  // namespace cke
