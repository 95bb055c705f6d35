#pragma once
/// \file `cotune::batch::run_job`: tunes every (kernel, instance) of a job with the ordinary autotuner,
/// one `autotuner<void(argument_pack)>` per host kernel (and one over the CUDA backend per CUDA
/// kernel, batch/cuda_kernel_runner.hpp), so that results, binaries, the result cache and the Redis
/// lease work exactly as in an application.
///
/// Many processes share a job in two ways. `shard`/`shards` split the keys statically (key i goes to
/// shard i % shards). A `claim` callback (the tool's takes a Redis lease per key) lets processes
/// running the same job take different keys: a key another process holds is passed over in a first
/// pass and revisited at the end, where the autotuner's own lease waits for that process's result,
/// or takes the key over once a dead holder's lease expires.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/host_backend.hpp>
#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/batch/argument_pack.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/search/search.hpp>
#include <cotune/tune/autotuner.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::batch {

/// How one key of a job ended.
enum class key_outcome {
  measured, ///< tuned here, now
  cached,   ///< read from the result cache (tuned earlier, or by another process)
  failed    ///< every candidate failed, or the instance could not be set up
};

[[nodiscard]] constexpr std::string_view to_string(key_outcome o) noexcept {
  switch (o) {
  case key_outcome::measured: return "measured";
  case key_outcome::cached: return "cached";
  case key_outcome::failed: return "failed";
  }
  return "?";
}

/// One key of a job, finished.
struct key_report {
  std::string kernel;
  std::size_t index = 0;           ///< the instance's index within its kernel
  std::size_t ordinal = 0, total = 0; ///< this process's count so far, and its share of the job
  const instance* inst = nullptr;
  std::string key_text;            ///< the instance's key text (as an application's tuner writes it)
  key_outcome outcome = key_outcome::failed;
  std::shared_ptr<const tuning_result> result{}; ///< unless failed
  std::string error{};             ///< when failed
  std::string fingerprint{};       ///< the backend's toolchain and device identity
  double wall_ms = 0;
};

/// What a job's run did, in totals.
struct job_summary {
  std::size_t keys = 0, measured = 0, cached = 0, failed = 0;
  double wall_s = 0;
  [[nodiscard]] bool all_tuned() const noexcept { return failed == 0; }
};

/// How to run a job.
struct run_options {
  std::size_t shard = 0, shards = 1;
  /// Receivers of the tuning events of every key (candidates compiled, measured, failed).
  std::vector<std::shared_ptr<observer>> observers{};
  /// Called once per key of this shard when it is done (from the calling thread).
  std::function<void(const key_report&)> on_key{};
  /// Takes a key (a hex claim id) for this process: a holder while it tunes, or null when another
  /// process holds it. Unset: every key is tuned in order.
  std::function<std::shared_ptr<void>(const std::string& claim_id)> claim{};
};

/// The claim id of a key: the backend's fingerprint, the kernel and the key text, hashed.
[[nodiscard]] COTUNE_DECL std::string claim_id(const std::string& fingerprint, const kernel_source& k,
                                               const std::string& key);

/// One kernel of a job, set up to tune its instances on this machine's devices of its backend: the
/// host runner below, `cuda_kernel_runner` (batch/cuda_kernel_runner.hpp) for CUDA kernels.
class kernel_runner {
public:
  virtual ~kernel_runner() = default;
  /// The backend's toolchain and device identity (claim ids, database entries).
  [[nodiscard]] std::string fingerprint() const { return do_fingerprint(); }
  /// Tunes instance `index` (or reads its result from the cache); throws when it cannot be set up or
  /// every candidate failed. The result lives as long as the runner.
  [[nodiscard]] const tuning_result& tune(std::size_t index) { return do_tune(index); }

protected:
  [[nodiscard]] virtual std::string do_fingerprint() const = 0;
  [[nodiscard]] virtual const tuning_result& do_tune(std::size_t index) = 0;
};

/// The autotuner options every job kernel shares: one argument (the pack) keyed by its key text, the
/// constraints as an early prune, reset/restore, the job's budgets and the run's observers. `Pack` has
/// `key_text()`; `by_key` maps key texts to the kernel's instances and must outlive the tuner.
template <class Options, class Pack>
[[nodiscard]] Options job_tuner_options(const job_spec& job, const kernel_job& kj, const run_options& o,
                                        const std::map<std::string, const instance*, std::less<>>& by_key) {
  Options opts;
  opts.arg_names = {std::string(pack_argument_name)};
  const auto* index = &by_key;
  opts.early_config_prune = [&kj, index](const std::vector<config>&, const Pack& pack) {
    auto it = index->find(pack.key_text());
    if (it == index->end()) throw job_error("internal: an argument pack of no instance of kernel " + kj.name());
    return kj.candidates(*it->second);
  };
  bool reset = false, restore = false;
  for (const auto& a : kj.arguments) {
    reset = reset || a.reset;
    restore = restore || a.restore;
  }
  if (reset) opts.reset_to_zero = {std::string(pack_argument_name)};
  if (restore) opts.restore_value = {std::string(pack_argument_name)};
  opts.cache_results = true;
  if (job.warmup_ms || job.rep_ms) {
    bench_options b{knobs().bench.warmup_ms.get(), knobs().bench.rep_ms.get()};
    if (job.warmup_ms) b.warmup_ms = *job.warmup_ms;
    if (job.rep_ms) b.rep_ms = *job.rep_ms;
    opts.bench = b;
  }
  opts.observers = o.observers;
  opts.kinds = kj.kinds;
  if (job.search) opts.search = search_named(*job.search);
  opts.search_budget = job.search_budget;
  return opts;
}

