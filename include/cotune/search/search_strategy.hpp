#pragma once
/// \file `cotune::search_strategy`: which candidates of a tuning get compiled and measured, and in
/// what order. A strategy starts a `search_session` per tuning; the session proposes batches of
/// candidate indices and is told each outcome (a time, or a failure such as a compile error or out
/// of resources, which teaches it as well). The session's public functions check what strategies
/// return (in range, never proposed twice, within the budget), so a strategy cannot break a tuning.
///
/// Reproducible: a session's proposals depend only on its seed and on the outcomes it was told,
/// which reach it in proposal order, batch by batch, whatever order measurements finish in. Batch k
/// sees the outcomes of batches 0 .. k-depth (depth: batches the caller keeps in flight, 1 or 2).
///
///     options.search = std::make_shared<cotune::random_search>();
///     options.search_settings = cotune::search_settings{.evaluations = 64, .seed = 7};

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cotune/detail/config.hpp>
#include <cotune/detail/mersenne_twister.hpp>
#include <cotune/search/search_space.hpp>

namespace cotune {

namespace detail {
/// A number in [0, n) from the engine's raw output: mt19937_64's sequence is fixed by the standard,
/// but the distributions are not, so this keeps proposals equal across standard libraries.
[[nodiscard]] inline std::size_t below(detail::mt19937_64& rng, std::size_t n) noexcept {
  return n == 0 ? 0 : static_cast<std::size_t>(rng() % n);
}
/// A number in [0, 1) from the engine's raw output (53 bits).
[[nodiscard]] inline double unit(detail::mt19937_64& rng) noexcept {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}
} // namespace detail

/// How much a search may spend, and its seed.
///
///     cotune::search_settings{.evaluations = 64}   // 64 candidates
///     cotune::search_settings{.fraction = 0.25}    // a quarter of the candidates (rounded up)
struct search_settings {
  /// Most candidates evaluated (compiled, and measured if they compile); 0 = `fraction`'s, else the
  /// strategy's default (exhaustive: all; the others: a quarter of the candidates, at least 32).
  /// When both are set, `evaluations` wins.
  std::size_t evaluations = 0;
  /// The budget as a share of the candidates, in (0, 1]: ceil(fraction x candidates) evaluations.
  /// 0 = none (`evaluations`, or the strategy's default). Another value throws when a search starts.
  double fraction = 0;
  /// Wall-clock budget in ms from the first proposal; no batch is proposed after it. 0 = none.
  double wall_ms = 0;
  /// Seed of the strategy's engine, std::mt19937_64's sequence (never std::random_device: tunings are
  /// reproducible).
  std::uint64_t seed = 0;

  /// Whether a budget is set (a count, a fraction or a wall-clock time): a search then stops early.
  [[nodiscard]] bool limited() const noexcept { return evaluations > 0 || fraction > 0 || wall_ms > 0; }
  /// The evaluations this budget allows over `candidates` (`fallback` when neither count nor fraction
  /// is set), at most `candidates`. Throws cotune::error for a fraction outside (0, 1].
  [[nodiscard]] COTUNE_DECL std::size_t evaluations_of(std::size_t candidates, std::size_t fallback) const;
};

/// One evaluated candidate: its median time, or a failure (it did not compile, needed more resources
/// than the device has, or failed to run: such configs teach a strategy which values to avoid).
struct search_outcome {
  std::size_t index = 0;
  double time_ms = std::numeric_limits<double>::infinity();
  bool ran = true; ///< false: it failed (its time is then +inf)

  [[nodiscard]] bool valid() const noexcept { return ran && std::isfinite(time_ms); }
};

/// One tuning's search: proposes batches and learns from outcomes. Non-virtual public functions
/// over protected virtuals.
class search_session {
public:
  COTUNE_DECL search_session(const search_space& space, search_settings settings, std::size_t default_evaluations,
                             std::size_t depth);
  virtual ~search_session() = default;
  search_session(const search_session&) = delete;
  search_session& operator=(const search_session&) = delete;

  /// Before the first proposal: an outcome known already (a resumed journal, a quarantined config).
  /// It counts against the budget and is never proposed.
  COTUNE_DECL void known(const search_outcome& o);

  /// Before the first proposal: candidates proposed first, in this order, before anything the
  /// strategy proposes (transfer: the best configs of the nearest tuned keys). A seed counts against the
  /// budget like any proposal, and the strategy learns its outcome as it learns its own: seeded, not
  /// restricted. Out-of-range or taken indices are ignored.
  COTUNE_DECL void seed(const std::vector<std::size_t>& indices);

  /// The next batch: at most `want` indices, none proposed or known before, within the budget.
  /// Batch k sees the outcomes of batches up to k-depth, or of all batches once all are complete.
  /// Empty with batches in flight: ask again when one completes; empty with none: the search is over.
  [[nodiscard]] COTUNE_DECL std::vector<std::size_t> propose(std::size_t want);

  /// The outcome of a proposed candidate (in any order; the strategy sees them in proposal order).
  COTUNE_DECL void tell(const search_outcome& o);

