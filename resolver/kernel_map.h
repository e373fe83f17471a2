// Kernel maps (schema cke.kernel_map/1): one provider per file, as data.
//
// A map says: this provider computes `op` under `contract`, with these ports (dtype,
// symbolic shape, layout, access, storage, aliasing), in these phases, on CPUs with these
// features, for shapes satisfying these predicates, called exactly like `call_abi`.
// docs/kernel-maps.md documents every field with an annotated real map.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/formats/dtype.h"
#include "kernels/registry.h"
#include "resolver/expr.h"
#include "resolver/features.h"
#include "resolver/load_error.h"
#include "resolver/types.h"

namespace cke {

// Lifecycle. Only `production` is eligible by default; `candidate` on opt-in
// (ResolveOptions::allow_candidate); `diagnostic` and `deprecated` never auto-select.
enum class Status : uint8_t { Production, Candidate, Diagnostic, Deprecated };
std::string_view status_name(Status s);
// Ranking: production 2, candidate 1, the others 0 (never eligible).
int lifecycle_rank(Status s);

enum class PortRole : uint8_t { Input, Weight, Output, State, Scratch };
enum class Access : uint8_t { Read, Write, ReadWrite };
enum class Storage : uint8_t { Arena, Weights, State, Scratch };
std::string_view role_name(PortRole r);  // "input", "weight", ... (call_abi source words)
std::string_view access_name(Access a);
std::string_view storage_name(Storage s);

struct PortSpec {
  std::string name;
  PortRole role;
  DType dtype;
  std::vector<Expr> shape;  // symbolic, ggml order (first dim contiguous)
  std::string layout;       // "row_major" (repacked layouts join the list with their repacks)
  Access access;
  Storage storage;
  std::string alias_of;                // this port IS that port's memory (in place)
  std::vector<std::string> may_alias;  // these ports may share this port's memory
  bool operator==(const PortSpec&) const = default;
};

struct ParamSpec {
  std::string name;
  ParamType type;
  bool operator==(const ParamSpec&) const = default;
};

// RuntimeValue (pos0 | n_tokens | n_kv) is the kernel ABI's: kernels/registry.h.
std::string_view runtime_value_name(RuntimeValue r);

// One call argument and where it comes from: "input:x", "dim:K", "runtime:pos0", ...
struct AbiArg {
  enum class Source : uint8_t { Port, Dim, Param, Runtime, RangeBegin, RangeEnd };
  Source source;
  std::string name;        // port, dim or param name
  PortRole role{};         // Port: which category the word named
  RuntimeValue runtime{};  // Runtime
  std::string text;        // as written
  bool operator==(const AbiArg&) const = default;
};

struct ParallelSpec {
  bool enabled = false;  // `parallel: none` → false
  std::string dim;       // a shape symbol or derived dim
  int64_t min_chunk = 1;
  bool changes_arithmetic = false;
  bool operator==(const ParallelSpec&) const = default;
};

struct ImplSpec {
  std::string function;   // ahead-of-time symbol (kernels/registry.h), or
  std::string generator;  // a JIT generator name with its parameters
  std::map<std::string, std::string> generator_params;
  bool operator==(const ImplSpec&) const = default;
};

struct Selection {
  Status status = Status::Candidate;
  int64_t priority = 0;
  std::vector<Phase> phases;
  // decode_batch: called in place of its decode step with T > 1 tokens of different
  // sequences (the batch plan, runtime/core/plan.h), the provider computes each token's
  // rows exactly as a decode call of that token alone, so the batch plan runs it once for
  // all tokens (the weights read once) instead of once per token. Needs the decode phase.
  bool decode_batch = false;
  bool supports(Phase p) const;
  bool operator==(const Selection&) const = default;
};

struct KernelMap {
  std::string file;
  std::string sha256;
  std::string id;
  std::string op;
  std::string interface;
  std::string contract;
  Selection selection;
  std::vector<Feature> isa;            // all required, in the order written
  std::vector<Expr> shape_predicates;  // over shape symbols, derived dims and params
  std::vector<PortSpec> ports;         // inputs, weights, outputs, state, scratch order
  std::vector<ParamSpec> params;
  std::vector<std::pair<std::string, Expr>> dims;  // derived dims, e.g. n: "E * T"
  ImplSpec impl;
  std::vector<AbiArg> call_abi;
  ParallelSpec parallel;
  std::string notes;

  const PortSpec* port(std::string_view name) const;
  const ParamSpec* param(std::string_view name) const;
  // Every name bound by port shapes, in first-use order.
  std::vector<std::string> shape_symbols() const;
  // Whether the shape predicates hold for these integer dims (e.g. {K, N}): for tests and
  // benchmarks that call a provider directly. A predicate naming an absent dim is false.
  bool admits(const std::map<std::string, int64_t>& dims) const;
  bool operator==(const KernelMap&) const = default;
};

// Parses one map document and checks everything that needs no other file (the registry
// checks contracts, symbols and interfaces across files). If `file` ends in .yaml its stem
// must equal the id.
std::optional<KernelMap> parse_kernel_map(std::string_view yaml, const std::string& file,
                                          std::vector<LoadError>* errors);
// A map file: one map (cke.kernel_map/1), or a family (cke.kernel_map_family/1: a template
// and an instance table, resolver/map_family.cpp) expanded into its maps, each with `file`
// "<path>:<line>". Errors name the file, the field and the instance.
std::vector<KernelMap> load_kernel_maps(const std::filesystem::path& path,
                                        std::vector<LoadError>* errors);
// The same from the file's bytes (`path` names it in errors and families' file checks).
std::vector<KernelMap> parse_kernel_maps(const std::string& text, const std::filesystem::path& path,
                                         std::vector<LoadError>* errors);
std::optional<KernelMap> load_kernel_map(const std::filesystem::path& path,
                                         std::vector<LoadError>* errors);

}  // namespace cke
