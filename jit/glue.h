// The glue: one machine-code function per phase that calls every plan step in order.
//
// A step is a call to a kernel with constant arguments (addresses, dims, floats) and, for
// the few dynamic values, loads from the RunContext. A parallel step becomes a small task
// function (ctx, begin, end) -> kernel(..., begin, end) and a call to cke_parallel_for
// with its constant split; a region of independent split steps is one call to
// cke_parallel_region with a table of (task, total, align) built on the stack. Nothing here chooses
// anything: the plan is already frozen.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jit/generators.h"
#include "kernels/registry.h"
#include "runtime/exec/context.h"

namespace cke::jit {

struct GlueArg {
  // PtrPlusRuntime: imm + value * mult (a row of a token buffer: the output tail's)
  enum class Src : uint8_t { Imm, Runtime, RangeBegin, RangeEnd, PtrPlusRuntime };
  ArgKind kind = ArgKind::I64;  // how the kernel receives it
  Src src = Src::Imm;
  uint64_t imm = 0;  // Imm: pointer or int64 bits; F32: the float's bits in low 32;
                     // Runtime: a multiplier (the argument is value * imm)
  RuntimeValue runtime = RuntimeValue::Pos0;
  int64_t mult = 0;  // PtrPlusRuntime

  static GlueArg ptr(const void* p) { return {ArgKind::Ptr, Src::Imm, uint64_t(uintptr_t(p)), {}}; }
  static GlueArg i64(int64_t v) { return {ArgKind::I64, Src::Imm, uint64_t(v), {}}; }
  static GlueArg f32(float v);
  static GlueArg rt(RuntimeValue v, int64_t times = 1) {
    return {ArgKind::I64, Src::Runtime, uint64_t(times), v};
  }
  static GlueArg begin() { return {ArgKind::I64, Src::RangeBegin, 0, {}}; }
  static GlueArg end() { return {ArgKind::I64, Src::RangeEnd, 0, {}}; }
  static GlueArg ptr_plus(const void* p, RuntimeValue v, int64_t mult) {
    return {ArgKind::Ptr, Src::PtrPlusRuntime, uint64_t(uintptr_t(p)), v, mult};
  }
};

struct GlueStep {
  std::string name;  // provider id (for the perf map / disassembly comments)
  const void* fn = nullptr;
  std::vector<GlueArg> args;
  // split_total > 0: parallel over [0, split_total) (times n_tokens when split_by_tokens)
  // in chunks aligned to split_align.
  int64_t split_total = 0;
  bool split_by_tokens = false;  // total = ctx[split_by] * split_total
  RuntimeValue split_by = RuntimeValue::NTokens;
  int64_t split_align = 1;
  // Run once per token of the call through cke_for_each_token (a batched decode's step that
  // needs its token's own position and sequence; runtime/exec/parallel.h).
  bool per_token = false;
  // In one parallel region with the step before it (both split; cke_parallel_region).
  bool with_previous = false;
};

using GlueFn = void (*)(const RunContext* ctx);

// Emits the glue for `steps`: a module whose entry is a GlueFn (entry_as<GlueFn>()). On
// failure (asmjit error, bad step) returns null and *err.
std::unique_ptr<KernelModule> emit_glue(const std::string& name, const std::vector<GlueStep>& steps,
                                        std::string* err);

}  // namespace cke::jit
