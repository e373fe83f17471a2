#include "jit/glue.h"

#include <algorithm>
#include <cstring>

#include "jit/code_module.h"
#include "runtime/exec/parallel.h"

namespace cke::jit {
namespace {

using namespace asmjit;

TypeId type_of(ArgKind k) {
  switch (k) {
    case ArgKind::Ptr:
      return TypeId::kUIntPtr;
    case ArgKind::I64:
      return TypeId::kInt64;
    case ArgKind::F32:
      return TypeId::kFloat32;
  }
  return TypeId::kVoid;
}

// Materializes one argument in a fresh virtual register.
BaseReg load_arg(x86::Compiler& cc, const GlueArg& a, const x86::Gp& ctx, const x86::Gp* begin,
                 const x86::Gp* end) {
  if (a.kind == ArgKind::F32) {
    x86::Gp bits = cc.newUInt32("f32bits");
    cc.mov(bits, uint32_t(a.imm));
    x86::Xmm x = cc.newXmmSs("f32");
    cc.movd(x, bits);
    return x;
  }
  x86::Gp r = cc.newInt64("arg");
  switch (a.src) {
    case GlueArg::Src::Imm:
      cc.mov(r, int64_t(a.imm));
      break;
    case GlueArg::Src::Runtime:
      cc.mov(r, x86::qword_ptr(ctx, int32_t(runtime_value_offset(a.runtime))));
      if (int64_t(a.imm) != 1) cc.imul(r, r, int32_t(int64_t(a.imm)));
      break;
    case GlueArg::Src::RangeBegin:
      cc.mov(r, *begin);
      break;
    case GlueArg::Src::RangeEnd:
      cc.mov(r, *end);
      break;
    case GlueArg::Src::PtrPlusRuntime: {
      x86::Gp t = cc.newInt64("row");
      cc.mov(r, int64_t(a.imm));
      cc.mov(t, x86::qword_ptr(ctx, int32_t(runtime_value_offset(a.runtime))));
      cc.imul(t, t, int32_t(a.mult));
      cc.add(r, t);
      break;
    }
  }
  return r;
}

Error emit_call(x86::Compiler& cc, const GlueStep& s, const x86::Gp& ctx, const x86::Gp* begin,
                const x86::Gp* end) {
  FuncSignatureBuilder sig(CallConvId::kHost);
  sig.setRet(TypeId::kVoid);
  for (const GlueArg& a : s.args) sig.addArg(type_of(a.kind));
  std::vector<BaseReg> ops;
  for (const GlueArg& a : s.args) ops.push_back(load_arg(cc, a, ctx, begin, end));
  InvokeNode* call = nullptr;
  Error e = cc.invoke(&call, uint64_t(uintptr_t(s.fn)), sig);
  if (e) return e;
  for (size_t i = 0; i < ops.size(); ++i) call->setArg(uint32_t(i), ops[i]);
  return kErrorOk;
}

}  // namespace

GlueArg GlueArg::f32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return {ArgKind::F32, Src::Imm, bits, {}};
}

