// Expression helpers for the fuzz targets of the resolver's loaders (docs/fuzzing.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/expr.h"
#include "tests/fuzz/fuzz_common.h"

namespace cke::fuzz {

// A value for a name the expression under test looks up: chosen by a hash of the name and
// `salt` from values that stress the evaluator (zero, -1, the int64 extremes, NaN, inf,
// negative zero, token multiples). T is always the token count and L a layer index.
inline std::optional<Value> probe_value(std::string_view name, uint8_t salt) {
  if (name == "T") return Value::tokens(1);
  if (name == "L") return Value::integer(3);
  uint64_t h = 1469598103934665603ull ^ salt;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (h % 20) {
    case 0:
      return Value::integer(0);
    case 1:
      return Value::integer(-1);
    case 2:
      return Value::integer(std::numeric_limits<int64_t>::max());
    case 3:
      return Value::integer(std::numeric_limits<int64_t>::min());
    case 4:
      return Value::real(std::numeric_limits<float>::quiet_NaN());
    case 5:
      return Value::real(kInf);
    case 6:
      return Value::real(-0.0f);
    case 7:
      return Value::real(0.5f);
    case 8:
      return Value::tokens(1);
    case 9:
      return Value::tokens(-3);
    case 10:
      return std::nullopt;  // an unbound name
    default:
      return Value::integer(static_cast<int64_t>(h % 4097));
  }
}

// Evaluates `e` and checks the Result contract (a value, or an error message), plus the
// other queries of an Expr.
inline void exercise_expr(const Expr& e, uint8_t salt) {
  const Expr::Lookup look = [salt](std::string_view n) { return probe_value(n, salt); };
  const Expr::Result r = e.eval(look);
  FUZZ_CHECK(r.value.has_value() != !r.error.empty());
  if (r.value) {
    FUZZ_CHECK(r.value->kind == Value::Kind::Int || r.value->kind == Value::Kind::Float ||
               r.value->kind == Value::Kind::Tokens);
    (void)r.value->str();
    std::string terr;
    (void)truthy(*r.value, &terr);
    // Decode (T = 1) never changes the arithmetic: c*T becomes c.
    const Value d = r.value->at_tokens(1);
    FUZZ_CHECK(!d.is_tokens());
    if (r.value->is_tokens()) FUZZ_CHECK(d.i == r.value->i);
  }
  // With no name bound: an unbound name reported is one the expression uses, and an
  // expression without names evaluates as before.
  const std::vector<std::string> names = e.names();
  const Expr::Result bare = e.eval([](std::string_view) { return std::nullopt; });
  if (!bare.value && !bare.unbound.empty())
    FUZZ_CHECK(std::find(names.begin(), names.end(), bare.unbound) != names.end());
  if (names.empty()) {
    FUZZ_CHECK(bare.value.has_value() == r.value.has_value());
    if (bare.value && !bare.value->is_float()) FUZZ_CHECK(*bare.value == *r.value);
  }
  for (const std::string& n : names) FUZZ_CHECK(!n.empty());
  if (auto n = e.as_name()) FUZZ_CHECK(names.size() == 1 && names[0] == *n);
  for (const auto& [name, other] : e.product_factors()) {
    FUZZ_CHECK(!name.empty());
    (void)other.eval(look);
  }
}

}  // namespace cke::fuzz
