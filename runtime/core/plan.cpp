#include "runtime/core/plan.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "runtime/core/memory_plan.h"
#include "runtime/core/parallel_regions.h"

namespace cke {

size_t buffer_bytes(const GraphBuffer& b, int64_t n_tokens) {
  int64_t ne0 = 1, rest = 1;
  for (size_t i = 0; i < b.shape.size(); ++i) {
    const int64_t d = b.shape[i].at_tokens(n_tokens).i;
    (i == 0 ? ne0 : rest) *= d;
  }
  return row_bytes(b.dtype, ne0) * size_t(rest);
}

static bool in_arena(BufferKind k) {
  return k == BufferKind::Input || k == BufferKind::Activation || k == BufferKind::Output;
}

std::optional<KernelSymbol> linked_kernel(const KernelMap& m, std::string* err) {
  if (m.impl.function.empty()) {
    *err = m.file + ": impl.generator '" + m.impl.generator + "' needs a kernel generator";
    return std::nullopt;
  }
  const KernelSymbol* s = find_kernel_symbol(m.impl.function);
  if (!s) {
    *err = m.file + ": impl.function '" + m.impl.function + "' is not linked into this binary";
    return std::nullopt;
  }
  return *s;
}

// The callable must take exactly the call_abi's arguments, kind for kind.
static bool check_abi(const KernelMap& m, const KernelSymbol& k, std::string* err) {
  bool ok = k.n_args == m.call_abi.size();
  for (size_t i = 0; ok && i < m.call_abi.size(); ++i) {
    const AbiArg& a = m.call_abi[i];
    ArgKind want = ArgKind::I64;
    if (a.source == AbiArg::Source::Port) want = ArgKind::Ptr;
    if (a.source == AbiArg::Source::Param) {
      const ParamSpec* p = m.param(a.name);
      want = p && p->type == ParamType::F32 ? ArgKind::F32 : ArgKind::I64;
    }
    ok = k.args[i] == want;
  }
  if (!ok) *err = m.file + ": the kernel's arguments differ from call_abi";
  return ok;
}

// Bytes of one token row of b, or 0 when b is not a whole number of token rows. A token row
// is a buffer's last dim being T itself: a buffer of c*T rows (c > 1) holds c rows per token in
// an order the plan does not know (the pairs of a mixture of experts, grouped by expert).
static size_t token_row_bytes(const GraphBuffer& b) {
  if (b.shape.empty() || !b.shape.back().is_tokens() || b.shape.back().i != 1) return 0;
  const size_t one = buffer_bytes(b, 1), two = buffer_bytes(b, 2);
  return one > 0 && two == 2 * one ? one : 0;
}

// PhasePlan's output tail: from the last step back while steps are row-wise.
static void mark_output_tail(const Graph& graph, PhasePlan* p) {
  size_t first = p->steps.size();
  while (first > 0) {
    const PlanStep& s = p->steps[first - 1];
    bool row_wise = true;
    for (const PlanArg& a : s.args) {
      if (a.kind == PlanArg::Kind::State) row_wise = false;
      if (a.kind == PlanArg::Kind::Runtime && a.runtime != RuntimeValue::NTokens) row_wise = false;
      if (a.kind == PlanArg::Kind::Arena && token_row_bytes(graph.buffers[a.buffer]) == 0)
        row_wise = false;
    }
    if (!row_wise) break;
    --first;
  }
  for (size_t i = first; i < p->steps.size(); ++i) {
    PlanStep& s = p->steps[i];
    s.out_tail = true;
    s.split_by = RuntimeValue::NOut;
    for (PlanArg& a : s.args) {
      if (a.kind == PlanArg::Kind::Arena) a.row_bytes = token_row_bytes(graph.buffers[a.buffer]);
      if (a.kind == PlanArg::Kind::Runtime) a.runtime = RuntimeValue::NOut;
    }
  }
}

namespace {

struct PlanSource {
  const Step* step;
  bool per_token;
  bool batch_args = false;  // a decode step over all B tokens: step->batch_args
};

// The plan of `steps` in order (build_phase_plan, build_batch_plan).
bool build_plan(const Graph& graph, const std::vector<PlanSource>& steps, PhasePlan p,
                const KernelLookup& lookup, PhasePlan* out, std::string* err) {
  const int64_t max_tokens = p.max_tokens;
  int input = -1, output = -1;
  for (size_t i = 0; i < graph.buffers.size(); ++i) {
    const BufferKind k = graph.buffers[i].kind;
    int* slot = k == BufferKind::Input ? &input : k == BufferKind::Output ? &output : nullptr;
    if (!slot) continue;
    if (*slot != -1) {
      *err = graph.circuit_file +
             ": the runtime drives circuits with exactly one input (token ids) and one output "
             "(logits)";
      return false;
    }
    *slot = int(i);
  }
  if (input < 0 || output < 0 || graph.buffers[input].dtype != DType::I32 ||
      graph.buffers[output].dtype != DType::F32) {
    *err = graph.circuit_file + ": needs one i32 input (token ids) and one f32 output (logits)";
    return false;
  }

  // 1. Steps and their arena uses (merged per buffer: an in-place port pair is one use).
  std::vector<std::vector<BufferUse>> uses;
  std::vector<std::vector<int>> use_buffer;
  for (const PlanSource& src : steps) {
    const Step* s = src.step;
    PlanStep ps;
    ps.node = s->node;
    ps.span = s->span;
    ps.phase = s->phase;
    ps.per_token = src.per_token;
    ps.provider = s->provider;
    std::optional<KernelSymbol> k = lookup(*s->provider, err);
    if (!k || !check_abi(*s->provider, *k, err)) return false;
    ps.symbol = *k;
    std::vector<BufferUse> u;
    std::vector<int> ub;
    const std::vector<BoundArg>& args = src.batch_args ? s->batch_args : s->args;
    for (size_t a = 0; a < args.size(); ++a) {
      const BoundArg& b = args[a];
      PlanArg pa{};
      switch (b.kind) {
        case BoundArg::Kind::Buffer: {
          const GraphBuffer& gb = graph.buffers[b.buffer];
          pa.buffer = b.buffer;
          pa.layout = b.layout;
          pa.kind = in_arena(gb.kind)               ? PlanArg::Kind::Arena
                    : gb.kind == BufferKind::Weight ? PlanArg::Kind::Weight
                                                    : PlanArg::Kind::State;
          if (pa.kind == PlanArg::Kind::Arena) {
            const PortSpec* port = s->provider->port(s->provider->call_abi[a].name);
            const bool r = port->access != Access::Write, w = port->access != Access::Read;
            size_t k = 0;
            while (k < ub.size() && ub[k] != b.buffer) ++k;
            if (k == ub.size()) {
              u.push_back({gb.label(), r, w, buffer_bytes(gb, max_tokens)});
              ub.push_back(b.buffer);
            } else {
              u[k].reads |= r;
              u[k].writes |= w;
            }
          }
          break;
        }
        case BoundArg::Kind::I64:
          pa.kind = PlanArg::Kind::I64;
          pa.i64 = b.i64;
          break;
        case BoundArg::Kind::F32:
          pa.kind = PlanArg::Kind::F32;
          pa.f32 = b.f32;
          break;
        case BoundArg::Kind::Runtime:
          pa.kind = PlanArg::Kind::Runtime;
          pa.runtime = b.runtime;
          pa.i64 = b.i64;
          break;
        case BoundArg::Kind::RangeBegin:
          pa.kind = PlanArg::Kind::RangeBegin;
          break;
        case BoundArg::Kind::RangeEnd:
          pa.kind = PlanArg::Kind::RangeEnd;
          break;
      }
      ps.args.push_back(pa);
    }
    if (s->parallel.enabled) {
      ps.split_total = s->parallel.extent.i;
      ps.split_by_tokens = s->parallel.extent.is_tokens();
      ps.split_align = s->parallel.min_chunk;
    }
    p.steps.push_back(std::move(ps));
    uses.push_back(std::move(u));
    use_buffer.push_back(std::move(ub));
  }

  // 2. Arena placement; the input is read before any write (live from the start), the
  // output must survive the last step.
  const MemoryPlan mp = plan_memory(uses, {graph.buffers[output].label()});
  p.arena_bytes = mp.arena_bytes;
  bool have_in = false, have_out = false;
  for (size_t s = 0; s < p.steps.size(); ++s) {
    std::map<int, size_t> off;
    for (size_t k = 0; k < use_buffer[s].size(); ++k) off[use_buffer[s][k]] = mp.offsets[s][k];
    for (PlanArg& a : p.steps[s].args) {
      if (a.kind != PlanArg::Kind::Arena) continue;
      a.offset = off.at(a.buffer);
      if (a.buffer == input) p.tokens_offset = a.offset, have_in = true;
      if (a.buffer == output) p.logits_offset = a.offset, have_out = true;
    }
  }
  if (!have_in || !have_out) {
    *err = graph.circuit_file + ": no step reads the input or writes the output";
    return false;
  }
  // A per-token step addresses its token's row: + out_first * row_bytes.
  for (PlanStep& s : p.steps) {
    if (!s.per_token) continue;
    for (PlanArg& a : s.args) {
      if (a.kind != PlanArg::Kind::Arena) continue;
      a.row_bytes = token_row_bytes(graph.buffers[a.buffer]);
      if (a.row_bytes == 0) {
        *err = fmt::format(
            "{}: {} runs per token in a batched decode but its buffer {} is not "
            "in rows of tokens",
            graph.circuit_file, step_label(graph, s.node, s.span), graph.buffers[a.buffer].label());
        return false;
      }
    }
  }
  if (p.phase == Phase::Prefill && !p.batch) mark_output_tail(graph, &p);
  mark_parallel_regions(graph, &p);
  *out = std::move(p);
  return true;
}

// Reads no state and no position: the same call computes each row of a chunk alone.
bool row_wise(const Graph& graph, const std::vector<BoundArg>& args) {
  for (const BoundArg& a : args) {
    if (a.kind == BoundArg::Kind::Buffer && graph.buffers[a.buffer].kind == BufferKind::State)
      return false;
    if (a.kind == BoundArg::Kind::Runtime && a.runtime != RuntimeValue::NTokens) return false;
  }
  return true;
}

}  // namespace

bool build_phase_plan(const Graph& graph, const Resolution& res, Phase phase, int64_t max_tokens,
                      const KernelLookup& lookup, PhasePlan* out, std::string* err) {
  std::vector<PlanSource> steps;
  for (const Step* s : res.steps_for(phase)) steps.push_back({s, false});
  PhasePlan p;
  p.phase = phase;
  p.max_tokens = max_tokens;
  return build_plan(graph, steps, std::move(p), lookup, out, err);
}

bool build_batch_plan(const Graph& graph, const Resolution& res, int64_t max_tokens,
                      const KernelLookup& lookup, PhasePlan* out, std::string* err) {
  std::map<std::pair<size_t, size_t>, const Step*> prefill;  // (node, span): the same nodes
  for (const Step* s : res.steps_for(Phase::Prefill)) prefill[{s->node, s->span}] = s;
  std::vector<PlanSource> steps;
  for (const Step* d : res.steps_for(Phase::Decode)) {
    auto it = prefill.find({d->node, d->span});
    const Step* p = it == prefill.end() ? nullptr : it->second;
    const bool whole = p && p->contract == d->contract &&
                       !d->contract->token_count_changes_arithmetic && row_wise(graph, p->args);
    if (whole)
      steps.push_back({p, false});
    else if (!d->batch_args.empty() && row_wise(graph, d->batch_args))
      steps.push_back({d, false, true});  // the decode step, once over all B tokens
    else
      steps.push_back({d, true});
  }
  PhasePlan p;
  p.phase = Phase::Decode;
  p.batch = true;
  p.max_tokens = max_tokens;
  return build_plan(graph, steps, std::move(p), lookup, out, err);
}

void address_sequences(const Graph& graph, int64_t n_seq, PhasePlan* p) {
  if (n_seq <= 1) return;
  for (PlanStep& s : p->steps)
    for (PlanArg& a : s.args)
      if (a.kind == PlanArg::Kind::State)
        a.seq_bytes = buffer_bytes(graph.buffers[a.buffer], p->max_tokens);
}

std::string_view plan_name(const PhasePlan& p) {
  return p.batch ? "batch" : phase_name(p.phase);
}

std::string step_label(const Graph& graph, size_t node, size_t span) {
  std::string s = graph.nodes[node].label();
  for (size_t k = node + 1; k < node + span; ++k) {
    s += '+';
    s += graph.nodes[k].label();
  }
  return s;
}

std::string plan_text(const Graph& graph, const PhasePlan& p) {
  std::string s = fmt::format("phase {} (T {} {}), arena {} bytes, {} steps\n", plan_name(p),
                              p.phase == Phase::Decode && !p.batch ? "=" : "<=", p.max_tokens,
                              p.arena_bytes, p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& st = p.steps[i];
    s += fmt::format("  {:4} {:<22} {}(", i, step_label(graph, st.node, st.span), st.provider->id);
    for (size_t a = 0; a < st.args.size(); ++a) {
      const PlanArg& x = st.args[a];
      if (a) s += ", ";
      switch (x.kind) {
        case PlanArg::Kind::Arena:
          s += fmt::format("{}@arena+{}", graph.buffers[x.buffer].label(), x.offset);
          if (x.row_bytes) s += fmt::format("+out_first*{}", x.row_bytes);
          break;
        case PlanArg::Kind::Weight:
          s += graph.buffers[x.buffer].tensor;
          if (!x.layout.empty()) s += "@" + x.layout;  // its repacked copy
          break;
        case PlanArg::Kind::State:
          s += graph.buffers[x.buffer].label();
          if (x.seq_bytes) s += fmt::format("+seq*{}", x.seq_bytes);
          break;
        case PlanArg::Kind::I64:
          s += std::to_string(x.i64);
          break;
        case PlanArg::Kind::F32:
          s += fmt::format("{}f", x.f32);
          break;
        case PlanArg::Kind::Runtime:
          s += std::string(runtime_value_name(x.runtime));
          if (x.i64 != 1) s += fmt::format("*{}", x.i64);
          break;
        case PlanArg::Kind::RangeBegin:
          s += "begin";
          break;
        case PlanArg::Kind::RangeEnd:
          s += "end";
          break;
      }
    }
    s += ")";
    if (st.split_total > 0)
      s += fmt::format("  || split {}{} by {}", st.split_total,
                       !st.split_by_tokens                    ? ""
                       : st.split_by == RuntimeValue::NTokens ? "*T"
                                                              : "*n_out",
                       st.split_align);
    if (st.per_token) s += "  (per token)";
    size_t r0 = i, r1 = i;  // its parallel region [r0, r1]
    while (p.steps[r0].with_previous) --r0;
    while (r1 + 1 < p.steps.size() && p.steps[r1 + 1].with_previous) ++r1;
    if (r1 > r0) s += fmt::format("  [region {}..{}]", r0, r1);
    s += "\n";
  }
  return s;
}

std::vector<Repack> plan_repacks(const PhasePlan& a, const PhasePlan& b) {
  std::set<Repack> all;
  for (const PhasePlan* p : {&a, &b})
    for (const PlanStep& s : p->steps)
      for (const PlanArg& x : s.args)
        if (x.kind == PlanArg::Kind::Weight && !x.layout.empty()) all.insert({x.buffer, x.layout});
  return {all.begin(), all.end()};
}

}  // namespace cke
