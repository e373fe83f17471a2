// The resolver: mechanical, fail-closed, traced (ARCHITECTURE.md §4).
//
// For every graph node and phase a Query {op, variant, profile, port dtypes / shapes /
// layouts, params} goes through fixed stages:
//   1. gather the providers of the op;
//   2. derive the ONE contract for (op, variant, profile, port dtypes) from the contract
//      table (none or several: fault); providers of other contracts are rejected with
//      `contract_mismatch` — priority never compares different arithmetic;
//   3. filters, in this order, each rejection with a stable reason code:
//        phase_unsupported              the map's selection.phases lacks the phase
//        status_not_production:<s>      only production is eligible (candidate on opt-in)
//        dtype_mismatch:<port>          (ports a contract leaves `any`)
//        layout_mismatch:<port>
//        shape_mismatch:<port>          the port's symbolic shape does not bind
//        shape_unsupported:<predicate>  a requires.shape predicate (or derived dim) fails,
//                                       or depends on the runtime token count
//        isa_unsupported:<feature>      first required feature the HostCaps lack
//        alias_unsafe:<port>            two ports share a buffer (one written) and the map
//                                       declares neither alias_of nor may_alias for it
//        alias_required:<port>          the map declares alias_of but the buffers differ
//   4. rank survivors by (lifecycle, priority): production above candidate, then higher
//      priority; a tie at the top is a fault; no survivor is a fault naming every
//      rejection and the closest provider;
//   5. bind the winner's call_abi to buffers, constants and runtime values → a Step.
// Then, per phase, the fusion pass (fused contracts, contract.h `composes`): where
// consecutive nodes have exactly a fused contract's stage contracts in order, and the ports
// its stages share name the same buffers, the fused contract's providers go through the
// same stages 1-4 for a query of the pattern's buffers. The fused winner replaces the
// nodes' steps when it ranks above every winner it replaces (lifecycle, then priority: the
// fused contract is those contracts' arithmetic, one equivalence group); level with one of
// them is a tie fault; below, or no eligible fused provider, keeps the nodes' steps, traced
// with the reason. Matches are taken in graph order; a node is in at most one fused step.
// Nodes that ask the same question (every input of stages 1-5 alike but the node and the
// buffers' numbers; which ports share a buffer is part of it) are decided once: the layers
// of a model share their decisions and candidates, each node bound to its own buffers.
// No fallbacks, no model names, no special cases by op. Decode has T = 1 (constants);
// prefill leaves T to the run time (runtime:n_tokens, at most Graph::max_tokens).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/graph.h"
#include "resolver/host_caps.h"
#include "resolver/registry.h"

namespace cke {

struct ResolveOptions {
  // Let `candidate` providers compete (still ranked below every production provider).
  // Off by default: a plan for users runs production kernels only. For bring-up and
  // benchmarking new providers (cke-run --allow-candidate).
  bool allow_candidate = false;
  // Let providers read weights in a repacked layout (a copy made at load,
  // kernels/formats/layouts.h). Off: only the file's row-major blocks (cke-run --no-repack).
  bool allow_repack = true;
  std::vector<Phase> phases = {Phase::Prefill, Phase::Decode};
};

struct QueryPort {
  std::string name;
  int buffer;  // index into Graph::buffers
  DType dtype;
  std::vector<Value> shape;  // decode: all Int; prefill: may hold c*T
  std::string layout;
};

struct Query {
  size_t node;
  Phase phase;
  std::string op, variant, profile;
  std::vector<QueryPort> ports;
  std::vector<std::pair<std::string, Value>> params;
  // The token counts one run of this phase's plan may see: decode 1; prefill 2 ..
  // max(2, Graph::max_tokens) (a single token always runs the decode plan).
  int64_t min_tokens = 1, max_tokens = 1;
};

enum class Stage : uint8_t { Contract, Phase, Status, Dtype, Layout, Shape, Isa, Alias, Rank };
std::string_view stage_name(Stage s);

struct Candidate {
  std::string id;
  Status status;
  int64_t priority;
  Stage stage;  // where it was rejected; Rank for the survivors
  bool eligible = false;
  bool winner = false;
  std::string reason;  // stable code ("dtype_mismatch:w"); empty when eligible
  std::string detail;  // in words
};

// A decision's candidates: made once, read-only after, shared by the copies of the
// decision (resolve answers one question for every node that asks it).
class Candidates {
 public:
  Candidates() = default;
  explicit Candidates(std::vector<Candidate> all)
      : all_(std::make_shared<const std::vector<Candidate>>(std::move(all))) {}
  const std::vector<Candidate>& all() const { return all_ ? *all_ : none(); }
  auto begin() const { return all().begin(); }
  auto end() const { return all().end(); }
  size_t size() const { return all().size(); }
  bool empty() const { return all().empty(); }
  const Candidate& operator[](size_t i) const { return all()[i]; }

