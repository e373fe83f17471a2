// cke-bench's llama-bench flags: -p, -n, -d and -t take llama-bench's lists (comma-separated
// counts and ranges, the flag repeatable), -pg P,G adds a prompt-then-generation test; per
// depth the pp tests, the tg tests, then the pg tests, named as llama-bench names them
// ("pp8 @ d5", "pp4+tg2"); a bad list item is an error naming the flag and the item, and a
// llama.cpp flag CKE lacks (-ngl) an error naming that flag; -o jsonl and csv hold the same
// rows as -o json; -ctk / -ctv / -fa lists, --no-warmup and --delay as llama-bench's.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/common/shared.h"
#include "tests/runtime/cli_runner.h"

namespace cke {
namespace {

// cke-bench's JSON document for `args` (with -o json); discarded (and the test failed) when
// it does not run or print one.
nlohmann::json bench_json(const std::string& args) {
  const auto r = test::run_tool(CKE_BENCH_BIN, args + " -o json", "2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return r.code == 0 ? j : nlohmann::json(nlohmann::json::value_t::discarded);
}

TEST(CkeBench, ListsAndDepthsRunEveryTestInLlamaBenchsOrder) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const nlohmann::json j = bench_json("-m " + model + " -p 4,8 -n 2 -d 0,5 -r 1 -t 1");
  ASSERT_FALSE(j.is_discarded());
  const std::vector<std::pair<std::string, int>> want = {
      {"pp4", 0}, {"pp8", 0}, {"tg2", 0}, {"pp4 @ d5", 5}, {"pp8 @ d5", 5}, {"tg2 @ d5", 5}};
  ASSERT_EQ(j["results"].size(), want.size()) << j.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    const nlohmann::json& row = j["results"][i];
    EXPECT_EQ(row["test"], want[i].first) << "row " << i;
    EXPECT_EQ(row["n_depth"], want[i].second) << "row " << i;
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0.0) << "row " << i;
  }
}

// -pg P,G (repeatable, llama-bench's -pg): P prompt tokens then G decode steps, timed
// together; n counts both, as t/s does.
TEST(CkeBench, PromptThenGenerationTestsFollowTheTgTests) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const nlohmann::json j =
      bench_json("-m " + model + " -p 4 -n 2 -pg 8,3 -pg 4,2 -d 0,5 -r 1 -t 1");
  ASSERT_FALSE(j.is_discarded());
  struct Want {
    std::string test;
    int depth, n_prompt, n_gen;
  };
  const std::vector<Want> want = {{"pp4", 0, 4, 0},          {"tg2", 0, 0, 2},
                                  {"pp8+tg3", 0, 8, 3},      {"pp4+tg2", 0, 4, 2},
                                  {"pp4 @ d5", 5, 4, 0},     {"tg2 @ d5", 5, 0, 2},
                                  {"pp8+tg3 @ d5", 5, 8, 3}, {"pp4+tg2 @ d5", 5, 4, 2}};
  ASSERT_EQ(j["results"].size(), want.size()) << j.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    const nlohmann::json& row = j["results"][i];
    EXPECT_EQ(row["test"], want[i].test) << "row " << i;
    EXPECT_EQ(row["n_depth"], want[i].depth) << "row " << i;
    EXPECT_EQ(row["n_prompt"], want[i].n_prompt) << "row " << i;
    EXPECT_EQ(row["n_gen"], want[i].n_gen) << "row " << i;
    EXPECT_EQ(row["n"], want[i].n_prompt + want[i].n_gen) << "row " << i;
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0.0) << "row " << i;
  }
}

