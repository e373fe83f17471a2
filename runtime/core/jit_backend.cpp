// The JIT backend: each phase's steps become asmjit glue with every address baked in.
#include <tbb/parallel_invoke.h>

#include "runtime/core/backend.h"

namespace cke {
namespace {

const void* address(const PlanArg& a, const PlanMemory& m) {
  switch (a.kind) {
    case PlanArg::Kind::Arena:
      return m.arena + a.offset;
    case PlanArg::Kind::Weight:
      return m.weight(a);
    case PlanArg::Kind::State:
      return m.state[size_t(a.buffer)];
    default:
      return nullptr;
  }
}

jit::GlueArg lower(const PlanArg& a, const PlanMemory& m) {
  switch (a.kind) {
    case PlanArg::Kind::Arena:
      if (a.row_bytes)
        return jit::GlueArg::ptr_plus(address(a, m), RuntimeValue::OutFirst, int64_t(a.row_bytes));
      return jit::GlueArg::ptr(address(a, m));
    case PlanArg::Kind::State:
      if (a.seq_bytes)
        return jit::GlueArg::ptr_plus(address(a, m), RuntimeValue::Seq, int64_t(a.seq_bytes));
      return jit::GlueArg::ptr(address(a, m));
    case PlanArg::Kind::Weight:
      return jit::GlueArg::ptr(address(a, m));
    case PlanArg::Kind::I64:
      return jit::GlueArg::i64(a.i64);
    case PlanArg::Kind::F32:
      return jit::GlueArg::f32(a.f32);
    case PlanArg::Kind::Runtime:
      return jit::GlueArg::rt(a.runtime, a.i64);
    case PlanArg::Kind::RangeBegin:
      return jit::GlueArg::begin();
    case PlanArg::Kind::RangeEnd:
      return jit::GlueArg::end();
  }
  return {};
}

std::unique_ptr<jit::KernelModule> glue(const PhasePlan& p, const PlanMemory& m, std::string* err) {
  std::vector<jit::GlueStep> steps;
  for (const PlanStep& s : p.steps) {
    jit::GlueStep g;
    g.name = s.provider->id;
    g.fn = s.symbol.fn;
    for (const PlanArg& a : s.args) g.args.push_back(lower(a, m));
    g.split_total = s.split_total;
    g.split_by_tokens = s.split_by_tokens;
    g.split_by = s.split_by;
    g.split_align = s.split_align;
    g.per_token = s.per_token;
    g.with_previous = s.with_previous;
    steps.push_back(std::move(g));
  }
  return jit::emit_glue(std::string(plan_name(p)), steps, err);
}

class JitBackend : public Backend {
 public:
  std::unique_ptr<jit::KernelModule> prefill_, decode_, batch_;
  jit::GlueFn prefill() const override { return prefill_->entry_as<jit::GlueFn>(); }
  jit::GlueFn decode() const override { return decode_->entry_as<jit::GlueFn>(); }
  jit::GlueFn batch() const override { return batch_ ? batch_->entry_as<jit::GlueFn>() : nullptr; }
};

}  // namespace

std::unique_ptr<Backend> make_jit_backend(const PhasePlan& prefill, const PhasePlan& decode,
                                          const PhasePlan* batch, const PlanMemory& memory,
                                          std::string* err) {
  // The phases' glue is independent: emitted in parallel (8-13 ms each for a 22-layer plan,
  // most of it asmjit's register allocation).
  auto b = std::make_unique<JitBackend>();
  std::string errs[3];
  tbb::parallel_invoke([&] { b->prefill_ = glue(prefill, memory, &errs[0]); },
                       [&] { b->decode_ = glue(decode, memory, &errs[1]); },
                       [&] {
                         if (batch) b->batch_ = glue(*batch, memory, &errs[2]);
                       });
  if (!b->prefill_ || !b->decode_ || (batch && !b->batch_)) {
    *err = !b->prefill_ ? errs[0] : !b->decode_ ? errs[1] : errs[2];
    return nullptr;
  }
  return b;
}

}  // namespace cke