/// Each instance of `kj` by its key text.
[[nodiscard]] COTUNE_DECL std::map<std::string, const instance*, std::less<>> instances_by_key(const kernel_job& kj);

/// A host kernel: `autotuner<void(argument_pack)>` over the host backend.
template <CacheManager Cache>
class host_kernel_runner final : public kernel_runner {
public:
  using tuner_type = autotuner<void(argument_pack), host_backend, host_benchmarker, Cache>;

  host_kernel_runner(const job_spec& job, const kernel_job& kj, const run_options& o)
      : kj_(kj), by_key_(instances_by_key(kj)),
        tuner_(kj.source, kj.configs(),
               job_tuner_options<typename tuner_type::options, argument_pack>(job, kj, o, by_key_)) {}

private:
  [[nodiscard]] std::string do_fingerprint() const override {
    return tuner_.backend().fingerprint(tuner_.backend().devices().at(0));
  }
  [[nodiscard]] const tuning_result& do_tune(std::size_t index) override {
    argument_pack pack(kj_.arguments_for(kj_.instances.at(index)));
    return tuner_.tune_now(pack);
  }

  const kernel_job& kj_;
  std::map<std::string, const instance*, std::less<>> by_key_;
  tuner_type tuner_;
};

/// Tunes a job's keys (those of `o.shard`), storing every result through `Cache`. Host kernels run
/// on the host backend; a kernel of another backend on the first of `GpuRunners<Cache>` whose
/// `backend_name` is its backend (`run_job<file_cache, cuda_kernel_runner>`). A kernel no runner takes,
/// or whose runner cannot start (no device), fails each of its keys with the reason.
template <CacheManager Cache, template <class> class... GpuRunners>
job_summary run_job(const job_spec& job, const run_options& o) {
  const auto start = std::chrono::steady_clock::now();
  job_summary sum;

  struct pending {
    std::size_t kernel, index;
  };
  std::vector<pending> mine;
  std::size_t global = 0;
  for (std::size_t k = 0; k < job.kernels.size(); ++k)
    for (std::size_t i = 0; i < job.kernels[k].instances.size(); ++i, ++global)
      if (global % o.shards == o.shard) mine.push_back({k, i});
  sum.keys = mine.size();

  std::vector<std::unique_ptr<kernel_runner>> runners(job.kernels.size());
  std::vector<std::exception_ptr> broken(job.kernels.size()); // a runner that could not start, once per kernel
  auto runner_of = [&](std::size_t k) -> kernel_runner& {
    if (runners[k]) return *runners[k];
    if (broken[k]) std::rethrow_exception(broken[k]);
    const kernel_job& kj = job.kernels[k];
    try {
      if (kj.backend == "host") runners[k] = std::make_unique<host_kernel_runner<Cache>>(job, kj, o);
      auto try_one = [&]<class R>(std::type_identity<R>) {
        if (!runners[k] && kj.backend == R::backend_name) runners[k] = std::make_unique<R>(job, kj, o);
      };
      (try_one(std::type_identity<GpuRunners<Cache>>{}), ...);
      (void)try_one; // unused when no GPU runner is given
      if (!runners[k])
        throw job_error(fmt::format("{}: kernel '{}' has backend '{}', which this run of the job cannot use: {}",
                                    kj.where, kj.name(), kj.backend,
                                    kj.backend == "hip"
                                        ? "no HIP device here (this cotune runs HIP kernels only where the HIP "
                                          "runtime finds an AMD GPU); tune it on such a machine, or leave it out"
                                        : "this cotune was built without CUDA (the CUDA toolkit's headers were not "
                                          "found); rebuild with them, or leave the kernel out"));
    } catch (...) {
      broken[k] = std::current_exception();
      throw;
    }
    return *runners[k];
  };

  std::size_t ordinal = 0;
  auto tune_one = [&](const pending& p) {
    const kernel_job& kj = job.kernels[p.kernel];
    const instance& inst = kj.instances[p.index];
    key_report r;
    r.kernel = kj.name();
    r.index = p.index;
    r.inst = &inst;
    r.total = sum.keys;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      r.key_text = key_text(kj.arguments_for(inst));
      auto& runner = runner_of(p.kernel);
      r.fingerprint = runner.fingerprint();
      const tuning_result& result = runner.tune(p.index);
      // The table keeps the result as long as the tuner lives; the report shares a copy.
      r.result = std::make_shared<const tuning_result>(result);
      r.outcome = result.from_cache ? key_outcome::cached : key_outcome::measured;
    } catch (const std::exception& e) {
      r.outcome = key_outcome::failed;
      r.error = e.what();
      if (r.key_text.empty()) r.key_text = inst.text();
    }
    r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.ordinal = ++ordinal;
    switch (r.outcome) {
    case key_outcome::measured: ++sum.measured; break;
    case key_outcome::cached: ++sum.cached; break;
    case key_outcome::failed: ++sum.failed; break;
    }
    if (o.on_key) o.on_key(r);
  };

  std::vector<pending> deferred;
  for (const auto& p : mine) {
    std::shared_ptr<void> held;
    if (o.claim) {
      const kernel_job& kj = job.kernels[p.kernel];
      std::string fp, key;
      try {
        key = key_text(kj.arguments_for(kj.instances[p.index]));
        fp = runner_of(p.kernel).fingerprint();
      } catch (const std::exception&) {
        // Reported by tune_one with its reason.
      }
      held = o.claim(claim_id(fp, kj.source, key));
      if (!held) {
        deferred.push_back(p);
        continue;
      }
    }
    tune_one(p);
  }
  // Keys other processes held: their results are there by now, or the autotuner's lease waits for
  // them (and takes over a key whose holder died).
  for (const auto& p : deferred) tune_one(p);

  sum.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return sum;
}

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/job_runner.ipp>
#endif
