#include "resolver/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace cke {

struct Expr::Node {
  enum class Kind : uint8_t { Const, Name, Unary, Binary, Cond, Call, In };
  Kind kind;
  Value value;      // Const
  std::string str;  // Name: identifier; Unary/Binary: operator; Call: function
  std::vector<std::shared_ptr<const Node>> kids;
  int height = 1;  // 1 + the tallest kid's
};

namespace {

using NodeP = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

NodeP make(Kind k, std::string s, std::vector<NodeP> kids, Value v = {}) {
  auto n = std::make_shared<Expr::Node>();
  n->kind = k;
  n->str = std::move(s);
  n->kids = std::move(kids);
  n->value = v;
  for (const NodeP& k : n->kids) n->height = std::max(n->height, k->height + 1);
  return n;
}

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Recursive-descent parser over the grammar in expr.h.
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  NodeP parse_all() {
    NodeP n = expr();
    if (!n) return nullptr;
    skip();
    if (p_ != s_.size()) return fail("unexpected '" + std::string(1, s_[p_]) + "'");
    return n;
  }
  const std::string& error() const { return err_; }

 private:
  std::string_view s_;
  size_t p_ = 0;
  std::string err_;

  NodeP fail(const std::string& msg) {
    if (err_.empty()) err_ = fmt::format("{} at column {}", msg, p_ + 1);
    return nullptr;
  }
  void skip() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  bool eat(std::string_view tok) {
    skip();
    if (s_.substr(p_, tok.size()) != tok) return false;
    // Do not split "<=" as "<", "==" as "=", "&&" etc.: callers try longer tokens first.
    p_ += tok.size();
    return true;
  }
  bool peek_word(std::string_view w) {
    skip();
    if (s_.substr(p_, w.size()) != w) return false;
    size_t e = p_ + w.size();
    return e == s_.size() || !is_ident_char(s_[e]);
  }

  // Nesting is bounded so hostile input cannot exhaust the stack.
  static constexpr int kMaxDepth = 500;
  int depth_ = 0;
  struct DepthGuard {
    int* d;
    ~DepthGuard() { --*d; }
  };
  // So is the height of the tree: a chain such as 1+1+...+1 is parsed by a loop, not by
  // recursion, but evaluating, listing names and freeing it recurse once per operator.
  static constexpr int kMaxHeight = 500;
  NodeP node(Kind k, std::string s, std::vector<NodeP> kids) {
    NodeP n = make(k, std::move(s), std::move(kids));
    if (n->height > kMaxHeight)
      return fail(fmt::format("expression has more than {} nested operations", kMaxHeight));
    return n;
  }

