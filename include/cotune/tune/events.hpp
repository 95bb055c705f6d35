#pragma once
/// \file Typed tuning events and the observers that receive them.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <unistd.h>

#include <cotune/detail/config.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune {

class tuning_timeline;

/// A tuning of one key begins.
struct tuning_started {
  std::string kernel, key_text;
  std::size_t candidates = 0, devices = 0;
};
/// A candidate was compiled (or its binary found in the cache).
struct candidate_compiled {
  std::string kernel, key_text;
  std::size_t index = 0, total = 0;
  const config* cfg = nullptr;
  double compile_ms = 0;
  bool from_cache = false;
};
/// A candidate failed (compile, resources, launch, timeout); tuning goes on.
struct candidate_failed {
  std::string kernel, key_text;
  std::size_t index = 0, total = 0;
  const candidate_result* result = nullptr;
};
/// A candidate was measured.
struct candidate_measured {
  std::string kernel, key_text;
  std::size_t index = 0, total = 0;
  const candidate_result* result = nullptr;
};
/// The winner of a key is known (measured now, or read from the result cache).
struct tuning_selected {
  const tuning_result* result = nullptr;
  /// What each candidate's compile, load, verification and measurements took, and where
  /// (tune/tuning_timeline.hpp); set when the tuning measured now, valid during the event only.
  const tuning_timeline* timeline = nullptr;
};
/// A key's result came from a cache layer ("file", "remote", or a user's cache).
struct cache_hit {
  std::string kernel, key_text, layer;
};

/// Where a stand-in came from (tune_options::first_call, first_call_mode::serve): the shipped tuning
/// database's winner for the key, the winner of the nearest tuned key (key_distance), the config the
/// options mark as the default, or the first candidate.
enum class stand_in_source { database, neighbour, default_config, first };

/// The name of a stand-in's source: "database", "neighbour", "default", "first".
[[nodiscard]] constexpr const char* to_string(stand_in_source s) noexcept {
  switch (s) {
  case stand_in_source::database: return "database";
  case stand_in_source::neighbour: return "neighbour";
  case stand_in_source::default_config: return "default";
  case stand_in_source::first: return "first";
  }
  return "?";
}

/// A key not tuned yet is served by a stand-in while it is tuned in the background (once per key,
/// at its first call). `cfg` lives as long as the tuner.
struct stand_in_served {
  std::string kernel, key_text;
  const config* cfg = nullptr;
  stand_in_source source = stand_in_source::first;
  std::string neighbour; ///< the tuned key whose winner it is (source neighbour), else empty
};

/// A key's background tuning ended and its winner replaced the stand-in for every later call.
/// `winner` is null when the tuning failed: the stand-in goes on serving (tuning_warning says why).
struct stand_in_replaced {
  std::string kernel, key_text;
  const config* stand_in = nullptr;
  const config* winner = nullptr;
  std::size_t calls_served = 0; ///< calls the stand-in served before it was replaced
  double served_ms = 0;         ///< from the stand-in's first call to the replacement
  /// How the tuning measured beside the program (its pauses, its noisy candidates measured again);
  /// zero when the key's result came from a cache, or when a blocking caller had started its tuning.
  background_measurement background{};
};

/// Something went wrong that does not stop the tuning (the result cache is unusable, a result could
/// not be stored): the tuning goes on, and observers decide what to tell whom.
struct tuning_warning {
  std::string kernel, message;
};

using tuning_event = std::variant<tuning_started, candidate_compiled, candidate_failed, candidate_measured,
                                  tuning_selected, cache_hit, tuning_warning, stand_in_served, stand_in_replaced>;

/// Receives tuning events. Events of one tuning arrive in order, from one thread at a time.
class observer {
public:
  virtual ~observer() = default;
  void notify(const tuning_event& e) { on_event(e); }

protected:
  virtual void on_event(const tuning_event& e) = 0;
};

/// Prints what COTUNE_PRINT_AUTOTUNING asks for: a summary like Triton's (kernel, key, wall time,
/// best config) and a table of every candidate with its status. Also a progress line on a terminal.
/// Warnings are printed whatever it was asked for.
class printing_observer final : public observer {
public:
  explicit printing_observer(std::FILE* out = stderr, bool summary = true, bool progress = true)
      : out_(out), summary_(summary), progress_(progress && ::isatty(::fileno(out))) {}

protected:
  COTUNE_DECL void on_event(const tuning_event& e) override;

private:
  COTUNE_DECL void handle(const tuning_started& e);
  void handle(const candidate_compiled&) {}
  void handle(const candidate_failed& e) { step(e.kernel, e.key_text, e.total); }
  void handle(const candidate_measured& e) { step(e.kernel, e.key_text, e.total); }
  COTUNE_DECL void step(const std::string& kernel, const std::string& key, std::size_t total);
  COTUNE_DECL void handle(const tuning_warning& e);
  COTUNE_DECL void handle(const cache_hit& e);
  COTUNE_DECL void handle(const tuning_selected& e);
  COTUNE_DECL void handle(const stand_in_served& e);
  COTUNE_DECL void handle(const stand_in_replaced& e);

public:
  /// The candidate table: config, status, median/p20/p80 in ms, how each was measured and its noise
  /// (where the benchmarker says), and the first line of each failure.
  /// Launch options are shown only when they differ between candidates.
  COTUNE_DECL static void print_table(std::FILE* out, const tuning_result& r);

private:
  std::FILE* out_;
  bool summary_, progress_;
  std::size_t done_ = 0;
  std::mutex mutex_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/events.ipp>
#endif
