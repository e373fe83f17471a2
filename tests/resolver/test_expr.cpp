// The expression language: values checked against hand-computed results and C++ itself.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "resolver/expr.h"

namespace cke {
namespace {

Expr::Result eval(const std::string& text, const std::map<std::string, Value>& env = {}) {
  std::string err;
  std::optional<Expr> e = Expr::parse(text, &err);
  EXPECT_TRUE(e.has_value()) << text << ": " << err;
  if (!e) return {};
  return e->eval([&](std::string_view n) -> std::optional<Value> {
    auto it = env.find(std::string(n));
    return it == env.end() ? std::nullopt : std::optional<Value>(it->second);
  });
}

int64_t ival(const std::string& text, const std::map<std::string, Value>& env = {}) {
  Expr::Result r = eval(text, env);
  EXPECT_TRUE(r.value && r.value->is_int()) << text << ": " << r.error;
  return r.value ? r.value->i : -999999;
}

float fval(const std::string& text, const std::map<std::string, Value>& env = {}) {
  Expr::Result r = eval(text, env);
  EXPECT_TRUE(r.value && r.value->is_float()) << text << ": " << r.error;
  return r.value ? r.value->f : NAN;
}

std::string parse_error(const std::string& text) {
  std::string err;
  EXPECT_FALSE(Expr::parse(text, &err).has_value()) << text;
  return err;
}

TEST(Expr, IntegerArithmeticFollowsC) {
  EXPECT_EQ(ival("1 + 2 * 3"), 7);
  EXPECT_EQ(ival("(1 + 2) * 3"), 9);
  EXPECT_EQ(ival("7 / 2"), 3);
  EXPECT_EQ(ival("-7 / 2"), -7 / 2);  // truncation toward zero
  EXPECT_EQ(ival("-7 % 3"), -7 % 3);
  EXPECT_EQ(ival("10 - 2 - 3"), 5);  // left associative
  EXPECT_EQ(ival("100 / 10 / 5"), 2);
  EXPECT_EQ(ival("--4"), 4);
  EXPECT_EQ(ival("2 * -3"), -6);
}

TEST(Expr, ComparisonsAndLogic) {
  EXPECT_EQ(ival("2 < 3 && 3 < 2"), 0);
  EXPECT_EQ(ival("2 < 3 || 3 < 2"), 1);
  EXPECT_EQ(ival("!(1 == 1)"), 0);
  EXPECT_EQ(ival("3 != 4"), 1);
  EXPECT_EQ(ival("4 >= 4 && 4 <= 4 && !(4 > 4)"), 1);
  EXPECT_EQ(ival("1 + 1 == 2"), 1);  // arithmetic binds tighter than comparison
  EXPECT_EQ(ival("0 && 1 / 0"), 0);  // short-circuit: the division never runs
  EXPECT_EQ(ival("1 || 1 / 0"), 1);
}

TEST(Expr, ConditionalIsRightAssociative) {
  EXPECT_EQ(ival("1 ? 2 : 3"), 2);
  EXPECT_EQ(ival("0 ? 1 : 0 ? 2 : 3"), 3);
  EXPECT_EQ(ival("0 ? 1 / 0 : 5"), 5);  // the branch not taken is not evaluated
}

TEST(Expr, MembershipList) {
  EXPECT_EQ(ival("head_dim in [64, 128]", {{"head_dim", Value::integer(128)}}), 1);
  EXPECT_EQ(ival("head_dim in [64, 128]", {{"head_dim", Value::integer(96)}}), 0);
  EXPECT_EQ(ival("x in [1 + 1]", {{"x", Value::integer(2)}}), 1);
}

TEST(Expr, FloatsAreBinary32LikeLlamaCpp) {
  // llama.cpp computes 1.0f / sqrtf(float(head_dim)) in float.
  for (int hd : {8, 64, 80, 96, 128, 256}) {
    const float want = 1.0f / std::sqrt(static_cast<float>(hd));
    EXPECT_EQ(fval("1.0 / sqrt(head_dim)", {{"head_dim", Value::integer(hd)}}), want) << hd;
  }
  EXPECT_EQ(fval("0.1 + 0.2"), 0.1f + 0.2f);
  EXPECT_EQ(fval("1e-5"), 1e-5f);
  EXPECT_EQ(fval("pow(2, 10)"), 1024.0f);
  EXPECT_EQ(fval("sqrt(16)"), 4.0f);
  EXPECT_EQ(fval("rf != 0.0 ? 1.0 / rf : 1.0", {{"rf", Value::real(4.0f)}}), 0.25f);
  EXPECT_EQ(fval("rf != 0.0 ? 1.0 / rf : 1.0", {{"rf", Value::real(0.0f)}}), 1.0f);
  EXPECT_EQ(fval("3 / 2.0"), 1.5f);  // mixed int/float is float
}

TEST(Expr, MinMaxKeepIntegers) {
  EXPECT_EQ(ival("min(3, 7)"), 3);
  EXPECT_EQ(ival("max(3, 7)"), 7);
  EXPECT_EQ(fval("max(3, 7.5)"), 7.5f);
}

TEST(Expr, Gemma3SlidingWindowPattern) {
  // "L % swa_pattern < swa_pattern - 1 ? n_swa : 0": with pattern 6, layers 0-4 local.
  for (int L = 0; L < 12; ++L) {
    std::map<std::string, Value> env = {{"L", Value::integer(L)},
                                        {"swa_pattern", Value::integer(6)},
                                        {"n_swa", Value::integer(512)}};
    EXPECT_EQ(ival("L % swa_pattern < swa_pattern - 1 ? n_swa : 0", env), (L % 6 < 5) ? 512 : 0);
  }
}

TEST(Expr, TokenMultiples) {
  std::map<std::string, Value> env = {{"T", Value::tokens(1)}, {"E", Value::integer(64)}};
  Expr::Result r = eval("E * T", env);
  ASSERT_TRUE(r.value);
  EXPECT_TRUE(r.value->is_tokens());
  EXPECT_EQ(r.value->i, 64);
  EXPECT_EQ(r.value->str(), "64*T");
  EXPECT_EQ(eval("T * 8 / 4", env).value->i, 2);
  EXPECT_EQ(eval("2 * T / T", env).value->i, 2);
  EXPECT_TRUE(eval("2 * T / T", env).value->is_int());
  EXPECT_TRUE(eval("T - T", env).value->is_int());
  EXPECT_EQ(Value::tokens(8).at_tokens(3), Value::integer(24));
  // What is not a multiple of T, or compares it, is an error.
  EXPECT_FALSE(eval("T * T", env).value);
  EXPECT_FALSE(eval("T + 1", env).value);
  EXPECT_FALSE(eval("T / 2", env).value);  // T is not known to be even
  Expr::Result c = eval("T >= 4", env);
  ASSERT_FALSE(c.value);
  EXPECT_NE(c.error.find("runtime token count"), std::string::npos) << c.error;
  EXPECT_FALSE(eval("sqrt(T)", env).value);
  EXPECT_FALSE(eval("T * 1.5", env).value);
}

TEST(Expr, EvaluationErrors) {
  Expr::Result r = eval("a + 1");
  EXPECT_FALSE(r.value);
  EXPECT_EQ(r.unbound, "a");
  EXPECT_NE(r.error.find("unknown name 'a'"), std::string::npos);
  EXPECT_NE(eval("1 / 0").error.find("division by zero"), std::string::npos);
  EXPECT_NE(eval("5 % 0").error.find("division by zero"), std::string::npos);
  EXPECT_NE(eval("9223372036854775807 + 1").error.find("overflow"), std::string::npos);
  EXPECT_NE(eval("4611686018427387904 * 4").error.find("overflow"), std::string::npos);
}

TEST(Expr, ParseErrorsNameTheColumn) {
  EXPECT_NE(parse_error("1 +").find("end of expression"), std::string::npos);
  EXPECT_NE(parse_error("1 2").find("column 3"), std::string::npos);
  EXPECT_NE(parse_error("foo(1)").find("unknown function 'foo'"), std::string::npos);
  EXPECT_NE(parse_error("a = b").find("unexpected '='"), std::string::npos);
  EXPECT_NE(parse_error("(1 + 2").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("sqrt(1, 2)").find("takes 1 argument"), std::string::npos);
  EXPECT_NE(parse_error("1 ? 2").find("expected ':'"), std::string::npos);
  EXPECT_NE(parse_error("12ab").find("malformed number"), std::string::npos);
  EXPECT_NE(parse_error("x in 3").find("expected '['"), std::string::npos);
  EXPECT_NE(parse_error("K %% 32").find("unexpected '%'"), std::string::npos);
  parse_error("");
  parse_error("1e");
}

TEST(Expr, NamesAndStructure) {
  std::string err;
  Expr e = *Expr::parse("n_head * head_dim + n_head", &err);
  EXPECT_EQ(e.names(), (std::vector<std::string>{"n_head", "head_dim"}));
  EXPECT_FALSE(e.as_name());
  EXPECT_EQ(Expr::parse("K", &err)->as_name().value(), "K");
  std::vector<std::pair<std::string, Expr>> f =
      Expr::parse("head_dim * n_kv", &err)->product_factors();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].first, "head_dim");
  EXPECT_EQ(f[1].first, "n_kv");
  EXPECT_EQ(f[0].second.as_name().value(), "n_kv");
  EXPECT_TRUE(Expr::parse("a + b", &err)->product_factors().empty());
  EXPECT_EQ(e.text(), "n_head * head_dim + n_head");
}

}  // namespace
}  // namespace cke

