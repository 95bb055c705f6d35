#pragma once
/// \file A map for the autotuner's hot path: lock-free, allocation-free lookups; rare inserts.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace cotune::detail {

/// Insert-only hash map. Readers load one table pointer and probe open-addressing slots with acquire
/// loads: no lock, no reference count, no allocation. A writer (under a mutex) fills an empty slot of
/// the current table in place while it stays at most half full, else builds a table of twice the size
/// and publishes it. Slots are only ever filled, never cleared or moved within a table, so a reader
/// that races an insert either sees the new entry or misses it (and the caller takes its slow path).
/// Old tables are kept until the map dies, so a reader never sees freed memory; with doubling, all
/// tables together hold under twice the final one. `Key` needs `hash()` (64-bit) and `==`.
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
      const node* e = t->slots[i].load(std::memory_order_acquire);
      if (!e) return nullptr;
      if (e->hash == h && e->key == k) return &const_cast<node*>(e)->value;
    }
  }

  /// Inserts `k -> v` unless `k` is present; returns the stored value (its address never changes).
  Value& insert(const Key& k, Value v) {
    std::lock_guard lock(write_mutex_);
    if (Value* existing = find(k)) return *existing;
    entries_.push_back(std::make_unique<node>(node{k.hash(), k, std::move(v)}));
    node* e = entries_.back().get();
    table* t = current_.load(std::memory_order_relaxed);
    if (entries_.size() * 2 > t->slots.size()) {
      auto bigger = std::make_unique<table>(t->slots.size() * 2);
      for (const auto& s : t->slots)
        if (node* old = s.load(std::memory_order_relaxed)) bigger->place(old);
      bigger->place(e);
      publish(std::move(bigger));
    } else {
      t->place(e); // release store: a reader that sees the pointer sees the node's contents
    }
    return e->value;
  }

  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(write_mutex_);
    return entries_.size();
  }

private:
  struct node {
    std::uint64_t hash;
    Key key;
    Value value;
  };
  struct table {
    explicit table(std::size_t capacity) : mask(capacity - 1), slots(capacity) {}
    void place(node* e) {
      std::size_t i = e->hash & mask;
      while (slots[i].load(std::memory_order_relaxed)) i = (i + 1) & mask;
      slots[i].store(e, std::memory_order_release);
    }
    std::size_t mask;
    std::vector<std::atomic<node*>> slots;
  };
  void publish(std::unique_ptr<table> t) {
    current_.store(t.get(), std::memory_order_release);
    tables_.push_back(std::move(t));
  }

  std::atomic<table*> current_{nullptr};
  mutable std::mutex write_mutex_;
  std::vector<std::unique_ptr<table>> tables_;
  std::deque<std::unique_ptr<node>> entries_;
};

} // namespace cotune::detail