 private:
  static const std::vector<Candidate>& none() {
    static const std::vector<Candidate> empty;
    return empty;
  }
  std::shared_ptr<const std::vector<Candidate>> all_;
};

struct Decision {
  Query query;
  std::string contract;                        // the derived contract; empty if none
  std::vector<std::string> contract_matches;   // every contract that matched (0, 1 or more)
  Candidates candidates;                       // all providers of the op: priority desc, id
  std::string winner;                          // empty on a fault
  std::map<std::string, std::string> repacks;  // winner's ports read repacked: port -> layout
  // Decode: the winner says selection.decode_batch and its predicates hold for every T of
  // a chunk (Step::batch_args), so a batch plan runs it once over all tokens.
  bool decode_batch = false;
  std::string fault;  // "" | no_contract | ambiguous_contract | params_mismatch | no_provider | tie
  std::string message;  // the fault in readable form, with a hint
};

struct BoundArg {
  enum class Kind : uint8_t { Buffer, I64, F32, Runtime, RangeBegin, RangeEnd };
  Kind kind;
  std::string source;      // the call_abi entry, e.g. "dim:K"
  int buffer = -1;         // Buffer: index into Graph::buffers
  std::string layout;      // Buffer: "" or the repacked layout the provider reads it in
  int64_t i64 = 0;         // I64: the value; Runtime: multiplier (arg = runtime value * i64)
  float f32 = 0;           // F32
  RuntimeValue runtime{};  // Runtime: pos0 | n_tokens | n_kv (= pos0 + n_tokens)
};

struct ParallelSplit {
  bool enabled = false;
  std::string dim;
  Value extent;  // Int, or c*T in prefill
  int64_t min_chunk = 1;
};

struct Step {
  size_t node;      // the first node it computes
  size_t span = 1;  // the nodes [node, node + span) it computes (> 1: a fused step)
  Phase phase;
  const KernelMap* provider;  // points into the Registry (keep it alive)
  const Contract* contract;
  std::vector<BoundArg> args;  // in call_abi order
  ParallelSplit parallel;
  // A decode step whose provider says selection.decode_batch: its args for a call with T
  // tokens of different sequences (dims over T bound at run time, as in prefill), for the
  // batch plan (runtime/core/plan.h). Empty otherwise, or if its shape predicates do not
  // hold for every T of the chunk.
  std::vector<BoundArg> batch_args;
};

// One match of a fused contract's pattern in one phase and what the resolver made of it.
struct Fusion {
  size_t node = 0, span = 0;  // the nodes [node, node + span) the pattern covers
  Decision decision;          // the fused query (node = the first) and its candidates
  // fused | outranked (a replaced winner ranks above the fused one) | no_provider | tie
  std::string outcome;
  std::string detail;  // in words: the ranks compared, or the decision's fault
};

struct Resolution {
  std::vector<Decision> decisions;    // per phase (options order), nodes in graph order
  std::vector<Step> steps;            // the winners, in the same order (fused steps in place)
  std::vector<size_t> faults;         // indices into decisions
  std::vector<Fusion> fusions;        // per phase, in graph order
  std::vector<size_t> fusion_faults;  // indices into fusions (outcome tie)

  bool ok() const { return faults.empty() && fusion_faults.empty(); }
  std::vector<const Step*> steps_for(Phase p) const;
  // Every fault's message, separated by blank lines.
  std::string fault_report() const;
};

Resolution resolve(const Graph& graph, const Registry& registry, const HostCaps& caps,
                   const ResolveOptions& options = {});

// The query of one node in one phase (decode: T = 1 in every shape).
Query make_query(const Graph& g, size_t node, Phase phase);
// Stages 1-5 for one query, query_at(phase): the decision, and the winner's bound step in
// *step. query_at(Prefill) is also asked for a decode winner's batch_args (T free).
using QueryAt = std::function<Query(Phase)>;
Decision decide_query(const Graph& graph, const Registry& registry, const HostCaps& caps,
                      const ResolveOptions& options, const QueryAt& query_at, Phase phase,
                      std::optional<Step>* step);
// Why contract `c` does not fit the query (op, variant, profile, port dtypes, `when`); empty
// if it does.
std::string contract_misfit(const Contract& c, const Query& q);

}  // namespace cke
