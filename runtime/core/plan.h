// The frozen plan of one phase: every step with its provider and bound arguments, and the
// placement of every activation in the arena.
//
// The plan is symbolic about memory (arena offsets, weight and state buffer indices), so
// the same plan renders as JIT glue (addresses baked in) and as C source (named offsets).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "resolver/resolve.h"

namespace cke {

struct PlanArg {
  enum class Kind : uint8_t { Arena, Weight, State, I64, F32, Runtime, RangeBegin, RangeEnd };
  Kind kind;
  int buffer = -1;       // Arena/Weight/State: Graph::buffers index
  std::string layout;    // Weight: "" (the file's blocks) or the repacked copy's layout
  size_t offset = 0;     // Arena: byte offset
  size_t row_bytes = 0;  // Arena in the output tail or a per-token step: + out_first * row_bytes
  size_t seq_bytes = 0;  // State with several sequences: + ctx->seq * seq_bytes (its cells)
  int64_t i64 = 0;       // I64: value; Runtime: multiplier
  float f32 = 0;
  RuntimeValue runtime{};
};

struct PlanStep {
  size_t node;                // Graph::nodes index (a fused step: the first of its nodes)
  size_t span = 1;            // the nodes [node, node + span) it computes
  Phase phase;                // the resolution it comes from (a batch plan takes both)
  const KernelMap* provider;  // the winner (its id is the symbol)
  KernelSymbol symbol;        // the function: linked (impl.function) or generated
  std::vector<PlanArg> args;  // in call_abi order
  int64_t split_total = 0;    // 0: not split; else [0, total) (x split_by if by_tokens)
  bool split_by_tokens = false;
  RuntimeValue split_by = RuntimeValue::NTokens;  // NOut in the output tail
  int64_t split_align = 1;
  bool out_tail = false;   // in the output tail (see PhasePlan)
  bool per_token = false;  // a batch plan's step run once per token (see PhasePlan)
  // Runs in one parallel region with the step before it: independent of every step of the
  // region (runtime/core/parallel_regions.h).
  bool with_previous = false;
};

// The output tail of a prefill plan: the longest run of last steps that work row by row
// (no KV state, no position, every arena buffer in rows of tokens) — in a decoder, from
// the last layer's output projection to the logits. It computes ctx->n_out rows from row
// ctx->out_first: every row (0, n_tokens) when the caller wants every position's logits,
// the last row (n_tokens - 1, 1) when it wants the next token's only — as llama.cpp's
// output ids do. Each tail step then runs with T = 1, so a contract whose arithmetic
// depends on T (the repacked gemm/gemv split) computes that row as a single token.
//
// A batch plan (batch = true) is one decode step of several sequences: token b of the call
// belongs to sequence ctx->seq_of[b] at position ctx->pos_of[b]. It is the decode phase's
// arithmetic, made of two kinds of steps:
//   - a node whose prefill and decode steps share one contract whose rows do not depend on
//     the token count (Contract::token_count_changes_arithmetic), and which reads no state
//     and no position, runs the prefill step once over all B rows: the weights of every such
//     linear are read once for B tokens. Same contract: the same bits per row as decode.
//   - a node whose decode provider says `decode_batch` (it computes each of T tokens as
//     its decode call of that token alone; e.g. the repacked linears, whose prefill
//     arithmetic differs) and which reads no state and no position runs its decode step
//     once over all B rows: its weights too are read once.
//   - every other node (rope, kv_store, attention; the rest of the linears whose decode
//     and prefill arithmetic differ) runs its decode step per token (per_token): the glue calls
//     cke_for_each_token, which gives the step a context of token b alone (its position,
//     its sequence's cells, out_first = b for its rows): the decode step as it runs alone.
struct PhasePlan {
  Phase phase;
  bool batch = false;
  int64_t max_tokens;  // 1 for decode; the sequences for a batch plan
  std::vector<PlanStep> steps;
  size_t arena_bytes = 0;
  size_t tokens_offset = 0;  // where the glue reads the input token ids (i32 [T])
  size_t logits_offset = 0;  // where it leaves the logits (f32 [n_vocab, T])
};

// The callable behind a provider: its linked symbol (impl.function) or the entry of its
// generated kernel (impl.generator). nullopt + *err when there is none.
using KernelLookup = std::function<std::optional<KernelSymbol>(const KernelMap&, std::string* err)>;

// The lookup of ahead-of-time kernels only (kernels/registry.h).
std::optional<KernelSymbol> linked_kernel(const KernelMap& m, std::string* err);

// Builds the plan of `phase` from the resolved steps. Errors (no callable for a provider,
// argument kinds that differ from the call_abi, a circuit without exactly one input and one
// output) are returned as text.
bool build_phase_plan(const Graph& graph, const Resolution& res, Phase phase, int64_t max_tokens,
                      const KernelLookup& lookup, PhasePlan* out, std::string* err);

// The batch plan of a graph with several sequences (see PhasePlan), for B <= max_tokens
// tokens. Errors (a per-token step whose arena buffer is not in rows of tokens) as text.
bool build_batch_plan(const Graph& graph, const Resolution& res, int64_t max_tokens,
                      const KernelLookup& lookup, PhasePlan* out, std::string* err);

// A cache of n_seq sequences: each state buffer holds n_seq blocks of its bytes, and every
// step addresses the block of ctx->seq (PlanArg::seq_bytes). Nothing changes for n_seq 1.
void address_sequences(const Graph& graph, int64_t n_seq, PhasePlan* p);

// "prefill", "decode" or "batch".
std::string_view plan_name(const PhasePlan& p);

// Bytes of a graph buffer with T = n_tokens.
size_t buffer_bytes(const GraphBuffer& b, int64_t n_tokens);

// A weight the plans read in a repacked layout: made once at load (the engine's repack step).
struct Repack {
  int buffer;          // Graph::buffers index of the weight
  std::string layout;  // kernels/formats/layouts.h
  bool operator<(const Repack& o) const {
    return buffer != o.buffer ? buffer < o.buffer : layout < o.layout;
  }
};
// Every (weight, layout) the plans' steps read repacked, in graph buffer order.
std::vector<Repack> plan_repacks(const PhasePlan& a, const PhasePlan& b);

// The nodes a step computes: "blk.3.attn_norm", or "blk.3.attn_norm+blk.3.wq.x_q8_0" for a
// fused step.
std::string step_label(const Graph& graph, size_t node, size_t span);

// Human-readable plan (cke-run --plan).
std::string plan_text(const Graph& graph, const PhasePlan& p);

}  // namespace cke
