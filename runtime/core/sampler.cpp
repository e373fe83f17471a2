#include "runtime/core/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace cke {

int32_t argmax(const float* logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

const SamplerRange& sampler_range(std::string_view name) {
  for (const SamplerRange& r : kSamplerRanges)
    if (name == r.name) return r;
  throw std::logic_error(fmt::format("sampler_range: no field '{}'", name));
}

std::string sampler_params_error(const SamplerParams& p) {
  for (const SamplerRange& r : kSamplerRanges)
    if (const float v = p.*r.field; !(v >= r.lo && v <= r.hi))  // NaN fails too
      return fmt::format("{} {}: must be a finite number in [{}, {}]", r.name, v, r.lo, r.hi);
  if (p.repeat_last_n < 0) return fmt::format("repeat_last_n {}: must be >= 0", p.repeat_last_n);
  return {};
}

Sampler::Sampler(const SamplerParams& p) : p_(p) {
  uint64_t seed = p.seed;
  if (seed == 0xFFFFFFFFu) seed = std::random_device{}();
  rng_.seed(uint32_t(seed));
}

void Sampler::accept(int32_t token) {
  if (p_.repeat_last_n <= 0) return;
  recent_.push_back(token);
  while (int32_t(recent_.size()) > p_.repeat_last_n) recent_.pop_front();
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab) {
  cand_.resize(n_vocab);
  for (int32_t i = 0; i < n_vocab; ++i) cand_[i] = {logits[i], i};

  for (const auto& [id, bias] : p_.logit_bias)
    if (id >= 0 && id < n_vocab) cand_[id].first += bias;
  // Penalties, once per distinct recent token: the repeat penalty shrinks positive logits
  // and grows negative ones; presence and frequency subtract (llama.cpp's penalties sampler).
  const bool penalize =
      p_.repeat_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  if (penalize && !recent_.empty()) {
    std::unordered_map<int32_t, int32_t> count;
    for (int32_t t : recent_) ++count[t];
    for (const auto& [t, n] : count) {
      if (t < 0 || t >= n_vocab) continue;
      float& l = cand_[t].first;
      l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
      l -= float(n) * p_.frequency_penalty + p_.presence_penalty;
    }
  }
  if (p_.temp <= 0) {
    // Greedy: the highest logit, lowest id on ties (stable order of ids).
    size_t best = 0;
    for (size_t i = 1; i < cand_.size(); ++i)
      if (cand_[i].first > cand_[best].first) best = i;
    return cand_[best].second;
  }
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  // Top-k.
  size_t keep = cand_.size();
  if (p_.top_k > 0 && size_t(p_.top_k) < keep) keep = size_t(p_.top_k);
  std::partial_sort(cand_.begin(), cand_.begin() + keep, cand_.end(), by_logit);
  cand_.resize(keep);
  // Top-p on the softmax of what is left (sorted): the smallest prefix with mass >= p.
  auto softmax = [&](std::vector<double>& prob) {
    prob.resize(cand_.size());
    const double mx = cand_[0].first;
    double sum = 0;
    for (size_t i = 0; i < cand_.size(); ++i)
      sum += prob[i] = std::exp(double(cand_[i].first) - mx);
    for (double& q : prob) q /= sum;
  };
  std::vector<double> prob;
  if (p_.top_p < 1.0f) {
    softmax(prob);
    double cum = 0;
    size_t n = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      cum += prob[i];
      if (cum >= p_.top_p) {
        n = i + 1;
        break;
      }
    }
    cand_.resize(n);
  }
  // Min-p: keep tokens whose probability is at least min_p times the top one's.
  if (p_.min_p > 0) {
    const double floor = double(cand_[0].first) + std::log(double(p_.min_p));
    size_t n = 1;
    while (n < cand_.size() && double(cand_[n].first) >= floor) ++n;
    cand_.resize(n);
  }
  // Temperature, then draw.
  for (auto& c : cand_) c.first /= p_.temp;
  softmax(prob);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double r = u(rng_), cum = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += prob[i];
    if (r < cum) return cand_[i].second;
  }
  return cand_.back().second;
}

}  // namespace cke
