// StringIndex: string -> position lookup into a vector of strings its owner keeps (token
// texts, merge lines).
//
// Why not std::unordered_map<std::string, int32_t>: a 151k-token vocabulary with 151k merges
// (Qwen) or 262k tokens with 514k merges (Gemma) made one heap node and one key copy per
// entry: 60-250 ms of a model's load, much of it first touches of fresh memory (a page fault
// per 4 KiB costs microseconds on a virtual machine). Here the keys stay in the owner's
// vector, and the table is one array of (hash bits, position) slots, open addressing with
// linear probing at a load factor of at most 1/2.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cke {

class StringIndex {
 public:
  static constexpr int32_t kAbsent = -1;

  StringIndex() = default;
  // `keys` must outlive the index, and an indexed key must not change.
  explicit StringIndex(const std::vector<std::string>* keys) : keys_(keys) {}

  // Room for n keys without growing.
  void reserve(size_t n) {
    if (2 * n > slots_.size()) rehash(2 * n);
  }

  // Indexes (*keys)[i] unless an equal key is indexed already. Returns the position now
  // stored for that text: i, or the earlier key's.
  int32_t add(int32_t i) { return add(i, hash((*keys_)[size_t(i)])); }

  // add(i) for every i in [0, n) with keep(i), in order; returns the first i that was a
  // duplicate (add(i) != i), else kAbsent. The slot of a key a few ahead is prefetched: a
  // large vocabulary's table is far bigger than the caches, and each insert would
  // otherwise wait for its slot's line (Gemma's 514k merges: 60 ms without, 25 with).
  template <class Keep>
  int32_t add_all(size_t n, Keep keep) {
    reserve(count_ + n);
    constexpr size_t kAhead = 8;
    uint64_t ring[kAhead];
    int32_t first_dup = kAbsent;
    for (size_t i = 0; i < n + kAhead; ++i) {
      if (i >= kAhead && keep(i - kAhead)) {
        const int32_t k = int32_t(i - kAhead);
        if (add(k, ring[i % kAhead]) != k && first_dup == kAbsent) first_dup = k;
      }
      if (i < n) {
        ring[i % kAhead] = hash((*keys_)[i]);
        __builtin_prefetch(&slots_[ring[i % kAhead] & mask_]);
      }
    }
    return first_dup;
  }

  // The position of `key`, or kAbsent.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return kAbsent;
    const uint64_t h = hash(key);
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
      const Slot& slot = slots_[s];
      if (slot.pos == kAbsent) return kAbsent;
      if (slot.tag == tag(h) && (*keys_)[size_t(slot.pos)] == key) return slot.pos;
    }
  }

 private:
  int32_t add(int32_t i, uint64_t h) {
    if (2 * (count_ + 1) > slots_.size()) rehash(std::max<size_t>(16, 2 * slots_.size()));
    const std::string_view key = (*keys_)[size_t(i)];
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
      Slot& slot = slots_[s];
      if (slot.pos == kAbsent) {
        slot = {tag(h), i};
        ++count_;
        return i;
      }
      if (slot.tag == tag(h) && (*keys_)[size_t(slot.pos)] == key) return slot.pos;
    }
  }

  struct Slot {
    uint32_t tag;  // the hash's high half: most mismatches end here, without a key compare
    int32_t pos;
  };

  static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  static uint32_t tag(uint64_t h) { return uint32_t(h >> 32); }

  // A power of two of at least `want` slots, every indexed key placed again.
  void rehash(size_t want) {
    size_t n = 16;
    while (n < want) n *= 2;
    std::vector<Slot> old(n, Slot{0, kAbsent});
    old.swap(slots_);
    mask_ = n - 1;
    for (const Slot& slot : old) {
      if (slot.pos == kAbsent) continue;
      size_t s = hash((*keys_)[size_t(slot.pos)]) & mask_;
      while (slots_[s].pos != kAbsent) s = (s + 1) & mask_;
      slots_[s] = slot;
    }
  }

  const std::vector<std::string>* keys_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0, count_ = 0;
};

}  // namespace cke
