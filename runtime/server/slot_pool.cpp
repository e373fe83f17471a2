#include "runtime/server/slot_pool.h"

#include <algorithm>

namespace cke::server {

SlotPool::SlotPool(std::vector<std::unique_ptr<Slot>> slots, size_t max_queue,
                   std::function<void(int, bool)> on_lease)
    : slots_(std::move(slots)),
      busy_(slots_.size(), false),
      last_used_(slots_.size(), 0),
      max_queue_(max_queue),
      on_lease_(std::move(on_lease)) {}

size_t SlotPool::busy() const {
  std::lock_guard lock(mu_);
  return size_t(std::count(busy_.begin(), busy_.end(), true));
}

size_t SlotPool::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::unique_ptr<SlotPool::Lease> SlotPool::acquire(std::span<const int32_t> prompt) {
  std::unique_lock lock(mu_);
  auto any_free = [&] { return std::find(busy_.begin(), busy_.end(), false) != busy_.end(); };
  if (!(queue_.empty() && any_free()) && queue_.size() >= max_queue_) return nullptr;
  const uint64_t ticket = next_ticket_++;
  queue_.push_back(ticket);
  cv_.wait(lock, [&] { return queue_.front() == ticket && any_free(); });
  queue_.pop_front();
  // A free slot's session is not touched by anyone (busy flags change under mu_).
  size_t best = slots_.size(), lru = slots_.size();
  size_t best_prefix = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (busy_[i]) continue;
    const size_t p = slots_[i]->session->cached_prefix(prompt);
    if (best == slots_.size() || p > best_prefix) best = i, best_prefix = p;
    if (lru == slots_.size() || last_used_[i] < last_used_[lru]) lru = i;
  }
  if (best_prefix * 10 < prompt.size()) best = lru;
  last_used_[best] = ++acquired_;
  busy_[best] = true;
  if (on_lease_) on_lease_(slots_[best]->id, true);
  cv_.notify_all();  // the next in line may find another free slot
  return std::make_unique<Lease>(*this, *slots_[best]);
}

void SlotPool::release(Slot& slot) {
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].get() == &slot) busy_[i] = false;
    if (on_lease_) on_lease_(slot.id, false);
  }
  cv_.notify_all();
}

}  // namespace cke::server
