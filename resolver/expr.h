// The one small expression language of CKE data files.
//
// Used by circuits (hyper-parameter defaults, derived values, per-layer params, shapes),
// kernel-map shape predicates and symbolic port shapes. Parsed once into a tree; evaluated
// against a name lookup. No string eval, no host-language semantics leak in.
//
// Grammar (C precedence):
//   expr   := or ('?' expr ':' expr)?
//   or     := and ('||' and)*          and := cmp ('&&' cmp)*
//   cmp    := add (('=='|'!='|'<'|'<='|'>'|'>=') add | 'in' '[' expr (',' expr)* ']')?
//   add    := mul (('+'|'-') mul)*      mul := unary (('*'|'/'|'%') unary)*
//   unary  := ('-'|'!') unary | primary
//   primary:= int | float | name | name '(' expr (',' expr)* ')' | '(' expr ')'
//   functions: sqrt(x) pow(a, b) min(a, b) max(a, b)
//
// Values are 64-bit integers, binary32 floats, or a multiple of the runtime token count
// `T` (c*T: the only dynamic quantity in a shape). Float arithmetic is done in float32,
// rounded after every operation, because llama.cpp computes its hyper-parameter-derived
// constants (1.0f/sqrtf(head_dim), 1.0f/scale) in float: `1.0 / sqrt(8)` must give the
// same bits as it does. Integer arithmetic is checked (overflow and division by zero are
// errors); `/` and `%` on integers truncate like C. Token multiples support +, -, *, / by
// integers; comparing them is an error ("depends on the runtime token count").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cke {

struct Value {
  enum class Kind : uint8_t { Int, Float, Tokens };
  Kind kind = Kind::Int;
  int64_t i = 0;  // Int: the value; Tokens: the coefficient c of c*T
  float f = 0;    // Float: the value

  static Value integer(int64_t v) { return {Kind::Int, v, 0}; }
  static Value real(float v) { return {Kind::Float, 0, v}; }
  static Value tokens(int64_t c) { return {Kind::Tokens, c, 0}; }
  bool is_int() const { return kind == Kind::Int; }
  bool is_float() const { return kind == Kind::Float; }
  bool is_tokens() const { return kind == Kind::Tokens; }
  // Exact equality of kind and value (Int 2 != Float 2.0; floats compare by value).
  bool operator==(const Value& o) const;
  // "64", "1e-05", "T", "8*T".
  std::string str() const;
  // Substitutes T = n (decode: T = 1) and returns an Int; other kinds unchanged.
  Value at_tokens(int64_t n) const;
};

class Expr {
 public:
  struct Node;
  using Lookup = std::function<std::optional<Value>(std::string_view name)>;

  struct Result {
    std::optional<Value> value;
    std::string error;    // set when value is empty
    std::string unbound;  // the first name the lookup did not know (if that was the cause)
  };

  // Parses `text`; on failure returns nullopt and a message with the column.
  static std::optional<Expr> parse(std::string_view text, std::string* error);
  // A constant expression (e.g. a YAML number); `text` is what it prints as.
  static Expr constant(Value v, std::string text);

  Result eval(const Lookup& lookup) const;
  const std::string& text() const { return text_; }
  // Same source text (parse maps one text to one tree): for tests of parsed values.
  bool operator==(const Expr& o) const { return text_ == o.text_; }
  // Identifiers referenced (not function names), in first-use order, without duplicates.
  std::vector<std::string> names() const;
  // The identifier if the whole expression is one bare name.
  std::optional<std::string> as_name() const;
  // If the expression is `a * b` with one side a bare name: the (name, other side) pairs
  // (up to two). The shape binder uses this to solve `head_dim * n_head_kv == 32`.
  std::vector<std::pair<std::string, Expr>> product_factors() const;

 private:
  Expr(std::shared_ptr<const Node> root, std::string text);
  std::shared_ptr<const Node> root_;
  std::string text_;
};

// Truthiness used by && || ?: and predicates: nonzero Int or Float. Tokens are an error.
std::optional<bool> truthy(const Value& v, std::string* error);

}  // namespace cke
