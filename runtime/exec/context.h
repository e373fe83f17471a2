// The runtime context that JIT glue reads: the only dynamic values of a frozen plan.
//
// Everything else a step needs (weight pointers, arena addresses, dims) is a constant baked
// into the glue. The layout is part of the ABI between the glue (machine code and emitted
// C) and the session: fields are read at fixed offsets; append only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/registry.h"

namespace cke {

struct ThreadPool;  // runtime/exec/parallel.h

struct RunContext {
  int64_t pos0;       // absolute position of the first token of this call
  int64_t n_tokens;   // tokens in this call (T)
  int64_t n_kv;       // pos0 + n_tokens: cache cells visible after this call
  ThreadPool* pool;   // where parallel steps run (never null; 1 thread = inline)
  int64_t out_first;  // the output tail's first row: 0 (every row's logits) or n_tokens - 1
  int64_t n_out;      // rows the output tail computes: n_tokens or 1 (the last row's logits)
  // The sequence whose KV cells this call reads and writes (0 with one sequence).
  int64_t seq;
  // A batched decode (plan.h): token b belongs to sequence seq_of[b] at position pos_of[b].
  // Its per-token steps run once per token with a context of their own (cke_for_each_token).
  const int64_t* seq_of;
  const int64_t* pos_of;
};

// Where each runtime value (kernels/registry.h) sits in RunContext.
inline constexpr size_t runtime_value_offset(RuntimeValue v) {
  switch (v) {
    case RuntimeValue::Pos0:
      return offsetof(RunContext, pos0);
    case RuntimeValue::NTokens:
      return offsetof(RunContext, n_tokens);
    case RuntimeValue::NKv:
      return offsetof(RunContext, n_kv);
    case RuntimeValue::OutFirst:
      return offsetof(RunContext, out_first);
    case RuntimeValue::NOut:
      return offsetof(RunContext, n_out);
    case RuntimeValue::Seq:
      return offsetof(RunContext, seq);
  }
  return 0;
}

}  // namespace cke
