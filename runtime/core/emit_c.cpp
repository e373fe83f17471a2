#include "runtime/core/emit_c.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "jit/generators.h"
#include "jit/kir/kir_c.h"
#include "resolver/features.h"

namespace cke {
namespace {

const char* c_type(ArgKind k) {
  switch (k) {
    case ArgKind::Ptr:
      return "void*";
    case ArgKind::I64:
      return "int64_t";
    case ArgKind::F32:
      return "float";
  }
  return "?";
}

// Why a provider won, in one line, from the resolver's decision record. Providers of other
// contracts never compete (other arithmetic), so they are only counted.
std::string why_decision(const Decision& d) {
  int others = 0, eligible = 0;
  std::string rejected;
  for (const Candidate& c : d.candidates) {
    if (c.winner) continue;
    if (c.stage == Stage::Contract) {
      ++others;
    } else if (c.eligible) {
      ++eligible;
    } else {
      rejected += fmt::format("{}{} ({})", rejected.empty() ? "" : ", ", c.id, c.reason);
    }
  }
  std::string s = fmt::format("contract {}", d.contract);
  if (eligible == 0 && rejected.empty()) s += ", its only provider";
  if (eligible) s += fmt::format(", ranked first of {} eligible", eligible + 1);
  if (!rejected.empty()) s += "; rejected: " + rejected;
  if (others) s += fmt::format("; {} providers of other contracts", others);
  return s;
}

// The decision behind a step: its node's, or a fused step's fusion.
std::string why(const Resolution& res, const PlanStep& s) {
  if (s.span > 1) {
    for (const Fusion& f : res.fusions)
      if (f.node == s.node && f.span == s.span && f.outcome == "fused" &&
          f.decision.query.phase == s.phase)
        return "fused: " + why_decision(f.decision);
    return "";
  }
  for (const Decision& d : res.decisions)
    if (d.query.node == s.node && d.query.phase == s.phase) return why_decision(d);
  return "";
}

// A float literal that C reads back to the same bits.
std::string float_literal(float f) {
  return fmt::format("{:a}f", f);
}

std::string render_arg(const EmitInput& in, const PlanArg& a) {
  const Graph& g = *in.graph;
  switch (a.kind) {
    case PlanArg::Kind::Arena:
      if (a.row_bytes)
        return fmt::format("A + {} + ctx->out_first * {} /* {}, row out_first */", a.offset,
                           a.row_bytes, g.buffers[a.buffer].label());
      return fmt::format("A + {} /* {} */", a.offset, g.buffers[a.buffer].label());
    case PlanArg::Kind::Weight:
      if (!a.layout.empty())
        return fmt::format("R + {} /* {} repacked as {} */",
                           in.repack_offset.at({a.buffer, a.layout}), g.buffers[a.buffer].tensor,
                           a.layout);
      return fmt::format("W + {} /* {} */", in.weight_offset[a.buffer], g.buffers[a.buffer].tensor);
    case PlanArg::Kind::State:
      if (a.seq_bytes)
        return fmt::format("S[{}] + ctx->seq * {} /* {}, cells of sequence seq */",
                           in.state_slot[a.buffer], a.seq_bytes, g.buffers[a.buffer].label());
      return fmt::format("S[{}] /* {} */", in.state_slot[a.buffer], g.buffers[a.buffer].label());
    case PlanArg::Kind::I64:
      return fmt::format("{}", a.i64);
    case PlanArg::Kind::F32:
      return float_literal(a.f32);
    case PlanArg::Kind::Runtime:
      return a.i64 == 1 ? fmt::format("ctx->{}", runtime_value_name(a.runtime))
                        : fmt::format("ctx->{} * {}", runtime_value_name(a.runtime), a.i64);
    case PlanArg::Kind::RangeBegin:
      return "begin";
    case PlanArg::Kind::RangeEnd:
      return "end";
  }
  return "?";
}

std::string render_call(const EmitInput& in, const PlanStep& s) {
  std::string c = std::string(s.provider->id) + "(";
  for (size_t i = 0; i < s.args.size(); ++i) c += (i ? ", " : "") + render_arg(in, s.args[i]);
  return c + ");";
}

void render_phase(const EmitInput& in, const PhasePlan& p, std::string* tasks, std::string* body) {
  const std::string ph(plan_name(p));
  *body += fmt::format(
      "/* Phase {}: {} steps, arena {} bytes, T {} {}. Tokens in at A + {}, logits out at A + {}. "
      "*/\n"
      "void cke_plan_{}(const cke_run_context* ctx) {{\n",
      ph, p.steps.size(), p.arena_bytes,
      p.phase == Phase::Decode && !p.batch ? "=" : "<=", p.max_tokens, p.tokens_offset,
      p.logits_offset, ph);
  std::vector<std::string> region;  // the open region's table entries
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    *body += fmt::format("  /* [{}] {}: {} — {}{}{} */\n", i, step_label(*in.graph, s.node, s.span),
                         s.provider->id, why(*in.res, s),
                         s.out_tail ? " (output tail: rows out_first .. +n_out)" : "",
                         s.per_token ? " (per token: its position, its sequence's cells)" : "");
    // The step's code: a call, or its split through cke_parallel_for (or its region's
    // cke_parallel_region, after the region's last step).
    std::string code;
    if (s.split_total <= 0) {
      code = render_call(in, s);
    } else {
      const std::string task = fmt::format("{}_step{}", ph, i);
      *tasks += fmt::format(
          "static void {}(const cke_run_context* ctx, int64_t begin, int64_t end) {{\n  {}\n}}\n",
          task, render_call(in, s));
      const std::string total =
          s.split_by_tokens
              ? fmt::format("ctx->{} * {}", runtime_value_name(s.split_by), s.split_total)
              : fmt::format("{}", s.split_total);
      const bool next_joins = i + 1 < p.steps.size() && p.steps[i + 1].with_previous;
      if (s.with_previous || next_joins) {
        region.push_back(fmt::format("{{{}, {}, {}}}", task, total, s.split_align));
        if (next_joins) continue;
        std::string table;
        for (const std::string& t : region) table += "\n      " + t + ",";
        *body += fmt::format(
            "  {{ /* steps [{}..{}]: one parallel region (independent steps) */\n"
            "    const cke_parallel_task region[] = {{{}\n    }};\n"
            "    cke_parallel_region(ctx, region, {});\n  }}\n",
            i + 1 - region.size(), i, table, region.size());
        region.clear();
        continue;
      }
      code = fmt::format("cke_parallel_for(ctx, {}, {}, {});", task, total, s.split_align);
    }
    if (!s.per_token) {
      *body += "  " + code + "\n";
      continue;
    }
    const std::string step = fmt::format("{}_token{}", ph, i);
    *tasks += fmt::format("static void {}(const cke_run_context* ctx) {{\n  {}\n}}\n", step, code);
    *body += fmt::format("  cke_for_each_token(ctx, {});\n", step);
  }
  *body += "}\n\n";
}

}  // namespace