  NodeP expr() {
    DepthGuard guard{&depth_};
    if (++depth_ > kMaxDepth) return fail("expression nested too deeply");
    NodeP c = or_();
    if (!c) return nullptr;
    if (eat("?")) {
      NodeP a = expr();
      if (!a) return nullptr;
      if (!eat(":")) return fail("expected ':'");
      NodeP b = expr();
      if (!b) return nullptr;
      return node(Kind::Cond, "?:", {c, a, b});
    }
    return c;
  }
  NodeP or_() {
    NodeP l = and_();
    while (l && eat("||")) {
      NodeP r = and_();
      if (!r) return nullptr;
      l = node(Kind::Binary, "||", {l, r});
    }
    return l;
  }
  NodeP and_() {
    NodeP l = cmp();
    while (l && eat("&&")) {
      NodeP r = cmp();
      if (!r) return nullptr;
      l = node(Kind::Binary, "&&", {l, r});
    }
    return l;
  }
  NodeP cmp() {
    NodeP l = add();
    if (!l) return nullptr;
    if (peek_word("in")) {
      p_ += 2;
      if (!eat("[")) return fail("expected '[' after 'in'");
      std::vector<NodeP> kids{l};
      do {
        NodeP e = expr();
        if (!e) return nullptr;
        kids.push_back(e);
      } while (eat(","));
      if (!eat("]")) return fail("expected ']'");
      return node(Kind::In, "in", std::move(kids));
    }
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (eat(op)) {
        NodeP r = add();
        if (!r) return nullptr;
        return node(Kind::Binary, std::string(op), {l, r});
      }
    }
    return l;
  }
  NodeP add() {
    NodeP l = mul();
    while (l) {
      std::string op;
      if (eat("+"))
        op = "+";
      else if (eat("-"))
        op = "-";
      else
        break;
      NodeP r = mul();
      if (!r) return nullptr;
      l = node(Kind::Binary, op, {l, r});
    }
    return l;
  }
  NodeP mul() {
    NodeP l = unary();
    while (l) {
      std::string op;
      if (eat("*"))
        op = "*";
      else if (eat("/"))
        op = "/";
      else if (eat("%"))
        op = "%";
      else
        break;
      NodeP r = unary();
      if (!r) return nullptr;
      l = node(Kind::Binary, op, {l, r});
    }
    return l;
  }
  NodeP unary() {
    DepthGuard guard{&depth_};
    if (++depth_ > kMaxDepth) return fail("expression nested too deeply");
    skip();
    if (p_ < s_.size() && s_[p_] == '!' && (p_ + 1 >= s_.size() || s_[p_ + 1] != '=')) {
      ++p_;
      NodeP k = unary();
      return k ? node(Kind::Unary, "!", {k}) : nullptr;
    }
    if (eat("-")) {
      NodeP k = unary();
      return k ? node(Kind::Unary, "-", {k}) : nullptr;
    }
    return primary();
  }
  NodeP primary() {
    skip();
    if (p_ >= s_.size()) return fail("unexpected end of expression");
    char c = s_[p_];
    if (c == '(') {
      ++p_;
      NodeP e = expr();
      if (!e) return nullptr;
      if (!eat(")")) return fail("expected ')'");
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (is_ident_start(c)) {
      size_t b = p_;
      while (p_ < s_.size() && is_ident_char(s_[p_])) ++p_;
      std::string name(s_.substr(b, p_ - b));
      skip();
      if (p_ < s_.size() && s_[p_] == '(') {
        ++p_;
        static const std::pair<const char*, size_t> kFns[] = {
            {"sqrt", 1}, {"pow", 2}, {"min", 2}, {"max", 2}};
        size_t arity = 0;
        for (auto [fn, n] : kFns)
          if (name == fn) arity = n;
        if (arity == 0) {
          p_ = b;
          return fail("unknown function '" + name + "'");
        }
        std::vector<NodeP> args;
        do {
          NodeP e = expr();
          if (!e) return nullptr;
          args.push_back(e);
        } while (eat(","));
        if (!eat(")")) return fail("expected ')' after arguments");
        if (args.size() != arity)
          return fail(fmt::format("{}() takes {} argument(s), got {}", name, arity, args.size()));
        return node(Kind::Call, name, std::move(args));
      }
      return node(Kind::Name, name, {});
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }
  NodeP number() {
    size_t b = p_;
    bool is_float = false;
    while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
    if (p_ < s_.size() && s_[p_] == '.') {
      is_float = true;
      ++p_;
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
    }
    if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
      is_float = true;
      ++p_;
      if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
      size_t d = p_;
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
      if (d == p_) return fail("malformed exponent");
    }
    if (p_ < s_.size() && is_ident_char(s_[p_])) return fail("malformed number");
    std::string t(s_.substr(b, p_ - b));
    if (t == ".") return fail("malformed number");
    errno = 0;
    if (is_float) {
      float f = std::strtof(t.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(f)) return fail("float literal out of range");
      return make(Kind::Const, t, {}, Value::real(f));
    }
    long long v = std::strtoll(t.c_str(), nullptr, 10);
    if (errno == ERANGE) return fail("integer literal out of range");
    return make(Kind::Const, t, {}, Value::integer(v));
  }
};

using Result = Expr::Result;

Result err(std::string msg) {
  return Result{std::nullopt, std::move(msg), {}};
}
Result ok(Value v) {
  return Result{v, {}, {}};
}

float as_float(const Value& v) {
  return v.is_int() ? static_cast<float>(v.i) : v.f;
}

const char* kTokensCompare = "depends on the runtime token count T";

