// cke-bench's llama-bench flags: -p, -n and -d take comma-separated lists; per depth the pp
// tests, then the tg tests, named as llama-bench names them ("pp8 @ d5"); a bad list item
// is an error naming the flag and the item.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/common/shared.h"
#include "tests/runtime/cli_runner.h"

namespace cke {
namespace {

TEST(CkeBench, ListsAndDepthsRunEveryTestInLlamaBenchsOrder) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const auto r = test::run_tool(CKE_BENCH_BIN,
                                "-m " + model + " -p 4,8 -n 2 -d 0,5 -r 1 -t 1 -o json", "2>&1");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const std::vector<std::pair<std::string, int>> want = {
      {"pp4", 0}, {"pp8", 0}, {"tg2", 0}, {"pp4 @ d5", 5}, {"pp8 @ d5", 5}, {"tg2 @ d5", 5}};
  ASSERT_EQ(j["results"].size(), want.size()) << r.out;
  for (size_t i = 0; i < want.size(); ++i) {
    const nlohmann::json& row = j["results"][i];
    EXPECT_EQ(row["test"], want[i].first) << "row " << i;
    EXPECT_EQ(row["n_depth"], want[i].second) << "row " << i;
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0.0) << "row " << i;
  }
}

TEST(CkeBench, ABadListItemIsAnErrorNamingTheFlag) {
  for (const auto& [args, msg] :
       std::vector<std::pair<std::string, std::string>>{{"-p 8,x", "-p 8,x: 'x' is not a count"},
                                                        {"-n 4,-2", "-n 4,-2: '-2' is not a count"},
                                                        {"-d 1x", "-d 1x: '1x' is not a count"},
                                                        {"-t ,2", "-t ,2: '' is not a count"}}) {
    const auto r = test::run_tool(CKE_BENCH_BIN, "-m none.gguf " + args, "2>&1 >/dev/null");
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(msg), std::string::npos) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace cke
