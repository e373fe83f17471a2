// llama.cpp reference outputs in ../shared/reference (format: its README.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cke::test {

struct RefVariant {
  int rows = 0, cols = 0;
  std::vector<float> prefill;      // rows x cols: logits of every eval position, one batch
  std::vector<int32_t> greedy;     // 32 greedy tokens
  std::vector<float> gen;          // 32 x cols: row k = distribution greedy[k] came from
  std::vector<float> top2_margin;  // per prefill row
  std::vector<float> gen_top2_margin;
};

struct RefSequence {
  std::string name;
  std::vector<int32_t> eval_ids;  // BOS included
  RefVariant exact, dflt;
};

struct RefModel {
  std::string stem;
  std::string model_path;  // absolute path of the GGUF
  int n_vocab = 0;
  std::vector<RefSequence> sequences;
};

// Loads <shared>/reference/<stem>.json and its logits blob (beside the json; a stem may
// name a subfolder, "next/<model>"); nullopt + *err on failure.
std::optional<RefModel> load_reference(const std::string& stem, std::string* err);

// Σ(x−ref)² / Σref² over n values.
double nmse(const float* x, const float* ref, size_t n);

// The stems of every model in ../shared/reference, or in its subfolder `sub` (then each
// stem is "<sub>/<model>").
std::vector<std::string> reference_stems(const std::string& sub = "");

// The stems of reference/next/ (families being brought up) whose circuits run and must
// pass like every other reference: "next/synth-glm4-*", "next/synth-nemotron-*" and the
// mixtures of experts "next/synth-qwen3moe-*" and "next/synth-llamamoe-*".
std::vector<std::string> next_reference_stems();

}  // namespace cke::test