  /// Candidates proposed or known so far.
  [[nodiscard]] std::size_t spent() const noexcept { return spent_; }
  /// The most candidates this search evaluates.
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  /// Whether candidate `i` was proposed (or known).
  [[nodiscard]] bool taken(std::size_t i) const { return taken_.at(i); }

protected:
  /// Up to `want` candidates to evaluate next (more, repeats or taken ones are dropped).
  [[nodiscard]] virtual std::vector<std::size_t> do_propose(std::size_t want) = 0;
  /// An outcome, in proposal order.
  virtual void do_tell(const search_outcome&) {}

  [[nodiscard]] const search_space& space() const noexcept { return space_; }
  [[nodiscard]] detail::mt19937_64& rng() noexcept { return rng_; }
  /// The outcomes delivered so far, in proposal order.
  [[nodiscard]] const std::vector<search_outcome>& history() const noexcept { return history_; }
  /// The best valid delivered outcome's index (ties: the earlier told).
  [[nodiscard]] std::optional<std::size_t> best() const noexcept { return best_; }
  /// Proposals whose outcomes the strategy has not seen yet.
  [[nodiscard]] std::size_t in_flight() const noexcept { return spent_ - history_.size() - prior_.size(); }
  /// A uniformly chosen candidate not yet taken.
  [[nodiscard]] COTUNE_DECL std::optional<std::size_t> random_untaken();

private:
  struct batch {
    std::vector<std::size_t> indices;
    std::size_t told = 0;
  };

  /// Hands the strategy the outcomes of whole batches, oldest first, up to batch (next - depth).
  COTUNE_DECL void deliver();
  COTUNE_DECL void accept(const search_outcome& o);
  [[nodiscard]] COTUNE_DECL bool out_of_time() const;

  const search_space& space_;
  detail::mt19937_64 rng_;
  std::size_t depth_, limit_ = 0, spent_ = 0, delivered_ = 0;
  std::vector<bool> taken_;
  std::vector<std::optional<search_outcome>> outcome_;
  std::vector<search_outcome> prior_, history_;
  std::vector<std::size_t> seeds_; ///< proposed first, in order
  std::vector<batch> batches_;
  std::optional<std::size_t> best_;
  double best_ms_ = std::numeric_limits<double>::infinity();
  std::chrono::steady_clock::time_point start_;
  double wall_ms_;
};

/// The seam: makes one session per tuning. Strategies are immutable and shared between tunings.
class search_strategy {
public:
  virtual ~search_strategy() = default;

  /// A session over `space` (which must outlive it); `depth`: batches the caller keeps in flight.
  [[nodiscard]] std::unique_ptr<search_session> start(const search_space& space, const search_settings& settings,
                                                      std::size_t depth = 1) const {
    return do_start(space, settings, depth);
  }
  /// The knob name of the strategy ("exhaustive", "random", ...), for results and cache keys.
  [[nodiscard]] std::string name() const { return do_name(); }
  /// Whether every candidate is evaluated in config order with no budget: today's tuning exactly.
  [[nodiscard]] bool evaluates_all() const { return do_evaluates_all(); }

protected:
  [[nodiscard]] virtual std::unique_ptr<search_session> do_start(const search_space&, const search_settings&,
                                                                 std::size_t depth) const = 0;
  [[nodiscard]] virtual std::string do_name() const = 0;
  [[nodiscard]] virtual bool do_evaluates_all() const { return false; }
};

/// The default evaluation budget of a sampling strategy: a quarter of the candidates, at least 32
/// (or all of them, when fewer). A quarter: the target is the optimum within 2% in a quarter
/// of the evaluations random sampling needs; 32 keeps small spaces close to exhaustive.
[[nodiscard]] inline std::size_t default_search_evaluations(std::size_t candidates) noexcept {
  return std::min(candidates, std::max<std::size_t>(32, candidates / 4));
}

/// Runs a whole search against `evaluate(index) -> search_outcome`, in batches of `batch` with
/// `depth` batches in flight (evaluated in proposal order): what a tuning does, without a device.
/// Returns every outcome in proposal order. For tests and benchmarks of strategies.
template <class Evaluate>
std::vector<search_outcome> run_search(const search_strategy& s, const search_space& space,
                                       const search_settings& settings, Evaluate evaluate, std::size_t batch = 4,
                                       std::size_t depth = 1) {
  auto session = s.start(space, settings, depth);
  std::vector<search_outcome> out;
  std::vector<std::vector<std::size_t>> flight;
  for (;;) {
    while (flight.size() < depth) {
      auto b = session->propose(batch);
      if (b.empty()) break;
      flight.push_back(std::move(b));
    }
    if (flight.empty()) break;
    for (std::size_t i : flight.front()) {
      search_outcome o = evaluate(i);
      o.index = i;
      session->tell(o);
      out.push_back(o);
    }
    flight.erase(flight.begin());
  }
  return out;
}

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/search/search_strategy.ipp>
#endif