// -o jsonl: one JSON object a line, a test each, the rows -o json holds; -o csv: a header
// and a row a test, the same tests.
TEST(CkeBench, JsonLinesAndCsvHoldOneRowPerTest) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const std::string args = "-m " + model + " -p 4 -n 2 -pg 4,2 -r 1 -t 1 -o ";
  const std::vector<std::string> tests = {"pp4", "tg2", "pp4+tg2"};
  const auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string l; std::getline(ss, l);) out.push_back(l);
    return out;
  };
  const auto jl = test::run_tool(CKE_BENCH_BIN, args + "jsonl", "2>/dev/null");
  ASSERT_EQ(jl.code, 0) << jl.out;
  const std::vector<std::string> jrows = lines(jl.out);
  ASSERT_EQ(jrows.size(), tests.size()) << jl.out;
  for (size_t i = 0; i < tests.size(); ++i) {
    const nlohmann::json row = nlohmann::json::parse(jrows[i], nullptr, false);
    ASSERT_FALSE(row.is_discarded()) << jrows[i];
    EXPECT_EQ(row["test"], tests[i]) << jrows[i];
    EXPECT_GT(row["tokens_per_second"].get<double>(), 0.0) << jrows[i];
  }
  const auto csv = test::run_tool(CKE_BENCH_BIN, args + "csv", "2>/dev/null");
  ASSERT_EQ(csv.code, 0) << csv.out;
  const std::vector<std::string> crows = lines(csv.out);
  ASSERT_EQ(crows.size(), tests.size() + 1) << csv.out;
  EXPECT_EQ(crows[0].rfind("model,size_bytes,params,isa,cache_type,threads,test,", 0), 0u)
      << crows[0];
  for (size_t i = 0; i < tests.size(); ++i) {
    EXPECT_EQ(crows[i + 1].rfind("\"" + model + "\",", 0), 0u) << crows[i + 1];
    EXPECT_NE(crows[i + 1].find(",\"" + tests[i] + "\","), std::string::npos) << crows[i + 1];
  }
}

TEST(CkeBench, ABadListItemIsAnErrorNamingTheFlag) {
  for (const auto& [args, msg] : std::vector<std::pair<std::string, std::string>>{
           {"-p 8,x", "-p 8,x: 'x' is not a count"},
           {"-n 4,-2", "-n 4,-2: '-2' is not a count"},
           {"-d 1x", "-d 1x: '1x' is not a count"},
           {"-t ,2", "-t ,2: '' is not a count"},
           {"-pg 8", "-pg 8: expected P,G"},
           {"-pg 0,4", "-pg 0,4: expected P,G"},
           {"-pg 8,2,1", "-pg 8,2,1: expected P,G"},
           {"-pg 8,y", "-pg 8,y: 'y' is not a count"},
           {"-pg 2-3", "-pg 2-3: expected P,G"},
           {"-p 8-4", "-p 8-4: '8-4' is a range whose last is below its first"},
           {"-p 4-8*1", "-p 4-8*1: '4-8*1' is a range that does not grow"},
           {"-n 1-9+0", "-n 1-9+0: '1-9+0' is a range that does not grow"},
           {"-d 0-100000", "-d 0-100000: '0-100000' makes more than 1024 values"},
           {"-p 4-8x2", "-p 4-8x2: '4-8x2' is not a count"},
           {"-p 4-", "-p 4-: '4-' is not a count"},
           {"-p 2000000", "-p 2000000: '2000000' is not a count"}}) {
    const auto r = test::run_tool(CKE_BENCH_BIN, "-m none.gguf " + args, "2>&1 >/dev/null");
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(msg), std::string::npos) << args << ": " << r.out;
  }
}

// llama-bench's ranges (first-last, +step, *factor) and repeated flags append, in order.
TEST(CkeBench, RangesAndRepeatedFlagsAppendInOrder) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const nlohmann::json j = bench_json("-m " + model + " -p 2-8*2 -p 3 -n 1-5+2 -n 2 -r 1 -t1");
  ASSERT_FALSE(j.is_discarded());
  const std::vector<std::string> want = {"pp2", "pp4", "pp8", "pp3", "tg1", "tg3", "tg5", "tg2"};
  ASSERT_EQ(j["results"].size(), want.size()) << j.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(j["results"][i]["test"], want[i]) << "row " << i;
    EXPECT_EQ(j["results"][i]["threads"], 1) << "row " << i;
  }
}

