// The server's slots: N sequences of one engine (each its own KV cells), each with its own
// Session, handed out one request at a time; their tokens are evaluated by a BatchScheduler
// that batches their decode steps. Requests beyond the free slots wait in a bounded
// FIFO queue; past its bound acquire() refuses at once (the server answers 503). A request
// goes to the free slot whose cache shares the longest prefix with its prompt; when no slot
// holds at least a tenth of the prompt (say only BOS), to the least recently used free slot,
// so that different conversations keep their caches in different slots.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/chat/generate_session.h"

namespace cke::server {

struct Slot {
  int id = 0;                // = the engine sequence of its session
  Engine* engine = nullptr;  // shared by every slot
  std::unique_ptr<Session> session;
};

class SlotPool {
 public:
  // `on_lease(slot id, true)` when a slot is handed out, (id, false) when it comes back.
  SlotPool(std::vector<std::unique_ptr<Slot>> slots, size_t max_queue,
           std::function<void(int, bool)> on_lease = {});

  // Returns the slot to the pool when destroyed.
  class Lease {
   public:
    Lease(SlotPool& pool, Slot& slot) : pool_(pool), slot_(slot) {}
    ~Lease() { pool_.release(slot_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Slot& slot() { return slot_; }

   private:
    SlotPool& pool_;
    Slot& slot_;
  };

  // Waits (FIFO) for a free slot, preferring the longest cached prefix of `prompt`.
  // nullptr at once when every slot is busy and the queue is full.
  std::unique_ptr<Lease> acquire(std::span<const int32_t> prompt);

  size_t size() const { return slots_.size(); }
  size_t busy() const;
  size_t queued() const;
  Slot& slot(size_t i) { return *slots_[i]; }

 private:
  void release(Slot& slot);

  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<bool> busy_;
  std::vector<uint64_t> last_used_;  // acquire count when each slot was last handed out
  size_t max_queue_;
  std::function<void(int, bool)> on_lease_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<uint64_t> queue_;  // tickets of waiting requests, oldest first
  uint64_t next_ticket_ = 0;
  uint64_t acquired_ = 0;
};

}  // namespace cke::server
