// cke-run's parity flags: --prompt-tokens (ids as given, no BOS added), --force-tokens
// (teacher forcing through the decode path) and --logits-out (one f32 row per evaluated
// position: every prompt position, then one per decode step), checked against llama.cpp's
// reference logits; and the default generation command of the README.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/common/shared.h"
#include "tests/runtime/cli_runner.h"
#include "tests/runtime/reference.h"

namespace cke {
namespace {

TEST(CkeRun, LogitsOutWithForcedTokensMatchesTheReference) {
  CKE_REQUIRE_SHARED(json, "reference/stories260K.json");
  std::string err;
  auto ref = test::load_reference("stories260K", &err);
  ASSERT_TRUE(ref) << err;
  const auto& s = ref->sequences[0];
  std::string prompt, forced;
  auto append = [](std::string* list, int32_t id) {
    if (!list->empty()) list->push_back(',');
    list->append(std::to_string(id));
  };
  for (int32_t t : s.eval_ids) append(&prompt, t);
  for (size_t k = 0; k + 1 < s.exact.greedy.size(); ++k) append(&forced, s.exact.greedy[k]);
  const std::string out = testing::TempDir() + "cke_logits.f32";
  for (int n : {0, 2}) {
    auto r = test::run_cli("-m " + ref->model_path + " -c 256 -t 2 --prompt-tokens " + prompt +
                               " --force-tokens " + forced + " -n " + std::to_string(n) +
                               " --temp 0 --logits-out " + out,
                           "2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    std::ifstream f(out, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const size_t nv = size_t(ref->n_vocab), rows = bytes.size() / (nv * 4);
    // prompt rows + one per forced token + one per sampled token that was fed back (n - 1)
    ASSERT_EQ(rows, s.eval_ids.size() + (s.exact.greedy.size() - 1) + size_t(n > 0 ? n - 1 : 0));
    ASSERT_EQ(bytes.size(), rows * nv * 4);
    const float* l = reinterpret_cast<const float*>(bytes.data());
    for (size_t i = 0; i < s.eval_ids.size(); ++i)
      EXPECT_LE(test::nmse(l + i * nv, &s.exact.prefill[i * nv], nv), 1e-6) << "prompt row " << i;
    for (size_t k = 1; k < s.exact.greedy.size(); ++k)
      EXPECT_LE(test::nmse(l + (s.eval_ids.size() + k - 1) * nv, &s.exact.gen[k * nv], nv), 1e-6)
          << "forced row " << k;
  }
}

TEST(CkeRun, TheReadmeExampleGeneratesLlamaCppsText) {
  CKE_REQUIRE_SHARED(model, "models/stories260K.gguf");
  auto r = test::run_cli("-m " + model + " -p \"Once upon a time\" -n 32 --temp 0", "2>/dev/null");
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(
      r.out,
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park. One day, she saw\n");
}

}  // namespace
}  // namespace cke
