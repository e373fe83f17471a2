// The Registry: every kernel map and contract of a build, validated across files.
//
// Loading is strict and all-or-nothing: any error in any file (schema, unknown contract,
// duplicate id, a symbol missing from the binary, a call_abi whose argument kinds differ
// from the C++ signature, two maps of one interface with different ports) fails the load
// and every error is reported. Maps and contracts are kept sorted by id, so the order in
// which files are read never changes anything downstream.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/registry.h"
#include "resolver/contract.h"
#include "resolver/kernel_map.h"
#include "resolver/load_error.h"

namespace cke {

// Finds an ahead-of-time kernel symbol by name (kernels/registry.h: find_kernel_symbol).
// Injectable so tests can use fake symbols; an empty function skips the symbol checks.
using SymbolLookup = std::function<const KernelSymbol*(std::string_view)>;
// The real table of this binary.
SymbolLookup linked_symbols();

// A data file that went into the registry (or a plan): for the trace's provenance.
struct Provenance {
  std::string kind;  // "kernel_map", "contract", "circuit"
  std::string id;
  std::string file;
  std::string sha256;
};

class Registry {
 public:
  // Loads every *.yaml in each of `map_dirs` as a kernel map (except ratchet.yaml, the
  // audit's ratchet) and every *.yaml in `<dir>/contracts/` as a contract. The parsed values
  // come from `builtin_snapshot` if the files are the ones it was made of, else from the
  // snapshot cache, else from the YAML (resolver/registry_snapshot.h); the cross-file checks
  // run on every load.
  static std::optional<Registry> load(const std::vector<std::filesystem::path>& map_dirs,
                                      const SymbolLookup& symbols, std::vector<LoadError>* errors,
                                      std::string_view builtin_snapshot = {});
  // The same from explicit file lists (the order of the lists does not matter).
  static std::optional<Registry> load_files(
      const std::vector<std::filesystem::path>& map_files,
      const std::vector<std::filesystem::path>& contract_files, const SymbolLookup& symbols,
      std::vector<LoadError>* errors, std::string_view builtin_snapshot = {});
  // The built-in snapshot of the files in `map_dirs` (the build's cke-builtin-snapshot):
  // nullopt, with the errors, if any file does not parse.
  static std::optional<std::string> make_builtin_snapshot(
      const std::vector<std::filesystem::path>& map_dirs, std::vector<LoadError>* errors);
  // From already parsed values (tests); runs the cross-file checks.
  static std::optional<Registry> build(std::vector<KernelMap> maps, std::vector<Contract> contracts,
                                       const SymbolLookup& symbols, std::vector<LoadError>* errors);

  const std::vector<KernelMap>& maps() const { return maps_; }           // sorted by id
  const std::vector<Contract>& contracts() const { return contracts_; }  // sorted by id
  const KernelMap* find_map(std::string_view id) const;
  const Contract* find_contract(std::string_view id) const;
  // Providers of `op`, sorted by id.
  std::vector<const KernelMap*> maps_for_op(std::string_view op) const;
  // Every map and contract file, sorted by (kind, id).
  std::vector<Provenance> provenance() const;
  // Where load() took the parsed values from: "built-in snapshot", "cached snapshot" or
  // "parse" (empty for build()).
  const std::string& loaded_from() const { return loaded_from_; }

 private:
  std::string loaded_from_;
  std::vector<KernelMap> maps_;
  std::vector<Contract> contracts_;
};

}  // namespace cke
