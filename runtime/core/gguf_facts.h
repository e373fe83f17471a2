// ModelFacts (what a circuit reads from a model) over a validated GGUF file.
#pragma once

#include "resolver/graph.h"
#include "runtime/gguf/gguf.h"

namespace cke {

class GgufFacts : public ModelFacts {
 public:
  explicit GgufFacts(const gguf::File& f) : f_(f) {}
  // Integers (any width, bool as 0/1), reals, strings; arrays and integers past int64:
  // MetaUnreadable (an error wherever a circuit reads them); absent keys: nullopt.
  std::optional<MetaValue> key(std::string_view name) const override;
  std::optional<TensorFact> tensor(std::string_view name) const override;

 private:
  const gguf::File& f_;
};

}  // namespace cke
