// Tests for cotune/detail/read_mostly_map.hpp: the insert-only map on the autotuner's hot path, with
// lock-free readers on real threads while a writer grows it.

#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <cotune/detail/read_mostly_map.hpp>
#include <cotune/tune/tuning_key.hpp>

using cotune::tuning_key;
using cotune::detail::read_mostly_map;

// Every allocation of this program is counted, so that a test can say how much memory the map takes.
// Not inlined: g++ -O1 and up would otherwise see free() of a pointer from operator new and warn.
namespace {
std::atomic<std::size_t> allocated_bytes{0};
}
[[gnu::noinline]] void* operator new(std::size_t n) {
  allocated_bytes.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t n) { return ::operator new(n); }
// Every unaligned form is replaced, so that no block is made by one allocator and freed by another
// (AddressSanitizer reports that: Catch allocates with the nothrow form).
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  allocated_bytes.fetch_add(n, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

tuning_key key(std::uint64_t i) {
  tuning_key k;
  k.push(0xf10a7ull); // an element type word, as the autotuner's keys start
  k.push(i);
  return k;
}

/// A key whose hash the test chooses, to force collisions and long probe chains.
struct chosen_hash_key {
  std::uint64_t id;
  std::uint64_t h;
  [[nodiscard]] std::uint64_t hash() const noexcept { return h; }
  friend bool operator==(const chosen_hash_key&, const chosen_hash_key&) = default;
};

/// A value with redundancy, so that a reader can tell a torn or foreign value from the right one.
struct checked_value {
  std::uint64_t id;
  std::uint64_t check;
  [[nodiscard]] bool is_for(std::uint64_t i) const noexcept { return id == i && check == ~i; }
};
checked_value value_for(std::uint64_t i) { return {i, ~i}; }

} // namespace

TEST_CASE("an empty map finds nothing", "[detail][read_mostly_map]") {
  read_mostly_map<tuning_key, int> map;
  CHECK(map.size() == 0);
  CHECK(map.find(key(0)) == nullptr);
  CHECK(map.find(tuning_key{}) == nullptr);
}

TEST_CASE("find returns what insert stored, and only for an equal key", "[detail][read_mostly_map]") {
  read_mostly_map<tuning_key, std::string> map;
  std::string& a = map.insert(key(1), "one");
  CHECK(a == "one");
  std::string& b = map.insert(key(2), "two");
  CHECK(map.size() == 2);
  CHECK(map.find(key(1)) == &a);
  CHECK(map.find(key(2)) == &b);
  CHECK(*map.find(key(2)) == "two");
  CHECK(map.find(key(3)) == nullptr);
  CHECK(map.find(tuning_key{}) == nullptr);
  // The empty key is a key like any other.
  CHECK(map.insert(tuning_key{}, "empty") == "empty");
  CHECK(*map.find(tuning_key{}) == "empty");
  // Values found are the stored ones, not copies: a change through find() is seen by the next find().
  *map.find(key(1)) += "!";
  CHECK(a == "one!");
}

TEST_CASE("inserting a present key returns the value already there and changes nothing", "[detail][read_mostly_map]") {
  read_mostly_map<tuning_key, std::string> map;
  std::string& first = map.insert(key(7), "first");
  std::string& again = map.insert(key(7), "second");
  CHECK(&again == &first);
  CHECK(again == "first");
  CHECK(map.size() == 1);
  CHECK(*map.find(key(7)) == "first");
}

TEST_CASE("values may be move-only", "[detail][read_mostly_map]") {
  read_mostly_map<tuning_key, std::unique_ptr<int>> map;
  auto& p = map.insert(key(1), std::make_unique<int>(41));
  REQUIRE(p);
  ++*p;
  REQUIRE(map.find(key(1)));
  CHECK(**map.find(key(1)) == 42);
  // The second value is dropped, the first kept.
  CHECK(map.insert(key(1), std::make_unique<int>(0)).get() == p.get());
}

TEST_CASE("values live as long as the map and are released with it", "[detail][read_mostly_map]") {
  auto token = std::make_shared<int>(0);
  {
    read_mostly_map<tuning_key, std::shared_ptr<int>> map;
    for (std::uint64_t i = 0; i < 100; ++i) map.insert(key(i), token);
    map.insert(key(0), token); // refused: no second copy is kept
    CHECK(token.use_count() == 101);
  }
  CHECK(token.use_count() == 1);
}

TEST_CASE("keys with equal hashes, or hashes equal in their low bits, are told apart", "[detail][read_mostly_map]") {
  SECTION("every hash equal") {
    read_mostly_map<chosen_hash_key, std::uint64_t> map;
    for (std::uint64_t i = 0; i < 200; ++i) CHECK(map.insert({i, 42}, i * 10) == i * 10);
    for (std::uint64_t i = 0; i < 200; ++i) {
      const auto* v = map.find({i, 42});
      REQUIRE(v);
      CHECK(*v == i * 10);
    }
    CHECK(map.find({200, 42}) == nullptr);
    CHECK(map.find({0, 43}) == nullptr); // an equal id under another hash is another key
    CHECK(map.size() == 200);
  }
  SECTION("hashes that differ only above the bits a table uses") {
    read_mostly_map<chosen_hash_key, std::uint64_t> map;
    for (std::uint64_t i = 0; i < 200; ++i) map.insert({i, (i + 1) << 40}, i);
    for (std::uint64_t i = 0; i < 200; ++i) {
      const auto* v = map.find({i, (i + 1) << 40});
      REQUIRE(v);
      CHECK(*v == i);
    }
    CHECK(map.find({200, 201ull << 40}) == nullptr);
  }
}