namespace cke {
namespace {

TEST(Expr, HostileInputIsAnErrorNotACrash) {
  std::string err;
  EXPECT_FALSE(Expr::parse(std::string(100000, '('), &err));
  EXPECT_NE(err.find("nested too deeply"), std::string::npos) << err;
  // Appended, not "a" + "b": GCC 12 warns falsely (-Warray-bounds) on the inlined operator+.
  std::string minus(100000, '-'), nested(100, '(');
  minus += "1";
  nested += "1";
  nested.append(100, ')');
  EXPECT_FALSE(Expr::parse(minus, &err));
  EXPECT_TRUE(Expr::parse(nested, &err));
  // A long flat chain is as deep a tree as nesting (found by fuzz_circuit: 1+1+...+1 of 8 KB
  // overflowed the stack in eval, names() and the destructor).
  std::string chain = "1";
  for (int i = 0; i < 100000; ++i) chain += i % 2 ? "+x" : "*1";
  EXPECT_FALSE(Expr::parse(chain, &err));
  EXPECT_NE(err.find("more than 500 nested operations"), std::string::npos) << err;
  for (const char* op : {"+", "*", "&&", "||", "<", "=="}) {
    std::string c = "1";
    for (int i = 0; i < 5000; ++i) c += std::string(op) + "1";
    EXPECT_FALSE(Expr::parse(c, &err)) << op;
  }
  chain = "1";
  for (int i = 0; i < 400; ++i) chain += "+1";
  std::optional<Expr> ok = Expr::parse(chain, &err);
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(ok->eval(nullptr).value, Value::integer(401));
  Expr::Result r =
      Expr::parse("T % 0", &err)->eval([](std::string_view) { return Value::tokens(1); });
  EXPECT_FALSE(r.value);
}

}  // namespace
}  // namespace cke
