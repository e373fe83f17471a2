// libFuzzer target for the kernel-map loader (resolver/kernel_map.cpp, map families in
// resolver/map_family.cpp): any byte string is one YAML document. It either loads into maps
// whose cross references hold, or fails with errors that each name the file and say why.
//
//   fuzz_kernel_map CORPUS_DIR tests/fuzz/corpus/kernel_map -max_len=16384   (docs/fuzzing.md)
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "resolver/data_file.h"
#include "resolver/kernel_map.h"
#include "resolver/yaml_fields.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_expr.h"

using namespace cke;
using cke::fuzz::exercise_expr;

namespace {

void check_errors(const std::vector<LoadError>& errors, const std::string& file) {
  if (fuzz::debug()) std::fputs(format_errors(errors).c_str(), stderr);
  for (const LoadError& e : errors) {
    FUZZ_CHECK(e.file.rfind(file, 0) == 0);  // the file, or "<file>:<line>" of an instance
    FUZZ_CHECK(!e.reason.empty());
    FUZZ_CHECK(e.line >= 0);
    (void)e.str();
  }
}

// What a loaded map promises the registry and the resolver.
void check_map(const KernelMap& m, uint8_t salt) {
  FUZZ_CHECK(is_data_id(m.id) && detail::is_identifier(m.id));
  FUZZ_CHECK(!m.ports.empty() && !m.selection.phases.empty());
  FUZZ_CHECK(m.impl.function.empty() != m.impl.generator.empty());
  for (const PortSpec& p : m.ports) {
    FUZZ_CHECK(m.port(p.name) == &p);
    for (const Expr& e : p.shape) exercise_expr(e, salt);
    if (!p.alias_of.empty()) FUZZ_CHECK(m.port(p.alias_of) != nullptr);
    for (const std::string& q : p.may_alias) FUZZ_CHECK(m.port(q) != nullptr);
  }
  // call_abi binds every port exactly once.
  for (const PortSpec& p : m.ports) {
    int uses = 0;
    for (const AbiArg& a : m.call_abi) uses += a.source == AbiArg::Source::Port && a.name == p.name;
    FUZZ_CHECK(uses == 1);
  }
  for (const AbiArg& a : m.call_abi) {
    if (a.source == AbiArg::Source::Param) FUZZ_CHECK(m.param(a.name) != nullptr);
    if (a.source == AbiArg::Source::Runtime) (void)runtime_value_name(a.runtime);
  }
  for (const auto& [name, e] : m.dims) exercise_expr(e, salt);
  for (const Expr& e : m.shape_predicates) exercise_expr(e, salt);
  (void)status_name(m.selection.status);
  (void)lifecycle_rank(m.selection.status);
  // admits() over the shape symbols bound to small values, and with one missing.
  std::map<std::string, int64_t> dims;
  int64_t v = 1 + salt % 64;
  for (const std::string& s : m.shape_symbols()) dims[s] = v++ * 8;
  for (const ParamSpec& p : m.params) dims[p.name] = salt;
  for (const auto& d : m.dims) dims[d.first] = v++;
  (void)m.admits(dims);
  if (!dims.empty()) {
    dims.erase(dims.begin());
    (void)m.admits(dims);
  }
}

// The value of a top-level `family:` line when it is an identifier of at most 64 characters
// (the family's file must be named after it), else "fuzz".
std::string family_stem(std::string_view text) {
  const size_t at = text.find("\nfamily:");
  if (at == std::string_view::npos) return "fuzz";
  size_t b = at + 8;
  while (b < text.size() && text[b] == ' ') ++b;
  size_t e = b;
  while (e < text.size() && text[e] != '\n' && text[e] != ' ' && text[e] != '#') ++e;
  const std::string name(text.substr(b, e - b));
  return detail::is_identifier(name) && name.size() <= 64 ? name : "fuzz";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const uint8_t salt = size ? data[size / 2] : 0;

  // One map, in memory (no file name to match the id against).
  std::vector<LoadError> errors;
  std::optional<KernelMap> m = parse_kernel_map(text, "fuzz", &errors);
  check_errors(errors, "fuzz");
  FUZZ_CHECK(m.has_value() == errors.empty());
  if (m) check_map(*m, salt);

  // A family needs its file: load_kernel_maps reads it from the scratch directory.
  if (text.find("cke.kernel_map_family/1") != std::string_view::npos) {
    const std::filesystem::path path =
        fuzz::scratch_dir("kernel_map") / (family_stem(text) + ".yaml");
    FUZZ_CHECK(fuzz::write_file(path, text));
    errors.clear();
    const std::vector<KernelMap> maps = load_kernel_maps(path, &errors);
    check_errors(errors, path.string());
    if (errors.empty()) FUZZ_CHECK(!maps.empty());
    for (const KernelMap& k : maps) check_map(k, salt);
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  return 0;
}
