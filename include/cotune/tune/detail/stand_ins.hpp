#pragma once
/// \file `cotune::detail::stand_ins`: an autotuner's stand-ins (tune_options::first_call,
/// first_call_mode::serve): for each key not tuned yet, the config it launches while the key is tuned
/// in the background, loaded on the launch device. A second table beside the tuned keys: the hot path
/// of a tuned key never reads it (a tuned key is found in the table of tuned keys first, as before),
/// so the tuned call costs what it did. A key's tuning inserting its winner there is the atomic
/// replacement: every call that starts after the insert finds the winner. Also the count of tunings
/// running in the background, which the tuner awaits before it dies.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cotune/backend/backend.hpp>
#include <cotune/core/config.hpp>
#include <cotune/detail/read_mostly_map.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/tuning_key.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::detail {

/// One key's stand-in: its config (one of the key's candidates), loaded on the launch device.
template <Backend B>
struct stand_in {
  stand_in(config c, typename B::function f, stand_in_source src, std::string key)
      : cfg(std::move(c)), fn(std::move(f)), source(src), key_text(std::move(key)),
        since(std::chrono::steady_clock::now()) {}

  const config cfg;
  const typename B::function fn;
  const stand_in_source source;
  const std::string key_text;
  const std::chrono::steady_clock::time_point since;
  std::atomic<std::size_t> served{0};
  /// Set when a launch of it threw: later calls of the key wait for its tuning instead.
  std::atomic<bool> retired{false};
};

/// The stand-ins of one autotuner, and its background tunings.
template <Backend B>
class stand_ins {
public:
  using value_type = stand_in<B>;

  stand_ins() = default;
  stand_ins(const stand_ins&) = delete;
  stand_ins& operator=(const stand_ins&) = delete;
  ~stand_ins() { wait_idle(); }

  /// The key's stand-in if it has one and it is not retired, else null; found without a lock.
  /// `*known` says whether the key was seen before (a stand-in, retired or not, or a failed attempt).
  [[nodiscard]] value_type* find(const tuning_key& key, bool* known = nullptr) const noexcept {
    const std::unique_ptr<value_type>* s = table_.find(key);
    if (known) *known = s != nullptr;
    if (!s || !*s || (*s)->retired.load(std::memory_order_acquire)) return nullptr;
    return s->get();
  }

  /// The key's stand-in: found, or awaited from the caller building it, or built now by `make` (a
  /// unique_ptr, null when none could be built: the key then has none for good), after which `start`
  /// gets the new stand-in (to start the key's background tuning) before any caller launches it.
  template <class Make, class Start>
  value_type* get_or_make(const tuning_key& key, Make&& make, Start&& start) {
    std::promise<value_type*> mine;
    std::shared_future<value_type*> theirs;
    {
      std::lock_guard lock(building_mutex_);
      bool known = false;
      if (value_type* s = find(key, &known); s || known) return s;
      auto it = building_.find(key);
      if (it != building_.end()) theirs = it->second;
      else building_.emplace(key, mine.get_future().share());
    }
    if (theirs.valid()) return theirs.get();
    value_type* made = nullptr;
    try {
      made = table_.insert(key, make()).get();
      if (made) start(*made);
    } catch (...) {
      finish_building(key, mine, made);
      throw;
    }
    finish_building(key, mine, made);
    return made;
  }

  /// A background tuning begins; `end_background` must follow once it has ended.
  void begin_background() {
    std::lock_guard lock(idle_mutex_);
    ++running_;
  }
  void end_background() {
    std::lock_guard lock(idle_mutex_);
    if (--running_ == 0) idle_.notify_all();
  }
  /// Blocks until no background tuning runs.
  void wait_idle() {
    std::unique_lock lock(idle_mutex_);
    idle_.wait(lock, [&] { return running_ == 0; });
  }
  [[nodiscard]] std::size_t running() const {
    std::lock_guard lock(idle_mutex_);
    return running_;
  }

private:
  void finish_building(const tuning_key& key, std::promise<value_type*>& mine, value_type* made) {
    {
      std::lock_guard lock(building_mutex_);
      building_.erase(key);
    }
    mine.set_value(made);
  }

