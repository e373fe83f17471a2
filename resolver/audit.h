// cke-audit: the checks CI runs over the data of the tree.
//
// - every kernel map and contract loads (schema, cross-file rules, symbols when linked);
// - every contract's reference provider exists and implements it (Registry);
// - every circuit loads, its architecture is its file name, every op instance has a
//   contract for its (op, variant, profile), and it names no provider id;
// - parity tests: a provider has one when some tests/**/*.cpp defines a gtest named after
//   its id (TEST(<Suite>, <provider_id>)); missing ones are warnings;
// - the ratchet (kernel_maps/ratchet.yaml): id sets that may only grow (providers with
//   parity tests, production providers) and, per ISA level, the set of ops (with their
//   variant: "glu.swiglu") without a production provider, which may only shrink. Only regressions
//   fail; improvements are reported so the ratchet can be tightened with --update-ratchet.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "resolver/registry.h"

namespace cke {

struct AuditOptions {
  std::filesystem::path root;   // repository root: kernel_maps/, circuits/, tests/
  SymbolLookup symbols;         // empty: skip symbol checks
  bool update_ratchet = false;  // rewrite kernel_maps/ratchet.yaml to the current state
  // Optional: a directory of GoogleTest XML reports of the run (GTEST_OUTPUT=xml:dir/). Then
  // a parity test counts only if it ran and did not fail (a skip, e.g. for an ISA the host
  // lacks, is not a failure); without it, only the static check of the sources applies.
  std::filesystem::path results;
};

struct RatchetState {
  std::vector<std::string> parity_tested;                                  // may only grow
  std::vector<std::string> production;                                     // may only grow
  std::map<std::string, std::vector<std::string>> ops_without_production;  // may only shrink
  // Per ISA level, the contracts whose only production provider runnable there is the
  // scalar reference kernel (the contract's `reference`): may only shrink.
  std::map<std::string, std::vector<std::string>> reference_only;
};

struct AuditReport {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  size_t n_maps = 0, n_contracts = 0, n_circuits = 0;
  std::vector<std::string> missing_parity;  // providers without a parity test
  RatchetState current;
  std::vector<std::string> ratchet_violations;    // also in errors
  std::vector<std::string> ratchet_improvements;  // also in notes

  bool ok() const { return errors.empty(); }
  nlohmann::json to_json() const;
  std::string to_text() const;
};

AuditReport run_audit(const AuditOptions& options);

// Architecture names (the circuits' `architecture`) spelled in code outside comments under
// resolver/, jit/, kernels/, runtime/ (format libraries exempt: see audit.cpp). Each hit is
// "file:line: ...".
std::vector<std::string> find_architecture_names(const std::filesystem::path& root,
                                                 const std::set<std::string>& archs);
// The gtest names (second macro argument) defined in the *.cpp files under `dir`.
std::vector<std::string> scan_test_names(const std::filesystem::path& dir);

// Test names (the second TEST argument) in the GoogleTest XML reports of `dir`: those that
// ran without a failure (completed or skipped) and those that failed. A name is failed if
// any report says so.
struct TestResults {
  std::set<std::string> ok, failed;
  size_t reports = 0;
};
TestResults scan_test_results(const std::filesystem::path& dir);
// Reads / writes the ratchet file (schema cke.ratchet/1).
std::optional<RatchetState> load_ratchet(const std::filesystem::path& path,
                                         std::vector<LoadError>* errors);
std::string format_ratchet(const RatchetState& r);

}  // namespace cke
