// StringIndex against std::unordered_map as the oracle: first position wins for equal
// texts, absent texts are absent, and the table grows past its reservation.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/tokenizer/string_index.h"

namespace cke {
namespace {

TEST(StringIndex, FirstPositionWinsAndAbsentIsAbsent) {
  const std::vector<std::string> keys = {"a", "b", "", "a", "ab", "b", "ba"};
  StringIndex ix(&keys);
  EXPECT_EQ(ix.find("a"), StringIndex::kAbsent) << "nothing indexed yet";
  const int32_t want[] = {0, 1, 2, 0, 4, 1, 6};
  for (int32_t i = 0; i < int32_t(keys.size()); ++i) EXPECT_EQ(ix.add(i), want[i]) << i;
  for (int32_t i = 0; i < int32_t(keys.size()); ++i) EXPECT_EQ(ix.find(keys[i]), want[i]) << i;
  for (const char* s : {"c", "aa", "abc", " a"}) EXPECT_EQ(ix.find(s), StringIndex::kAbsent) << s;
}

TEST(StringIndex, AddAllMatchesAddOneByOne) {
  // 200k texts from a small alphabet (many duplicates and shared prefixes), more than the
  // reservation of the first call: the table rehashes while keys are in it.
  std::mt19937 rng(5);
  std::vector<std::string> keys(200000);
  for (std::string& k : keys) {
    k.resize(1 + rng() % 6);
    for (char& c : k) c = char('a' + rng() % 5);
  }
  std::unordered_map<std::string, int32_t> oracle;
  int32_t first_dup = StringIndex::kAbsent;
  for (int32_t i = 0; i < int32_t(keys.size()); ++i) {
    if (i % 3 == 0) continue;  // add_all below skips these
    const auto [it, inserted] = oracle.emplace(keys[i], i);
    if (!inserted && first_dup == StringIndex::kAbsent) first_dup = i;
  }
  StringIndex ix(&keys);
  ix.reserve(1000);
  EXPECT_EQ(ix.add_all(keys.size(), [](size_t i) { return i % 3 != 0; }), first_dup);
  for (int32_t i = 0; i < int32_t(keys.size()); ++i) {
    const auto it = oracle.find(keys[i]);
    ASSERT_EQ(ix.find(keys[i]), it == oracle.end() ? StringIndex::kAbsent : it->second) << i;
  }
  EXPECT_EQ(ix.find("abcdefg"), StringIndex::kAbsent);
}

TEST(StringIndex, AddAllOfDistinctKeysReportsNoDuplicate) {
  std::vector<std::string> keys;
  for (int i = 0; i < 5000; ++i) keys.push_back("tok" + std::to_string(i));
  StringIndex ix(&keys);
  EXPECT_EQ(ix.add_all(keys.size(), [](size_t) { return true; }), StringIndex::kAbsent);
  for (int32_t i = 0; i < 5000; ++i) ASSERT_EQ(ix.find(keys[size_t(i)]), i);
}

}  // namespace
}  // namespace cke
