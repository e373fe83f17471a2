// libFuzzer target for the numerical-contract loader (resolver/contract.cpp): any byte
// string is one YAML document; it loads into a contract whose fields are what the schema
// allows, or fails with errors that name the file and say why.
//
//   fuzz_contract CORPUS_DIR tests/fuzz/corpus/contract -max_len=8192   (docs/fuzzing.md)
#include <cstdint>
#include <string>
#include <vector>

#include "resolver/contract.h"
#include "resolver/data_file.h"
#include "resolver/yaml_fields.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_expr.h"

using namespace cke;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const uint8_t salt = size ? data[size / 2] : 0;
  std::vector<LoadError> errors;
  const std::optional<Contract> c = parse_contract(text, "fuzz.yaml", &errors);
  if (fuzz::debug()) std::fputs(format_errors(errors).c_str(), stderr);
  for (const LoadError& e : errors) {
    FUZZ_CHECK(e.file == "fuzz.yaml" && !e.reason.empty());
    (void)e.str();
  }
  FUZZ_CHECK(c.has_value() == errors.empty());
  if (!c) return 0;

  FUZZ_CHECK(is_data_id(c->id) && detail::is_identifier(c->op) && !c->ports.empty());
  for (const ContractPort& p : c->ports) FUZZ_CHECK(c->port(p.name) != nullptr);
  for (const ContractParam& p : c->params) FUZZ_CHECK(c->param(p.name) != nullptr);
  for (const ContractConvert& k : c->converts) {
    const ContractPort* p = c->port(k.port);
    FUZZ_CHECK(p && p->dtype && is_data_id(k.via));
  }
  FUZZ_CHECK(c->composes.empty() || (c->composes.size() >= 2 && c->converts.empty()));
  for (const ContractStage& st : c->composes)
    for (const auto& [from, to] : st.ports) FUZZ_CHECK(c->port(to) != nullptr && !from.empty());
  switch (c->comparison.kind) {
    case Comparison::Kind::BitExact:
      break;
    case Comparison::Kind::Ulp:
      FUZZ_CHECK(c->comparison.bound >= 1);
      break;
    case Comparison::Kind::Rel:
      FUZZ_CHECK(c->comparison.bound > 0 && c->comparison.bound < 1);
      break;
  }
  FUZZ_CHECK(!c->comparison.str().empty());
  if (c->when) fuzz::exercise_expr(*c->when, salt);
  return 0;
}