TEST_CASE("growth past many doublings keeps every entry and every value's address", "[detail][read_mostly_map]") {
  constexpr std::uint64_t n = 2048; // the table doubles from 16 to 4096 slots
  read_mostly_map<tuning_key, checked_value> map;
  std::vector<const checked_value*> where;
  std::size_t lost = 0, moved = 0, wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    where.push_back(&map.insert(key(i), value_for(i)));
    if ((i & (i + 1)) == 0) { // after 1, 2, 4, ... entries: every earlier entry is still there
      for (std::uint64_t j = 0; j <= i; ++j) {
        const auto* v = map.find(key(j));
        if (!v) ++lost;
        else if (v != where[j]) ++moved;
        else if (!v->is_for(j)) ++wrong;
      }
    }
  }
  CHECK(lost == 0);
  CHECK(moved == 0);
  CHECK(wrong == 0);
  CHECK(map.size() == n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto* v = map.find(key(i));
    REQUIRE(v == where[i]);
    REQUIRE(v->is_for(i));
  }
  for (std::uint64_t i = n; i < 2 * n; ++i) REQUIRE(map.find(key(i)) == nullptr);
}

// Before the fix, insert() copied the whole table on every insert and kept every copy: O(n^2) memory
// (1000 keys 22 MB, 2000 keys 87 MB, 10000 keys 2.4 GB).
TEST_CASE("the tables of a map together take at most about twice the final table", "[detail][read_mostly_map]") {
  constexpr std::size_t n = 1024;
  constexpr std::size_t final_slots = 2048; // 16 doubled while more than half full
  constexpr std::size_t slot_bytes = sizeof(std::uint64_t) + sizeof(void*);
  std::vector<tuning_key> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back(key(i));
  read_mostly_map<tuning_key, std::uint64_t> map;
  const std::size_t before = allocated_bytes.load();
  for (std::size_t i = 0; i < n; ++i) map.insert(keys[i], i);
  const std::size_t used = allocated_bytes.load() - before;
  // Twice the final table, doubled again for slack, plus each entry and its bookkeeping, generously.
  const std::size_t bound = 4 * final_slots * slot_bytes + n * (sizeof(tuning_key) + 128);
  INFO("allocated " << used << " bytes for " << n << " entries; bound " << bound);
  CHECK(used <= bound);
}

TEST_CASE("readers on other threads never see a wrong value while a writer grows the map", "[detail][read_mostly_map]") {
  constexpr std::uint64_t n = 2000;
  constexpr int readers = 3;
  read_mostly_map<tuning_key, checked_value> map;
  std::atomic<std::uint64_t> inserted{0}; // keys [0, inserted) are in the map
  std::atomic<bool> done{false};
  std::atomic<std::size_t> wrong{0}, missing{0}, phantom{0}, lookups{0};

  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r)
    threads.emplace_back([&, r] {
      std::uint64_t i = static_cast<std::uint64_t>(r) * 7919;
      std::size_t mine = 0;
      // Keep reading until the writer is done, then one more full pass.
      for (bool last = false; !last;) {
        last = done.load(std::memory_order_acquire);
        const std::uint64_t present = inserted.load(std::memory_order_acquire);
        for (int step = 0; step < 256; ++step, ++mine) {
          i = (i * 6364136223846793005ull + 1442695040888963407ull);
          const std::uint64_t k = (i >> 33) % (n + n / 4); // a fifth of the lookups are for keys never inserted
          const checked_value* v = map.find(key(k));
          if (v && !v->is_for(k)) ++wrong;
          if (!v && k < present) ++missing; // inserted before we looked: must be found
          if (v && k >= n) ++phantom;
        }
        if (last)
          for (std::uint64_t k = 0; k < n; ++k)
            if (const checked_value* v = map.find(key(k)); !v || !v->is_for(k)) ++missing;
      }
      lookups += mine;
    });

  std::thread writer([&] {
    for (std::uint64_t i = 0; i < n; ++i) {
      map.insert(key(i), value_for(i));
      inserted.store(i + 1, std::memory_order_release);
    }
    done.store(true, std::memory_order_release);
  });
  writer.join();
  for (auto& t : threads) t.join();

  CHECK(wrong == 0);
  CHECK(missing == 0);
  CHECK(phantom == 0);
  CHECK(lookups >= static_cast<std::size_t>(readers) * 256);
  CHECK(map.size() == n);
}

TEST_CASE("writers racing to insert the same keys agree on one value per key", "[detail][read_mostly_map]") {
  constexpr std::uint64_t n = 1000;
  constexpr int writers = 3;
  read_mostly_map<tuning_key, checked_value> map;
  std::vector<std::vector<const checked_value*>> got(writers);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      got[w].reserve(n);
      // Each writer goes through the keys in its own order.
      for (std::uint64_t j = 0; j < n; ++j) {
        const std::uint64_t i = w % 2 ? n - 1 - j : j;
        got[w].push_back(&map.insert(key(i), value_for(i)));
      }
    });
  for (auto& t : threads) t.join();
  CHECK(map.size() == n);
  std::size_t disagree = 0, wrong = 0;
  for (int w = 0; w < writers; ++w)
    for (std::uint64_t j = 0; j < n; ++j) {
      const std::uint64_t i = w % 2 ? n - 1 - j : j;
      if (got[w][j] != map.find(key(i))) ++disagree;
      if (!got[w][j]->is_for(i)) ++wrong;
    }
  CHECK(disagree == 0);
  CHECK(wrong == 0);
}
