// libFuzzer target for the circuit loader (resolver/circuit.cpp) and the expression language
// (resolver/expr.cpp). Each input is used twice:
//   - as one YAML circuit document: it loads, and then every expression in it (hparam
//     defaults, derived values, layers, checks, shapes, views, params, `when`) is evaluated
//     with a lookup that binds names to hostile values (int64 extremes, NaN, inf, c*T, or
//     unbound); or it fails with errors that name the file and say why;
//   - as one expression: it parses (and is evaluated the same way) or fails with a message.
//
//   fuzz_circuit CORPUS_DIR tests/fuzz/corpus/circuit -max_len=16384   (docs/fuzzing.md)
#include <cstdint>
#include <string>
#include <vector>

#include "resolver/circuit.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_expr.h"

using namespace cke;
using cke::fuzz::exercise_expr;

namespace {

void check_circuit(const Circuit& c, uint8_t salt) {
  FUZZ_CHECK(!c.architecture.empty());
  for (const HparamSpec& h : c.hparams)
    if (h.default_value) exercise_expr(*h.default_value, salt);
  for (const auto& [name, e] : c.derived) exercise_expr(e, salt);
  exercise_expr(c.layers, salt);
  for (const Expr& e : c.checks) exercise_expr(e, salt);
  for (const WeightSpec& w : c.weights) {
    FUZZ_CHECK(c.weight(w.name) == &w);
    if (!w.fallback.empty()) FUZZ_CHECK(c.weight(w.fallback) != nullptr);
    for (const Expr& e : w.shape) exercise_expr(e, salt);
  }
  for (const BufferSpec& b : c.buffers) {
    FUZZ_CHECK(c.buffer(b.name) == &b);
    (void)buffer_kind_name(b.kind);
    for (const Expr& e : b.shape) exercise_expr(e, salt);
  }
  for (const auto* nodes : {&c.header, &c.layer, &c.footer}) {
    for (const NodeSpec& n : *nodes) {
      for (const PortEdge& e : n.ports) {
        FUZZ_CHECK(c.weight(e.buffer) || c.buffer(e.buffer));
        if (e.view)
          for (const Expr& x : *e.view) exercise_expr(x, salt);
      }
      for (const auto& [name, e] : n.params) exercise_expr(e, salt);
      if (n.when) exercise_expr(*n.when, salt);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const uint8_t salt = size ? data[0] : 0;

  std::vector<LoadError> errors;
  const std::optional<Circuit> c = parse_circuit(text, "fuzz.yaml", &errors);
  if (fuzz::debug()) std::fputs(format_errors(errors).c_str(), stderr);
  for (const LoadError& e : errors) {
    FUZZ_CHECK(e.file == "fuzz.yaml" && !e.reason.empty());
    (void)e.str();
  }
  FUZZ_CHECK(c.has_value() == errors.empty());
  if (c) check_circuit(*c, salt);

  std::string err;
  const std::optional<Expr> e = Expr::parse(text, &err);
  FUZZ_CHECK(e.has_value() == err.empty());
  if (fuzz::debug() && !e) std::fprintf(stderr, "expression: %s\n", err.c_str());
  if (e) {
    FUZZ_CHECK(e->text() == text);
    exercise_expr(*e, salt);
  }
  return 0;
}
