// Token sampling, in llama.cpp's default chain order:
//   repeat penalty -> top-k -> top-p -> min-p -> temperature -> draw (seeded mt19937).
// temp <= 0 is greedy: the argmax, lowest id on ties (as llama.cpp's greedy sampler).
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace cke {

struct SamplerParams {
  float temp = 0.8f;            // llama.cpp defaults
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int32_t repeat_last_n = 64;
  uint64_t seed = 0xFFFFFFFFu;  // LLAMA_DEFAULT_SEED: random
};

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
