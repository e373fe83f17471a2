// Token sampling, in llama.cpp's default chain order:
//   logit bias -> penalties (repeat, presence, frequency) -> top-k -> top-p -> min-p ->
//   temperature -> draw (seeded mt19937).
// temp <= 0 is greedy: the argmax, lowest id on ties (as llama.cpp's greedy sampler).
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace cke {

struct SamplerParams {
  float temp = 0.8f;            // llama.cpp defaults
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  // llama.cpp's penalties over the same window: logit -= count * frequency_penalty +
  // (count > 0) * presence_penalty (OpenAI's definitions). 0: off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;  // the window of the penalties (tokens)
  // Added to a token's logit before anything else (OpenAI's logit_bias; -INFINITY bans it).
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0xFFFFFFFFu;  // LLAMA_DEFAULT_SEED: random
};

// The float fields' accepted values, finite and in [lo, hi], under their request names (the
// server's JSON keys): the one table the server's requests, the tools' flags and the C API
// check against.
struct SamplerRange {
  const char* name;
  float SamplerParams::*field;
  float lo, hi;
};
inline constexpr SamplerRange kSamplerRanges[] = {
    {"temperature", &SamplerParams::temp, 0, 100},
    {"top_p", &SamplerParams::top_p, 0, 1},
    {"min_p", &SamplerParams::min_p, 0, 1},
    {"repeat_penalty", &SamplerParams::repeat_penalty, 0, 100},
    {"presence_penalty", &SamplerParams::presence_penalty, -2, 2},
    {"frequency_penalty", &SamplerParams::frequency_penalty, -2, 2}};
// kSamplerRanges' entry `name` (a name not in it is a programming error: std::logic_error).
const SamplerRange& sampler_range(std::string_view name);

// "" when every float field is within kSamplerRanges and repeat_last_n >= 0, else what is
// wrong, naming the field. For callers whose numbers come unchecked (the C API).
std::string sampler_params_error(const SamplerParams& p);

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p);
  // Picks the next token from one row of logits (not modified).
  int32_t sample(const float* logits, int32_t n_vocab);
  // Records a token of the context (prompt or generated) for the repeat penalty.
  void accept(int32_t token);

 private:
  SamplerParams p_;
  std::mt19937 rng_;
  std::deque<int32_t> recent_;
  std::vector<std::pair<float, int32_t>> cand_;  // (logit, id), reused between calls
};

int32_t argmax(const float* logits, int32_t n);

}  // namespace cke
