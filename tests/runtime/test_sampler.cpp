#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "runtime/core/sampler.h"

namespace cke {
namespace {

TEST(Sampler, GreedyTakesLowestIdOnTies) {
  SamplerParams p;
  p.temp = 0;
  Sampler s(p);
  std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.sample(l.data(), 4), 1);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegative) {
  SamplerParams p;
  p.temp = 0;
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  s.accept(0);
  std::vector<float> l = {3.0f, 2.0f};  // 3/2 = 1.5 < 2: token 1 wins
  EXPECT_EQ(s.sample(l.data(), 2), 1);
  Sampler t(p);
  t.accept(1);
  std::vector<float> m = {-1.0f, -0.6f};  // -0.6*2 = -1.2 < -1: token 0 wins
  EXPECT_EQ(t.sample(m.data(), 2), 0);
}

TEST(Sampler, TopKOneIsGreedyAndSeedIsDeterministic) {
  SamplerParams p;
  p.temp = 1.0f;
  p.top_k = 1;
  p.seed = 42;
  Sampler s(p);
  std::vector<float> l = {0.1f, 0.3f, 0.2f};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(l.data(), 3), 1);
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0;
  Sampler a(p), b(p);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.sample(l.data(), 3), b.sample(l.data(), 3));
}

// Frequencies follow softmax(l / temp) (chi-square-like loose check, fixed seed).
TEST(Sampler, DrawsFollowTheTemperedDistribution) {
  SamplerParams p;
  p.temp = 0.5f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0;
  p.seed = 1;
  Sampler s(p);
  std::vector<float> l = {0.0f, 0.5f, 1.0f};
  std::vector<double> want(3);
  double z = 0;
  for (int i = 0; i < 3; ++i) z += want[i] = std::exp(l[i] / 0.5);
  std::map<int, int> n;
  const int N = 20000;
  for (int i = 0; i < N; ++i) ++n[s.sample(l.data(), 3)];
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(n[i] / double(N), want[i] / z, 0.015) << i;
}

TEST(Sampler, MinPAndTopPCutTheTail) {
  SamplerParams p;
  p.temp = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.5f;  // keeps tokens with p >= 0.5 * p_max
  p.seed = 3;
  Sampler s(p);
  std::vector<float> l = {std::log(1.0f), std::log(0.6f), std::log(0.4f)};
  for (int i = 0; i < 200; ++i) EXPECT_NE(s.sample(l.data(), 3), 2);
  p.min_p = 0;
  p.top_p = 0.45f;  // token 0 alone (p = 0.5) holds that much mass
  Sampler t(p);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(t.sample(l.data(), 3), 0);
}

// OpenAI's definitions: logit -= count * frequency_penalty + (count > 0) * presence_penalty,
// over the penalty window only.
TEST(Sampler, PresenceAndFrequencyPenaltiesSubtractPerCount) {
  SamplerParams p;
  p.temp = 0;
  p.frequency_penalty = 0.4f;
  Sampler s(p);
  for (int i = 0; i < 3; ++i) s.accept(0);  // token 0 seen 3 times: 2.0 - 1.2 = 0.8
  std::vector<float> l = {2.0f, 0.9f};
  EXPECT_EQ(s.sample(l.data(), 2), 1);
  std::vector<float> m = {2.0f, 0.7f};
  EXPECT_EQ(s.sample(m.data(), 2), 0);
  p.frequency_penalty = 0;
  p.presence_penalty = 1.5f;  // once, whatever the count: 2.0 - 1.5 = 0.5
  Sampler t(p);
  for (int i = 0; i < 3; ++i) t.accept(0);
  std::vector<float> n = {2.0f, 0.6f};
  EXPECT_EQ(t.sample(n.data(), 2), 1);
  std::vector<float> q = {2.0f, 0.4f};
  EXPECT_EQ(t.sample(q.data(), 2), 0);
  p.repeat_last_n = 1;  // the window holds the last token only
  Sampler u(p);
  u.accept(0);
  u.accept(1);
  std::vector<float> w = {2.0f, 2.5f};  // only token 1 penalized: 2.0 > 1.0
  EXPECT_EQ(u.sample(w.data(), 2), 0);
}

TEST(Sampler, LogitBiasShiftsAndBans) {
  SamplerParams p;
  p.temp = 0;
  p.logit_bias = {{0, -INFINITY}, {2, 1.0f}, {99, 5.0f}};  // 99: outside the vocab, ignored
  Sampler s(p);
  std::vector<float> l = {3.0f, 1.0f, 1.5f};
  EXPECT_EQ(s.sample(l.data(), 3), 2);
  p.temp = 1.0f;
  p.seed = 5;
  Sampler t(p);
  for (int i = 0; i < 200; ++i) EXPECT_NE(t.sample(l.data(), 3), 0);
}

}  // namespace
}  // namespace cke