Result arith(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  // Token multiples: c*T (+|-) d*T, c*T * n, n * c*T, c*T / n, c*T / d*T.
  if (a.is_tokens() || b.is_tokens()) {
    if (a.is_float() || b.is_float()) return err("cannot mix the token count T with a float");
    int64_t r = 0;
    if ((op == "+" || op == "-") && a.is_tokens() && b.is_tokens()) {
      if (op == "+" ? __builtin_add_overflow(a.i, b.i, &r) : __builtin_sub_overflow(a.i, b.i, &r))
        return err("integer overflow");
      return ok(r == 0 ? Value::integer(0) : Value::tokens(r));
    }
    if (op == "*" && a.is_tokens() != b.is_tokens()) {
      if (__builtin_mul_overflow(a.i, b.i, &r)) return err("integer overflow");
      return ok(r == 0 ? Value::integer(0) : Value::tokens(r));
    }
    if (op == "/" && a.is_tokens()) {
      if (b.i == 0) return err("division by zero");
      if (a.i == INT64_MIN && b.i == -1) return err("integer overflow");
      if (a.i % b.i != 0) return err(fmt::format("{} is not divisible by {}", a.str(), b.str()));
      return ok(b.is_tokens() ? Value::integer(a.i / b.i) : Value::tokens(a.i / b.i));
    }
    return err(
        fmt::format("'{} {} {}' is not a multiple of the token count T", a.str(), op, b.str()));
  }
  if (a.kind == K::Int && b.kind == K::Int) {
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(a.i, b.i, &r)) return err("integer overflow");
    } else if (op == "-") {
      if (__builtin_sub_overflow(a.i, b.i, &r)) return err("integer overflow");
    } else if (op == "*") {
      if (__builtin_mul_overflow(a.i, b.i, &r)) return err("integer overflow");
    } else {
      if (b.i == 0) return err("division by zero");
      if (a.i == INT64_MIN && b.i == -1) return err("integer overflow");
      r = op == "/" ? a.i / b.i : a.i % b.i;
    }
    return ok(Value::integer(r));
  }
  float x = as_float(a), y = as_float(b);
  if (op == "+") return ok(Value::real(x + y));
  if (op == "-") return ok(Value::real(x - y));
  if (op == "*") return ok(Value::real(x * y));
  if (op == "/") return ok(Value::real(x / y));
  return ok(Value::real(std::fmod(x, y)));
}

Result compare(const std::string& op, const Value& a, const Value& b) {
  if (a.is_tokens() || b.is_tokens()) return err(kTokensCompare);
  bool r;
  if (a.is_int() && b.is_int()) {
    r = op == "=="   ? a.i == b.i
        : op == "!=" ? a.i != b.i
        : op == "<"  ? a.i < b.i
        : op == "<=" ? a.i <= b.i
        : op == ">"  ? a.i > b.i
                     : a.i >= b.i;
  } else {
    float x = as_float(a), y = as_float(b);
    r = op == "=="   ? x == y
        : op == "!=" ? x != y
        : op == "<"  ? x < y
        : op == "<=" ? x <= y
        : op == ">"  ? x > y
                     : x >= y;
  }
  return ok(Value::integer(r ? 1 : 0));
}

Result eval_node(const Expr::Node& n, const Expr::Lookup& look) {
  switch (n.kind) {
    case Kind::Const:
      return ok(n.value);
    case Kind::Name: {
      std::optional<Value> v = look ? look(n.str) : std::nullopt;
      if (!v) return Result{std::nullopt, "unknown name '" + n.str + "'", n.str};
      return ok(*v);
    }
    case Kind::Unary: {
      Result a = eval_node(*n.kids[0], look);
      if (!a.value) return a;
      if (n.str == "!") {
        std::string e;
        std::optional<bool> t = truthy(*a.value, &e);
        if (!t) return err(e);
        return ok(Value::integer(*t ? 0 : 1));
      }
      const Value& v = *a.value;
      if (v.is_float()) return ok(Value::real(-v.f));
      if (v.i == INT64_MIN) return err("integer overflow");
      return ok(v.is_tokens() ? Value::tokens(-v.i) : Value::integer(-v.i));
    }
    case Kind::Binary: {
      Result a = eval_node(*n.kids[0], look);
      if (!a.value) return a;
      if (n.str == "&&" || n.str == "||") {  // short-circuit
        std::string e;
        std::optional<bool> t = truthy(*a.value, &e);
        if (!t) return err(e);
        if (n.str == "&&" && !*t) return ok(Value::integer(0));
        if (n.str == "||" && *t) return ok(Value::integer(1));
        Result b = eval_node(*n.kids[1], look);
        if (!b.value) return b;
        std::optional<bool> u = truthy(*b.value, &e);
        if (!u) return err(e);
        return ok(Value::integer(*u ? 1 : 0));
      }
      Result b = eval_node(*n.kids[1], look);
      if (!b.value) return b;
      if (n.str.size() == 1 && std::string_view("+-*/%").find(n.str[0]) != std::string_view::npos)
        return arith(n.str, *a.value, *b.value);
      return compare(n.str, *a.value, *b.value);
    }
    case Kind::Cond: {
      Result c = eval_node(*n.kids[0], look);
      if (!c.value) return c;
      std::string e;
      std::optional<bool> t = truthy(*c.value, &e);
      if (!t) return err(e);
      return eval_node(*n.kids[*t ? 1 : 2], look);
    }
    case Kind::In: {
      Result a = eval_node(*n.kids[0], look);
      if (!a.value) return a;
      for (size_t k = 1; k < n.kids.size(); ++k) {
        Result b = eval_node(*n.kids[k], look);
        if (!b.value) return b;
        Result eq = compare("==", *a.value, *b.value);
        if (!eq.value) return eq;
        if (eq.value->i) return ok(Value::integer(1));
      }
      return ok(Value::integer(0));
    }
    case Kind::Call: {
      std::vector<Value> args;
      for (const auto& k : n.kids) {
        Result a = eval_node(*k, look);
        if (!a.value) return a;
        if (a.value->is_tokens())
          return err(n.str + "() of the runtime token count T is not supported");
        args.push_back(*a.value);
      }
      if (n.str == "sqrt") return ok(Value::real(std::sqrt(as_float(args[0]))));
      if (n.str == "pow") return ok(Value::real(std::pow(as_float(args[0]), as_float(args[1]))));
      bool lt = compare("<", args[0], args[1]).value->i != 0;
      const Value& pick = (n.str == "min") == lt ? args[0] : args[1];
      if (args[0].is_int() && args[1].is_int()) return ok(pick);
      return ok(Value::real(as_float(pick)));
    }
  }
  return err("internal: bad expression node");
}

