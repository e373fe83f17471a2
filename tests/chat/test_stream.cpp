// Stop strings over streamed pieces, and the transcript that decides what a turn evaluates.
#include <gtest/gtest.h>

#include <random>

#include "runtime/chat/stop_matcher.h"
#include "runtime/chat/transcript.h"

namespace cke {
namespace {

std::string feed(StopMatcher& m, const std::vector<std::string>& pieces,
                 std::vector<std::string>* shown = nullptr) {
  std::string out;
  for (const auto& p : pieces) {
    std::string s = m.push(p);
    if (shown) shown->push_back(s);
    out += s;
  }
  return out;
}

TEST(StopMatcher, HoldsBackAPossibleMarkerAndCutsAtIt) {
  StopMatcher m({"<|im_end|>"});
  std::vector<std::string> shown;
  EXPECT_EQ(feed(m, {"Hello", " wor", "ld<|", "im_", "end|>", "tail"}, &shown), "Hello world");
  EXPECT_EQ(shown, (std::vector<std::string>{"Hello", " wor", "ld", "", "", ""}));
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m({"<|im_end|>"});
  std::vector<std::string> shown;
  EXPECT_EQ(feed(m, {"a<|im", "_x", "b"}, &shown), "a<|im_xb");
  EXPECT_EQ(shown, (std::vector<std::string>{"a", "<|im_x", "b"}));
  EXPECT_FALSE(m.stopped());
  StopMatcher n({"<|im_end|>"});
  EXPECT_EQ(feed(n, {"x<|im_e"}), "x");
  EXPECT_EQ(n.flush(), "<|im_e");  // generation ended otherwise: the held text is the reply's
}

TEST(StopMatcher, EarliestOfSeveralStops) {
  StopMatcher m({"END", "<eot>"});
  EXPECT_EQ(feed(m, {"ab<eot>cdEND"}), "ab");
  StopMatcher n({"END", "<eot>"});
  EXPECT_EQ(feed(n, {"abEN", "D<eot>"}), "ab");
}

// Against a direct search over the whole text: random texts, random piece boundaries.
TEST(StopMatcher, AnySplitGivesTheTextBeforeTheFirstStop) {
  std::mt19937 rng(7);
  const std::vector<std::string> stops = {"<|eot|>", "\n\nUser:", "aab"};
  const std::string alphabet = "ab<|eot>\nUser: ";
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text;
    const int len = int(rng() % 40);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    const std::string expect = first == std::string::npos ? text : text.substr(0, first);
    StopMatcher m(stops);
    std::string out;
    for (size_t at = 0; at < text.size();) {
      const size_t n = 1 + rng() % 5;
      out += m.push(text.substr(at, n));
      at += n;
    }
    out += m.flush();
    ASSERT_EQ(out, expect) << "text: " << text;
    ASSERT_EQ(m.stopped(), first != std::string::npos) << "text: " << text;
  }
}

TEST(Transcript, NewTurnEvaluatesOnlyTheNewText) {
  Transcript t;
  Transcript::Step s = t.plan("<u>hi</u><a>");
  EXPECT_EQ(s.keep_chars, 0u);
  EXPECT_EQ(s.keep_pos, 0);
  EXPECT_EQ(s.delta, "<u>hi</u><a>");
  t.append(s.delta, 6);
  t.append("Hel", 7);
  t.append("lo", 8);
  s = t.plan("<u>hi</u><a>Hello</a><u>more</u><a>");
  EXPECT_EQ(s.keep_chars, 17u);
  EXPECT_EQ(s.keep_pos, 8);
  EXPECT_EQ(s.delta, "</a><u>more</u><a>");
}

TEST(Transcript, DivergenceRewindsToTheLastCheckpointInside) {
  Transcript t;
  t.append("<a>", 2);
  t.append(" Hi", 3);
  t.append(" there ", 4);
  // A template that trims the reply renders "<a>Hi there</a>": the text diverges at 3.
  Transcript::Step s = t.plan("<a>Hi there</a>");
  EXPECT_EQ(s.keep_chars, 3u);
  EXPECT_EQ(s.keep_pos, 2);
  EXPECT_EQ(s.delta, "Hi there</a>");
  t.rewind(s.keep_chars, s.keep_pos);
  EXPECT_EQ(t.text(), "<a>");
  EXPECT_EQ(t.pos(), 2);
  t.append(s.delta, 5);
  EXPECT_EQ(t.text(), "<a>Hi there</a>");
  // Divergence inside a checkpointed span: back to the one before it.
  s = t.plan("<a>Hi thereX");
  EXPECT_EQ(s.keep_chars, 3u);
  EXPECT_EQ(s.keep_pos, 2);
}

TEST(Transcript, AlwaysLeavesSomethingToEvaluate) {
  Transcript t;
  t.append("abc", 1);
  t.append("def", 2);
  // Nothing new: the last segment is evaluated again so there are logits to sample from.
  Transcript::Step s = t.plan("abcdef");
  EXPECT_EQ(s.keep_chars, 3u);
  EXPECT_EQ(s.keep_pos, 1);
  EXPECT_EQ(s.delta, "def");
  // A shorter rendering (history edited): back to a checkpoint inside it.
  s = t.plan("ab");
  EXPECT_EQ(s.keep_chars, 0u);
  EXPECT_EQ(s.keep_pos, 0);
  EXPECT_EQ(s.delta, "ab");
}

}  // namespace
}  // namespace cke
