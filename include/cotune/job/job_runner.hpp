#pragma once
/// \file `cotune::job::run_job`: tunes every (kernel, instance) of a job with the ordinary autotuner,
/// one `autotuner<void(argument_pack)>` per kernel, so that results, binaries, the result cache and the
/// Redis lease work exactly as in an application.
///
/// Many processes share a job in two ways. `shard`/`shards` split the keys statically (key i goes to
/// shard i % shards). A `claim` callback (the tool's takes a Redis lease per key) lets processes
/// running the same job take different keys: a key another process holds is passed over in a first
/// pass and revisited at the end, where the autotuner's own lease waits for that process's result,
/// or takes the key over once a dead holder's lease expires.

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <cotune/backend/host_backend.hpp>
#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/job/argument_pack.hpp>
#include <cotune/job/job_spec.hpp>
#include <cotune/tune/autotuner.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::job {

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
[[nodiscard]] inline std::string claim_id(const std::string& fingerprint, const kernel_source& k,
                                          const std::string& key) {
  cotune::detail::sha256_hasher h;
  h.field("cotune-job-claim").field(fingerprint).field(k.digest()).field(key);
  return cotune::detail::to_hex(h.digest());
}

/// Tunes a job's keys (those of `o.shard`), storing every result through `Cache`.
template <CacheManager Cache>
job_summary run_job(const job_spec& job, const run_options& o) {
  using tuner_type = autotuner<void(argument_pack), host_backend, host_benchmarker, Cache>;
  const auto start = std::chrono::steady_clock::now();
  job_summary sum;

  struct pending {
    std::size_t kernel, index;
  };
  std::vector<pending> mine;
  std::size_t global = 0;
  for (std::size_t k = 0; k < job.kernels.size(); ++k) {
    if (job.kernels[k].backend != "host")
      throw job_error(fmt::format("{}: backend '{}' is not available in this build of the job runner; use \"host\" "
                                  "(CUDA jobs: planned)",
                                  job.kernels[k].where, job.kernels[k].backend));
    for (std::size_t i = 0; i < job.kernels[k].instances.size(); ++i, ++global)
      if (global % o.shards == o.shard) mine.push_back({k, i});
  }
  sum.keys = mine.size();

  std::vector<std::unique_ptr<tuner_type>> tuners(job.kernels.size());
  std::vector<std::map<std::string, const instance*, std::less<>>> by_key(job.kernels.size());
  auto tuner_of = [&](std::size_t k) -> tuner_type& {
    if (tuners[k]) return *tuners[k];
    const kernel_job& kj = job.kernels[k];
    for (const auto& inst : kj.instances) by_key[k].emplace(key_text(kj.arguments_for(inst)), &inst);
    typename tuner_type::options opts;
    opts.arg_names = {std::string(pack_argument_name)};
    const auto* index = &by_key[k];
    opts.early_config_prune = [&kj, index](const std::vector<config>&, const argument_pack& pack) {
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
    tuners[k] = std::make_unique<tuner_type>(kj.source, kj.configs(), std::move(opts));
    return *tuners[k];
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
      auto& tuner = tuner_of(p.kernel);
      r.fingerprint = tuner.backend().fingerprint(tuner.backend().devices().at(0));
      argument_pack pack(kj.arguments_for(inst));
      r.key_text = pack.key_text();
      const tuning_result& result = tuner.tune_now(pack);
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
        auto& tuner = tuner_of(p.kernel);
        fp = tuner.backend().fingerprint(tuner.backend().devices().at(0));
        key = key_text(kj.arguments_for(kj.instances[p.index]));
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

} // namespace cotune::job