void collect_names(const Expr::Node& n, std::vector<std::string>* out) {
  if (n.kind == Kind::Name) {
    for (const auto& s : *out)
      if (s == n.str) return;
    out->push_back(n.str);
  }
  for (const auto& k : n.kids) collect_names(*k, out);
}

std::string print(const Expr::Node& n) {
  switch (n.kind) {
    case Kind::Const:
    case Kind::Name:
      return n.str;
    default:
      return "(...)";
  }
}

}  // namespace

bool Value::operator==(const Value& o) const {
  if (kind != o.kind) return false;
  return kind == Kind::Float ? f == o.f : i == o.i;
}

std::string Value::str() const {
  switch (kind) {
    case Kind::Int:
      return std::to_string(i);
    case Kind::Float:
      return fmt::format("{}", f);
    case Kind::Tokens:
      return i == 1 ? "T" : fmt::format("{}*T", i);
  }
  return "?";
}

Value Value::at_tokens(int64_t n) const {
  return is_tokens() ? Value::integer(i * n) : *this;
}

std::optional<bool> truthy(const Value& v, std::string* error) {
  if (v.is_tokens()) {
    if (error) *error = kTokensCompare;
    return std::nullopt;
  }
  return v.is_int() ? v.i != 0 : v.f != 0.0f;
}

Expr::Expr(std::shared_ptr<const Node> root, std::string text)
    : root_(std::move(root)), text_(std::move(text)) {}

std::optional<Expr> Expr::parse(std::string_view text, std::string* error) {
  Parser p(text);
  NodeP root = p.parse_all();
  if (!root) {
    if (error) *error = p.error();
    return std::nullopt;
  }
  return Expr(root, std::string(text));
}

Expr Expr::constant(Value v, std::string text) {
  return Expr(make(Kind::Const, text, {}, v), text);
}

Expr::Result Expr::eval(const Lookup& lookup) const {
  return eval_node(*root_, lookup);
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  collect_names(*root_, &out);
  return out;
}

std::optional<std::string> Expr::as_name() const {
  if (root_->kind == Kind::Name) return root_->str;
  return std::nullopt;
}

std::vector<std::pair<std::string, Expr>> Expr::product_factors() const {
  std::vector<std::pair<std::string, Expr>> out;
  if (root_->kind != Kind::Binary || root_->str != "*") return out;
  const NodeP& l = root_->kids[0];
  const NodeP& r = root_->kids[1];
  if (l->kind == Kind::Name) out.emplace_back(l->str, Expr(r, print(*r)));
  if (r->kind == Kind::Name) out.emplace_back(r->str, Expr(l, print(*l)));
  return out;
}

}  // namespace cke
