#include "runtime/core/gguf_facts.h"

#include <fmt/format.h>

namespace cke {

std::optional<MetaValue> GgufFacts::key(std::string_view name) const {
  const gguf::Value* v = f_.find(name);
  if (!v) return std::nullopt;
  using T = gguf::ValueType;
  switch (v->type) {
    case T::U8:
    case T::U16:
    case T::U32:
    case T::U64: {
      const uint64_t u = std::get<uint64_t>(v->scalar);
      if (u > uint64_t(INT64_MAX))
        return MetaValue{MetaUnreadable{fmt::format("{} (past int64)", u)}};
      return MetaValue{int64_t(u)};
    }
    case T::I8:
    case T::I16:
    case T::I32:
    case T::I64:
      return MetaValue{std::get<int64_t>(v->scalar)};
    case T::F32:
    case T::F64:
      return MetaValue{std::get<double>(v->scalar)};
    case T::BOOL:
      return MetaValue{int64_t(std::get<bool>(v->scalar) ? 1 : 0)};
    case T::STRING:
      return MetaValue{std::string(std::get<std::string_view>(v->scalar))};
    case T::ARRAY:
      return MetaValue{MetaUnreadable{fmt::format("an array of {} values", v->array_size())}};
  }
  return std::nullopt;
}

std::optional<TensorFact> GgufFacts::tensor(std::string_view name) const {
  const gguf::TensorInfo* t = f_.tensor(name);
  if (!t) return std::nullopt;
  TensorFact fact{t->type, {}};
  for (uint32_t i = 0; i < t->n_dims; ++i) fact.shape.push_back(t->ne[i]);
  return fact;
}

}  // namespace cke
