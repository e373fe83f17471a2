#include "runtime/server/batch_scheduler.h"

#include <algorithm>

namespace cke::server {

BatchScheduler::BatchScheduler(Engine& engine)
    : engine_(engine), active_(size_t(engine.n_seq()), false), thread_([this] { loop(); }) {}

BatchScheduler::~BatchScheduler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void BatchScheduler::set_active(int32_t seq, bool active) {
  {
    std::lock_guard lock(mu_);
    if (seq >= 0 && size_t(seq) < active_.size()) active_[size_t(seq)] = active;
  }
  work_.notify_all();  // a step waiting for this sequence's call need not wait any more
}

BatchScheduler::Stats BatchScheduler::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

bool BatchScheduler::eval(int32_t seq, std::span<const int32_t> ids, std::vector<float>* logits,
                          bool all_logits, std::string* err) {
  Call c{seq, ids, logits, all_logits, err};
  std::unique_lock lock(mu_);
  queue_.push_back(&c);
  work_.notify_all();
  finished_.wait(lock, [&] { return c.finished; });
  return c.ok;
}

bool BatchScheduler::everyone_queued() const {
  for (size_t s = 0; s < active_.size(); ++s) {
    if (!active_[s]) continue;
    if (std::none_of(queue_.begin(), queue_.end(), [&](const Call* c) { return c->seq == int(s); }))
      return false;
  }
  return true;
}

void BatchScheduler::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    work_.wait_until(lock, std::chrono::steady_clock::now() + kGather,
                     [&] { return stop_ || everyone_queued(); });
    std::vector<Call*> decode;
    Call* prompt = nullptr;
    for (Call* c : queue_) {
      if (c->ids.size() == 1)
        decode.push_back(c);
      else if (!prompt)
        prompt = c;
    }
    lock.unlock();
    if (!decode.empty()) decode_step(decode);
    if (prompt) prefill_chunk(prompt);
    lock.lock();
    if (!decode.empty()) {
      ++stats_.decode_calls;
      stats_.decode_tokens += int64_t(decode.size());
      if (decode.size() > 1) ++stats_.batched_calls;
      stats_.max_batch = std::max(stats_.max_batch, int64_t(decode.size()));
    }
    if (prompt) ++stats_.prefill_chunks;
    // Published under mu_: a waiter woken by any notify (or spuriously) sees `finished`
    // only once the scheduler is done with its call.
    for (Call* c : decode) c->finished = c->ended;
    if (prompt) prompt->finished = prompt->ended;
    std::erase_if(queue_, [](const Call* c) { return c->finished; });
    finished_.notify_all();
  }
}

// Runs on the scheduler thread without mu_; a call's fields are its own until loop()
// publishes `finished` under mu_ (its thread waits).
void BatchScheduler::decode_step(const std::vector<Call*>& calls) {
  std::vector<int32_t> seqs, tokens;
  for (const Call* c : calls) {
    seqs.push_back(c->seq);
    tokens.push_back(c->ids[0]);
  }
  std::vector<float> rows;
  std::string err;
  if (engine_.decode_batch(seqs, tokens, &rows, &err)) {
    const size_t V = size_t(engine_.n_vocab());
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i]->logits)
        calls[i]->logits->assign(rows.begin() + i * V, rows.begin() + (i + 1) * V);
      calls[i]->ok = calls[i]->ended = true;
    }
    return;
  }
  // decode_batch checks every call before it runs any: one bad call (say a full context)
  // gets its own error, the others run alone.
  for (Call* c : calls) {
    c->ok = engine_.eval(c->seq, c->ids, c->logits, c->all_logits, c->err);
    c->ended = true;
  }
}

void BatchScheduler::prefill_chunk(Call* c) {
  const size_t n = std::min(c->ids.size() - c->done, size_t(engine_.n_batch()));
  const bool last = c->done + n == c->ids.size();
  // Every row's logits go to the caller chunk after chunk; otherwise the last chunk's last.
  std::vector<float> rows;
  std::vector<float>* out = c->logits && (c->all_logits || last) ? &rows : nullptr;
  if (!engine_.eval(c->seq, c->ids.subspan(c->done, n), out, c->all_logits, c->err)) {
    c->ended = true;
    return;
  }
  if (out) {
    if (c->done == 0 || !c->all_logits) c->logits->clear();
    c->logits->insert(c->logits->end(), rows.begin(), rows.end());
  }
  c->done += n;
  c->ok = c->ended = last;
}

}  // namespace cke::server
