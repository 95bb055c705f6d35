#pragma once
/// \file A map for the autotuner's hot path: lock-free, allocation-free lookups; rare inserts.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace cotune::detail {

/// Insert-only hash map. Readers load one pointer (acquire) and probe an immutable open-addressing
/// table: no lock, no reference count, no allocation. Writers copy the table under a mutex and
/// publish the copy; old tables are kept until the map dies, so a reader never sees freed memory
/// (with doubling, all tables together hold at most twice the final one).
/// `Key` needs `hash()` (64-bit) and `==`.
template <class Key, class Value>
class read_mostly_map {
public:
  read_mostly_map() { publish(std::make_unique<table>(16)); }
  read_mostly_map(const read_mostly_map&) = delete;
  read_mostly_map& operator=(const read_mostly_map&) = delete;

  /// The value for `k`, or nullptr.
  [[nodiscard]] Value* find(const Key& k) const noexcept {
    const table* t = current_.load(std::memory_order_acquire);
    const std::uint64_t h = k.hash();
    for (std::size_t i = h & t->mask;; i = (i + 1) & t->mask) {
      const slot& s = t->slots[i];
      if (!s.entry) return nullptr;
      if (s.hash == h && s.entry->key == k) return &s.entry->value;
    }
  }

  /// Inserts `k -> v` unless `k` is present; returns the stored value.
  Value& insert(const Key& k, Value v) {
    std::lock_guard lock(write_mutex_);
    if (Value* existing = find(k)) return *existing;
    entries_.push_back(std::make_unique<node>(node{k, std::move(v)}));
    node* e = entries_.back().get();
    const table* old = current_.load(std::memory_order_relaxed);
    const std::size_t capacity = (entries_.size() * 2 > old->slots.size()) ? old->slots.size() * 2 : old->slots.size();
    auto fresh = std::make_unique<table>(capacity);
    for (const auto& s : old->slots)
      if (s.entry) fresh->place(s.hash, s.entry);
    fresh->place(k.hash(), e);
    publish(std::move(fresh));
    return e->value;
  }

  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(write_mutex_);
    return entries_.size();
  }

private:
  struct node {
    Key key;
    Value value;
  };
  struct slot {
    std::uint64_t hash = 0;
    node* entry = nullptr;
  };
  struct table {
    explicit table(std::size_t capacity) : mask(capacity - 1), slots(capacity) {}
    void place(std::uint64_t h, node* e) {
      std::size_t i = h & mask;
      while (slots[i].entry) i = (i + 1) & mask;
      slots[i] = {h, e};
    }
    std::size_t mask;
    std::vector<slot> slots;
  };
  void publish(std::unique_ptr<table> t) {
    current_.store(t.get(), std::memory_order_release);
    tables_.push_back(std::move(t));
  }

  std::atomic<const table*> current_{nullptr};
  mutable std::mutex write_mutex_;
  std::vector<std::unique_ptr<table>> tables_;
  std::deque<std::unique_ptr<node>> entries_;
};

} // namespace cotune::detail