bool emit_c(const EmitInput& in, EmittedC* out, std::string* err) {
  // Ahead-of-time providers are declared extern (linked from CKE's kernel library); a
  // generated provider renders its own C into cke_kernels.c. Nothing is substituted.
  std::set<std::string> used;
  std::string decls, kernels, protos;
  std::vector<std::string> isa;
  std::vector<const PlanStep*> all;
  for (const PhasePlan* p : {in.prefill, in.decode, in.batch})
    if (p)
      for (const PlanStep& s : p->steps) all.push_back(&s);
  for (const PlanStep* step : all) {
    const PlanStep& s = *step;
    if (!used.insert(s.provider->id).second) continue;
    std::string d = fmt::format("{}(", s.provider->id);
    for (int i = 0; i < s.symbol.n_args; ++i)
      d += (i ? ", " : "") + std::string(c_type(s.symbol.args[i]));
    d += ");\n";
    if (s.provider->impl.generator.empty()) {
      decls += "extern void " + d;
      continue;
    }
    std::string c;
    if (!jit::kernel_c_source(
            s.provider->impl.generator,
            jit::plan_params(s.provider->impl.generator, s.provider->impl.generator_params,
                             s.provider->selection.decode_batch, in.batch != nullptr,
                             in.decode_prefetch),
            s.provider->id, &c, err)) {
      *err = fmt::format("--emit-c: provider '{}': {}", s.provider->id, *err);
      return false;
    }
    kernels += c + "\n";
    protos += "void " + d;
    for (Feature f : s.provider->isa) isa.emplace_back(feature_name(f));
  }
  std::vector<std::string> unknown;
  out->kernel_flags = jit::kir::c_isa_flags(isa, &unknown);
  if (!unknown.empty()) {
    *err = "--emit-c: no C compiler flag for CPU feature '" + unknown[0] + "'";
    return false;
  }
  out->kernels_header = fmt::format(
      "/* cke_kernels.h — the generated kernels of plan {}, as C. Do not edit. */\n"
      "#ifndef CKE_KERNELS_H\n#define CKE_KERNELS_H\n#include <stdint.h>\n\n{}#endif\n",
      in.plan_sha256, protos);
  out->kernels = fmt::format(
      "/* cke_kernels.c — every generated kernel plan {} uses, rendered from the same KIR\n"
      " * description the JIT lowers to machine code (jit/kir/). Do not edit.\n"
      " * Compile with: {} {}\n"
      " * (no contraction into FMAs the kernel did not ask for, no value-changing float\n"
      " * optimisations): then it computes the bits the JIT's machine code computes. */\n"
      "#include <immintrin.h>\n#include <stdint.h>\n\n#include \"cke_kernels.h\"\n\n{}",
      in.plan_sha256, jit::kir::kCNumericsFlags, out->kernel_flags, kernels);

  out->header = fmt::format(
      "/* cke_plan.h — generated by cke-run --emit-c. Do not edit.\n"
      " * Model: {}\n * Plan sha256: {}\n */\n"
      "#ifndef CKE_PLAN_H\n#define CKE_PLAN_H\n#include <stdint.h>\n\n"
      "/* The runtime values of one call (the only dynamic inputs of the plan). Layout = "
      "cke::RunContext. */\n"
      "typedef struct cke_run_context {{\n  int64_t pos0;     /* position of the first token */\n"
      "  int64_t n_tokens; /* tokens in this call (T) */\n  int64_t n_kv;     /* pos0 + n_tokens "
      "*/\n"
      "  void* pool;       /* thread pool for cke_parallel_for */\n"
      "  int64_t out_first; /* first row of the output tail: 0, or n_tokens - 1 for the last "
      "row's logits */\n"
      "  int64_t n_out;    /* rows of the output tail: n_tokens, or 1 */\n"
      "  int64_t seq;      /* the sequence whose KV cells the call uses */\n"
      "  const int64_t* seq_of; /* batch: the sequence of each token */\n"
      "  const int64_t* pos_of; /* batch: the position of each token */\n}} cke_run_context;\n\n"
      "extern const char cke_plan_sha256[];\n"
      "#define CKE_PLAN_STATE_BUFFERS {}\n"
      "/* weights: the GGUF file image; arena: >= the larger phase arena; state: KV buffers;\n"
      " * repacked: the weights the plan reads in another layout, made at load (NULL if none). "
      "*/\n"
      "void cke_plan_bind(const uint8_t* weights, uint8_t* arena, uint8_t* const* state,\n"
      "                   const uint8_t* repacked);\n"
      "void cke_plan_prefill(const cke_run_context* ctx);\n"
      "void cke_plan_decode(const cke_run_context* ctx);\n{}#endif\n",
      in.model_name, in.plan_sha256, in.n_state,
      in.batch ? "void cke_plan_batch(const cke_run_context* ctx);\n" : "");
  out->has_batch = in.batch != nullptr;

  std::string tasks, body;
  render_phase(in, *in.prefill, &tasks, &body);
  render_phase(in, *in.decode, &tasks, &body);
  if (in.batch) render_phase(in, *in.batch, &tasks, &body);
  std::string states;
  for (size_t b = 0; b < in.state_slot.size(); ++b)
    if (in.state_slot[b] >= 0)
      states += fmt::format(" *   S[{}] = {} ({} bytes)\n", in.state_slot[b],
                            in.graph->buffers[b].label(), in.graph->buffers[b].bytes);
  out->source = fmt::format(
      "/* cke_plan.c — the frozen plan of {} as C, generated by cke-run --emit-c. Do not edit.\n"
      " * Plan sha256 {} (the same plan the JIT glue runs; identical logits are the audit).\n"
      " * Buffers: W = weight blob (GGUF image), R = repacked weights, A = activation arena,\n"
      " * S = state:\n{} */\n"
      "#include \"cke_plan.h\"\n#include \"cke_kernels.h\"\n\n"
      "const char cke_plan_sha256[] = \"{}\";\n\n"
      "/* Ahead-of-time kernels, by provider id (linked from CKE's kernel library); the\n"
      " * generated ones are in cke_kernels.c. */\n{}"
      "extern void cke_parallel_for(const cke_run_context* ctx,\n"
      "    void (*task)(const cke_run_context*, int64_t, int64_t), int64_t total, int64_t "
      "align);\n"
      "/* A region of independent parallel steps: one fork/join for all their chunks. */\n"
      "typedef struct cke_parallel_task {{\n"
      "  void (*task)(const cke_run_context*, int64_t, int64_t);\n"
      "  int64_t total, align;\n}} cke_parallel_task;\n"
      "extern void cke_parallel_region(const cke_run_context* ctx, const cke_parallel_task* "
      "tasks,\n    int64_t n);\n"
      "extern void cke_for_each_token(const cke_run_context* ctx,\n"
      "    void (*step)(const cke_run_context*));\n\n"
      "static uint8_t* W;\nstatic uint8_t* R;\nstatic uint8_t* A;\nstatic uint8_t* S[{}];\n\n"
      "void cke_plan_bind(const uint8_t* weights, uint8_t* arena, uint8_t* const* state,\n"
      "                   const uint8_t* repacked) {{\n"
      "  W = (uint8_t*)weights;\n  R = (uint8_t*)repacked;\n  A = arena;\n"
      "  for (int i = 0; i < {}; ++i) S[i] = state[i];\n}}\n\n"
      "/* Parallel steps: one task per step; cke_parallel_for runs its frozen partition. "
      "*/\n{}\n{}",
      in.model_name, in.plan_sha256, states, in.plan_sha256, decls, std::max(1, in.n_state),
      in.n_state, tasks, body);
  return true;
}

std::string emitted_c_flags(const EmittedC& c) {
  return std::string(jit::kir::kCNumericsFlags) + (c.kernel_flags.empty() ? "" : " ") +
         c.kernel_flags;
}

bool write_emitted_c(const EmittedC& c, const std::string& dir, std::string* err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (auto [name, text] :
       {std::pair{"cke_plan.h", &c.header}, std::pair{"cke_plan.c", &c.source},
        std::pair{"cke_kernels.h", &c.kernels_header}, std::pair{"cke_kernels.c", &c.kernels}}) {
    const std::string path = dir + "/" + name;
    std::ofstream f(path, std::ios::binary);
    f << *text;
    if (!f) {
      *err = "cannot write " + path;
      return false;
    }
  }
  return true;
}

}  // namespace cke
