// cke-server's scheduler: one thread that owns the engine's plan calls for every slot.
//
// Each slot's Session generates on its request's thread as it always did (sampler, stop
// strings, templates: cke::Session is the one generation loop) but evaluates through this
// scheduler (SequenceEvaluator): eval() queues the tokens and waits. Each step of the
// scheduler thread
//   1. waits until every active slot (one holding a lease: generating) has its next call
//      queued, or kGather after the first one was: a slot between two tokens is sampling,
//      which takes microseconds;
//   2. evaluates every queued single token (decode steps, the slots' next tokens) in one
//      Engine::decode_batch call: the weights are read once for all of them;
//   3. evaluates one chunk (Engine::n_batch tokens) of the oldest queued prompt, so a long
//      prompt is prefilled between decode steps instead of stalling them until it is done.
// The logits are the bits Engine::eval would give each sequence alone (decode_batch's and
// the chunking's promise), so a slot's greedy output does not depend on its neighbours.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/chat/generate_session.h"

namespace cke::server {

class BatchScheduler : public SequenceEvaluator {
 public:
  static constexpr std::chrono::microseconds kGather{2000};

  explicit BatchScheduler(Engine& engine);  // starts the thread
  ~BatchScheduler() override;               // finishes what is queued, stops the thread

  bool eval(int32_t seq, std::span<const int32_t> ids, std::vector<float>* logits, bool all_logits,
            std::string* err) override;
  // A sequence is active while its slot is leased: steps wait (at most kGather) for its call.
  void set_active(int32_t seq, bool active);

  struct Stats {
    int64_t decode_calls = 0;    // decode steps (plan calls of one or more tokens)
    int64_t decode_tokens = 0;   // tokens they evaluated
    int64_t batched_calls = 0;   // steps of two or more tokens (decode_batch's batch plan)
    int64_t max_batch = 0;       // the most tokens of one step
    int64_t prefill_chunks = 0;  // prompt chunks evaluated between steps
  };
  Stats stats() const;

 private:
  struct Call {
    int32_t seq;
    std::span<const int32_t> ids;
    std::vector<float>* logits;
    bool all_logits;
    std::string* err;
    size_t done = 0;  // tokens of ids evaluated (a prompt goes in chunks)
    // `ok` and `ended` are the scheduler thread's, written while it runs the call without
    // mu_; `finished` is set from `ended` under mu_ and is all the waiting thread reads
    // before it returns (and its Call, on its stack, goes).
    bool ended = false, ok = false;
    bool finished = false;
  };
  void loop();
  bool everyone_queued() const;  // under mu_
  void decode_step(const std::vector<Call*>& calls);
  void prefill_chunk(Call* c);

  Engine& engine_;
  mutable std::mutex mu_;
  std::condition_variable work_, finished_;
  std::deque<Call*> queue_;  // oldest first
  std::vector<bool> active_;
  Stats stats_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cke::server