  struct hasher {
    std::size_t operator()(const tuning_key& k) const noexcept { return k.hash(); }
  };

  read_mostly_map<tuning_key, std::unique_ptr<value_type>> table_;
  std::mutex building_mutex_;
  std::unordered_map<tuning_key, std::shared_future<value_type*>, hasher> building_;
  mutable std::mutex idle_mutex_;
  std::condition_variable idle_;
  std::size_t running_ = 0;
};

/// Whether candidate `a` makes the same choices as `b`: the same parameters and launch options,
/// parameters named in `ignored` (heuristics' values, which differ from key to key) aside.
[[nodiscard]] COTUNE_DECL bool same_choice(const config& a, const config& b, const std::vector<std::string>& ignored);

// What a new key starts from: its stand-in and its search's first points, taken from winners made
// elsewhere (the shipped database, the tuner's nearest tuned keys). None of it depends on the kernel's
// arguments: compiled once, not once per kernel signature.

/// One stand-in a key may take: one of its candidates, and where the choice came from.
struct stand_in_choice {
  std::size_t index = 0; ///< into the key's pruned candidates
  stand_in_source source = stand_in_source::first;
  std::string neighbour; ///< the tuned key whose winner it is (stand_in_source::neighbour)
};

/// The shipped tuning database's winner (shipped_winner_source) for `key_text` of `kernel` on the device
/// `device_name()` names, among the key's `pruned` candidates, if the process has a source and it knows
/// one. A source (or `device_name`) that throws makes it unusable: `warning` gets what to report, and
/// there is no winner.
[[nodiscard]] COTUNE_DECL std::optional<config> shipped_winner(std::string_view kernel, std::string_view key_text,
                                                               const std::function<std::string()>& device_name,
                                                               const std::vector<config>& pruned, std::string& warning);

/// The tuned keys' results (`tuned`) of the same shape as `key_text`, with their distance to it
/// (key_distance), nearest first (ties in the order they were tuned); the key itself (distance 0) only
/// `with_same_key`. A distance that is not finite (two keys that hold the same overflowing literal) has
/// no place in the order: such a key is left out.
[[nodiscard]] COTUNE_DECL std::vector<std::pair<double, const tuning_result*>>
nearest_keys(const std::string& key_text, const std::vector<std::shared_ptr<const tuning_result>>& tuned,
             bool with_same_key);

/// The stand-ins a key may take, best first: `shipped` (the shipped database's winner for it), the
/// winners of the tuned keys (`tuned`) nearest it (key_distance), `default_config`, the first candidate;
/// each at most once, matched to the key's `pruned` candidates with the parameters named in
/// `heuristics` ignored. The matches only: a choice among no candidate is left out.
[[nodiscard]] COTUNE_DECL std::vector<stand_in_choice>
stand_in_choices(const std::string& key_text, const std::vector<config>& pruned,
                 const std::vector<std::string>& heuristics, const std::optional<config>& shipped,
                 const std::vector<std::shared_ptr<const tuning_result>>& tuned,
                 const std::optional<config>& default_config);

/// The winners of the tuned keys (`tuned`) nearest `key_text` (of the same shape and not the key itself:
/// key_distance above 0), nearest first, at most `at_most` of them, as indices into the key's `pruned`
/// candidates (heuristics' parameters ignored, each index once): a new key's search starts from them.
[[nodiscard]] COTUNE_DECL std::vector<std::size_t>
nearest_winners(const std::string& key_text, const std::vector<config>& pruned,
                const std::vector<std::string>& heuristics,
                const std::vector<std::shared_ptr<const tuning_result>>& tuned, std::size_t at_most);

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/tune/detail/stand_ins.ipp>
#endif