std::unique_ptr<KernelModule> emit_glue(const std::string& name, const std::vector<GlueStep>& steps,
                                        std::string* err) {
  for (const GlueStep& s : steps) {
    if (!s.fn) {
      *err = "glue '" + name + "': step '" + s.name + "' has no function address";
      return nullptr;
    }
    for (const GlueArg& a : s.args)
      if ((a.src == GlueArg::Src::Runtime && (int64_t(a.imm) != int32_t(int64_t(a.imm)))) ||
          (a.src == GlueArg::Src::PtrPlusRuntime && a.mult != int32_t(a.mult))) {
        *err = "glue '" + name + "': step '" + s.name + "': runtime multiplier out of range";
        return nullptr;
      }
    if (s.with_previous && (&s == &steps[0] || s.split_total <= 0 || s.per_token ||
                            (&s)[-1].split_total <= 0 || (&s)[-1].per_token)) {
      *err = "glue '" + name + "': step '" + s.name +
             "' joins a parallel region but it or the step before it is not a split step";
      return nullptr;
    }
    if (s.args.size() > Globals::kMaxFuncArgs) {
      *err = "glue '" + name + "': step '" + s.name + "' has too many arguments";
      return nullptr;
    }
  }
  ModuleBuilder mb("cke_glue_" + name);
  x86::Compiler& cc = mb.cc();

  // Task functions first, one per parallel step: void task(const RunContext*, i64, i64).
  std::vector<Label> task_labels(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].split_total <= 0) continue;
    FuncNode* f = cc.addFunc(FuncSignatureT<void, const RunContext*, int64_t, int64_t>());
    x86::Gp ctx = cc.newIntPtr("ctx"), b = cc.newInt64("begin"), e = cc.newInt64("end");
    f->setArg(0, ctx);
    f->setArg(1, b);
    f->setArg(2, e);
    emit_call(cc, steps[i], ctx, &b, &e);
    cc.endFunc();
    task_labels[i] = f->label();
  }

  // The split of step i: [0, total) into a fresh register.
  auto split_total = [&](size_t i, const x86::Gp& ctx) {
    const GlueStep& s = steps[i];
    x86::Gp total = cc.newInt64("total");
    if (s.split_by_tokens) {
      cc.mov(total, x86::qword_ptr(ctx, int32_t(runtime_value_offset(s.split_by))));
      if (s.split_total != 1) cc.imul(total, total, int32_t(s.split_total));
    } else {
      cc.mov(total, s.split_total);
    }
    return total;
  };

  // Step i in the current function: a direct call, or its split through cke_parallel_for.
  auto emit_step = [&](size_t i, const x86::Gp& ctx) {
    const GlueStep& s = steps[i];
    if (s.split_total <= 0) {
      emit_call(cc, s, ctx, nullptr, nullptr);
      return;
    }
    x86::Gp task = cc.newIntPtr("task");
    cc.lea(task, x86::ptr(task_labels[i]));
    x86::Gp total = split_total(i, ctx), align = cc.newInt64("align");
    cc.mov(align, s.split_align);
    InvokeNode* call = nullptr;
    cc.invoke(&call, uint64_t(uintptr_t(&cke_parallel_for)),
              FuncSignatureT<void, const RunContext*, TaskFn, int64_t, int64_t>());
    call->setArg(0, ctx);
    call->setArg(1, task);
    call->setArg(2, total);
    call->setArg(3, align);
  };

  // The region of steps [first, last): a ParallelTask table on the stack and one call to
  // cke_parallel_region.
  auto emit_region = [&](size_t first, size_t last, const x86::Gp& ctx) {
    const int n = int(last - first);
    x86::Mem table = cc.newStack(uint32_t(n * sizeof(ParallelTask)), 8);
    for (int k = 0; k < n; ++k) {
      const size_t i = first + size_t(k);
      const int32_t at = int32_t(k * sizeof(ParallelTask));
      x86::Gp task = cc.newIntPtr("task"), align = cc.newInt64("align");
      cc.lea(task, x86::ptr(task_labels[i]));
      cc.mov(align, steps[i].split_align);
      cc.mov(table.cloneAdjusted(at + int32_t(offsetof(ParallelTask, task))), task);
      cc.mov(table.cloneAdjusted(at + int32_t(offsetof(ParallelTask, total))), split_total(i, ctx));
      cc.mov(table.cloneAdjusted(at + int32_t(offsetof(ParallelTask, align))), align);
    }
    x86::Gp ptr = cc.newIntPtr("region"), count = cc.newInt64("n");
    cc.lea(ptr, table);
    cc.mov(count, n);
    InvokeNode* call = nullptr;
    cc.invoke(&call, uint64_t(uintptr_t(&cke_parallel_region)),
              FuncSignatureT<void, const RunContext*, const ParallelTask*, int64_t>());
    call->setArg(0, ctx);
    call->setArg(1, ptr);
    call->setArg(2, count);
  };

  // Per-token steps: void step(const RunContext*), called by cke_for_each_token.
  std::vector<Label> token_labels(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].per_token) continue;
    FuncNode* f = cc.addFunc(FuncSignatureT<void, const RunContext*>());
    x86::Gp ctx = cc.newIntPtr("ctx");
    f->setArg(0, ctx);
    emit_step(i, ctx);
    cc.endFunc();
    token_labels[i] = f->label();
  }

  // Straight-line calls in plan order, in parts of about kPartSteps steps (a part ends
  // only where a region does): asmjit's register allocation grows faster than linearly
  // with a function's size, and a 450-step body was a third of the compile time. Each part
  // is void part(const RunContext*).
  constexpr size_t kPartSteps = 32;
  std::vector<Label> parts;
  for (size_t first = 0; first < steps.size();) {
    FuncNode* part = cc.addFunc(FuncSignatureT<void, const RunContext*>());
    x86::Gp ctx = cc.newIntPtr("ctx");
    part->setArg(0, ctx);
    size_t i = first;
    while (i < steps.size() && (i - first < kPartSteps || steps[i].with_previous)) {
      size_t last = i + 1;  // the region [i, last)
      while (last < steps.size() && steps[last].with_previous) ++last;
      if (last - i > 1) {
        emit_region(i, last, ctx);
      } else if (!steps[i].per_token) {
        emit_step(i, ctx);
      } else {
        x86::Gp fn = cc.newIntPtr("step");
        cc.lea(fn, x86::ptr(token_labels[i]));
        InvokeNode* call = nullptr;
        cc.invoke(&call, uint64_t(uintptr_t(&cke_for_each_token)),
                  FuncSignatureT<void, const RunContext*, StepFn>());
        call->setArg(0, ctx);
        call->setArg(1, fn);
      }
      i = last;
    }
    first = i;
    cc.endFunc();
    parts.push_back(part->label());
  }

  // The entry: void glue(const RunContext*), the parts in order.
  FuncNode* main = cc.addFunc(FuncSignatureT<void, const RunContext*>());
  x86::Gp ctx = cc.newIntPtr("ctx");
  main->setArg(0, ctx);
  for (const Label& part : parts) {
    InvokeNode* call = nullptr;
    cc.invoke(&call, part, FuncSignatureT<void, const RunContext*>());
    call->setArg(0, ctx);
  }
  cc.endFunc();
  if (!mb.finish(err)) return nullptr;
  return mb.make_module(main->label());
}

}  // namespace cke::jit