// -ctk / -ctv / -fa take lists as llama-bench's: each KV cache configuration is a plan of
// its own, in the order given, -ctv following each -ctk type; the md table shows a cache
// column only when one was asked for; a combination CKE does not run is an error first.
TEST(CkeBench, CacheTypeListsRunEachCache) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const nlohmann::json j = bench_json("-m " + model + " -p 4 -n 2 -r 1 -t 1 -ctk f32,f16");
  ASSERT_FALSE(j.is_discarded());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"pp4", "f32"}, {"tg2", "f32"}, {"pp4", "f16"}, {"tg2", "f16"}};
  ASSERT_EQ(j["results"].size(), want.size()) << j.dump();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(j["results"][i]["test"], want[i].first) << "row " << i;
    EXPECT_EQ(j["results"][i]["cache_type"], want[i].second) << "row " << i;
  }
  const auto with =
      test::run_tool(CKE_BENCH_BIN, "-m " + model + " -p 4 -n 0 -r 1 -t 1 -fa on -ctk f16", "2>&1");
  EXPECT_EQ(with.code, 0) << with.out;
  EXPECT_NE(with.out.find("| isa | cache | threads |"), std::string::npos) << with.out;
  EXPECT_NE(with.out.find("| probed | f16 | 1 | pp4 |"), std::string::npos) << with.out;
  const auto without =
      test::run_tool(CKE_BENCH_BIN, "-m " + model + " -p 4 -n 0 -r 1 -t 1", "2>&1");
  EXPECT_EQ(without.code, 0) << without.out;
  EXPECT_NE(without.out.find("| isa | threads |"), std::string::npos) << without.out;
  for (const auto& [args, msg] : std::vector<std::pair<std::string, std::string>>{
           {"-ctk f16 -ctv f32", "K and V must have one type"},
           {"-ctk f32,f16 -ctv f32", "--cache-type-k f16 with --cache-type-v f32"},
           {"-ctk f32 -fa auto,on", "--flash-attn on with a f32 cache"},
           {"-ctk q8_0", "--cache-type-k q8_0: CKE's KV cache is f32 or f16"}}) {
    const auto r = test::run_tool(CKE_BENCH_BIN, "-m " + model + " -p 4 -n 0 " + args, "2>&1");
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(msg), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("| pp4"), std::string::npos) << args << ": ran a test first";
  }
}

// --no-warmup: each of a test's -r runs is timed and recorded (the dropped untimed run
// itself shows only in the time taken); --delay S waits S seconds before each test (so a
// run of two tests takes at least 2 S); a negative or non-finite delay is a usage error.
TEST(CkeBench, NoWarmupAndDelay) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const nlohmann::json j = bench_json("-m " + model + " -p 4 -n 2 -r 2 -t 1 --no-warmup");
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["results"].size(), 2u) << j.dump();
  for (const nlohmann::json& row : j["results"]) {
    ASSERT_EQ(row["samples"].size(), 2u) << row.dump();
    for (const nlohmann::json& s : row["samples"]) EXPECT_GT(s.get<double>(), 0.0) << row.dump();
  }
  const auto t0 = std::chrono::steady_clock::now();
  const nlohmann::json d = bench_json("-m " + model + " -p 4 -n 2 -r 1 -t 1 --delay 0.4");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(d.is_discarded());
  EXPECT_EQ(d["results"].size(), 2u) << d.dump();
  EXPECT_GE(s, 0.8) << "two tests after --delay 0.4 each";
  for (const char* bad : {"--delay -1", "--delay nan", "--delay inf"}) {
    const auto r = test::run_tool(CKE_BENCH_BIN, "-m " + model + " -p 4 " + bad, "2>&1");
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("--delay:"), std::string::npos) << bad << ": " << r.out;
  }
}

// llama.cpp's multi-letter flags that CKE does not take are named as such (CLI11 alone would
// read "-ngl 99" as -n with the value "gl").
TEST(CkeBench, ALlamaFlagCkeLacksIsNamed) {
  for (const std::string flag : {"-ngl 99", "-ub 512", "-mmp 0", "-no-cnv"}) {
    const auto r = test::run_tool(CKE_BENCH_BIN, "-m none.gguf -p 4 " + flag, "2>&1 >/dev/null");
    EXPECT_EQ(r.code, 2) << flag << ": " << r.out;
    const std::string name = flag.substr(0, flag.find(' '));
    EXPECT_NE(r.out.find("cke-bench: unknown flag " + name + ":"), std::string::npos)
        << flag << ": " << r.out;
  }
}

}  // namespace
}  // namespace cke
