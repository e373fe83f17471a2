#include "tests/runtime/reference.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/common/shared.h"

namespace cke::test {

static bool read_block(const std::vector<char>& blob, const nlohmann::json& j, int* rows, int* cols,
                       std::vector<float>* out) {
  const size_t off = j.at("offset_bytes"), r = j.at("rows"), c = j.at("cols");
  if (off + r * c * 4 > blob.size()) return false;
  out->resize(r * c);
  std::memcpy(out->data(), blob.data() + off, r * c * 4);
  if (rows) *rows = int(r);
  if (cols) *cols = int(c);
  return true;
}

std::optional<RefModel> load_reference(const std::string& stem, std::string* err) {
  const std::string dir = shared_path("reference");
  // A stem may name a subfolder ("next/synth-glm4-F32"); the logits file sits beside its json.
  const std::string json_path = dir + "/" + stem + ".json";
  const std::string json_dir = std::filesystem::path(json_path).parent_path().string();
  std::ifstream jf(json_path);
  if (!jf) {
    *err = "cannot open " + dir + "/" + stem + ".json";
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(jf, nullptr, false);
  if (j.is_discarded()) {
    *err = stem + ".json: not valid JSON";
    return std::nullopt;
  }
  std::ifstream bf(json_dir + "/" + j.at("logits_file").get<std::string>(), std::ios::binary);
  std::vector<char> blob((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
  RefModel m;
  m.stem = stem;
  // model.path is relative to the steering repo root, i.e. starts with "shared/".
  std::string rel = j.at("model").at("path");
  if (rel.rfind("shared/", 0) == 0) rel = rel.substr(7);
  m.model_path = shared_path(rel);
  m.n_vocab = j.at("n_vocab");
  for (const auto& s : j.at("sequences")) {
    RefSequence seq;
    seq.name = s.at("name");
    seq.eval_ids = s.at("eval_ids").get<std::vector<int32_t>>();
    for (auto [key, var] : {std::pair{"exact", &seq.exact}, std::pair{"default", &seq.dflt}}) {
      const auto& v = s.at("variants").at(key);
      if (!read_block(blob, v.at("prefill_logits"), &var->rows, &var->cols, &var->prefill) ||
          !read_block(blob, v.at("gen_logits"), nullptr, nullptr, &var->gen)) {
        *err = stem + ": logits block out of range";
        return std::nullopt;
      }
      var->greedy = v.at("greedy_tokens").get<std::vector<int32_t>>();
      var->top2_margin = v.at("top2_margin").get<std::vector<float>>();
      var->gen_top2_margin = v.at("gen_top2_margin").get<std::vector<float>>();
    }
    m.sequences.push_back(std::move(seq));
  }
  return m;
}

double nmse(const float* x, const float* ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(x[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return den > 0 ? num / den : num;
}

std::vector<std::string> reference_stems(const std::string& sub) {
  std::vector<std::string> stems;
  const std::string prefix = sub.empty() ? "" : sub + "/";
  const std::string dir = shared_path("reference" + (sub.empty() ? "" : "/" + sub));
  if (!std::filesystem::exists(dir)) return stems;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto p = e.path();
    if (p.extension() == ".json") stems.push_back(prefix + p.stem().string());
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

std::vector<std::string> next_reference_stems() {
  static constexpr const char* kRunning[] = {"synth-glm4-", "synth-nemotron-", "synth-qwen3moe-",
                                             "synth-llamamoe-"};
  std::vector<std::string> stems;
  for (const std::string& stem : reference_stems("next")) {
    const std::string model = stem.substr(stem.find('/') + 1);
    for (const char* f : kRunning)
      if (model.starts_with(f)) stems.push_back(stem);
  }
  return stems;
}

}  // namespace cke::test
