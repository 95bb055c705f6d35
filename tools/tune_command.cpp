// `cotune tune JOB`: tunes every (kernel, instance) of a job file.
//
//   cotune tune JOB [--dry-run] [--jsonl] [--quiet] [--shard I/N] [--redis | --no-redis] [--db FILE] [--report FILE]
//
// A progress bar on stderr when it is a terminal, then the winner of each key on stdout (not with
// --quiet); with --jsonl, stdout carries one JSON object per candidate ("event": "candidate"), per key
// ("key") and one at the end ("job"). Keys are printed as the database writes them (`A: float32, n=256`);
// host kernels' configs without GPU launch options. Like an application's tuner, a key the result cache
// or a shipped tuning database (COTUNE_TUNING_DB, `cotune db import`) holds is not measured. Exit status:
// 0 every key tuned, 1 some key failed (each failure is reported), 2 the job file or the command line is wrong.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cotune/cache/file_cache.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/batch/html_report.hpp>
#include <cotune/batch/job_runner.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/batch/shipped_database.hpp> // installs the shipped-database lookup every tuner consults
#include <cotune/batch/tuning_database.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/events.hpp>
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis.hpp>
#endif
#ifdef COTUNE_HAS_CUDA
#include <cotune/batch/cuda_kernel_runner.hpp>
#endif

#include "commands.hpp"

namespace cj = cotune::batch;

namespace cotune_tool {

namespace {

/// stdout and stderr are written from the caller's thread (keys) and the engine's (candidates).
std::mutex output_mutex;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// The kernels of a job whose backend has no launch options (host kernels): their configs are shown
/// without num_warps, num_stages, num_ctas.
std::set<std::string, std::less<>> kernels_without_launch_options(const cj::job_spec& job) {
  std::set<std::string, std::less<>> out;
  for (const auto& k : job.kernels)
    if (k.backend == "host") out.insert(k.name());
  return out;
}

/// A config's parameters as JSON (`{"params": {...}}`): a host kernel's config, without launch options.
std::string params_json(const cotune::config& c) {
  cotune::json_writer w;
  w.begin_object().key("params").begin_object();
  for (const auto& [name, v] : c.params()) w.key(name).raw(v.json());
  return std::move(w.end_object().end_object()).take();
}

/// The JSON Lines and progress view of a running job.
class job_view final : public cotune::observer {
public:
  job_view(bool jsonl, bool progress, std::set<std::string, std::less<>> host_kernels)
      : jsonl_(jsonl), progress_(progress), host_kernels_(std::move(host_kernels)) {}

  /// A config as the kernel's backend sees it.
  [[nodiscard]] std::string shown(std::string_view kernel, const cotune::config& c) const {
    return host_kernels_.contains(kernel) ? c.params_text() : c.text();
  }

  /// Where a key's result came from when it was not measured, in words: "the result cache", "the tuning
  /// database". With output_mutex held.
  [[nodiscard]] std::string source_of(const std::string& kernel, const std::string& key) const {
    const std::string layer = layer_of(kernel, key);
    return layer.find("database") != std::string::npos ? "the tuning database" : fmt::format("the {} cache", layer);
  }

  void set_total(std::size_t n) { total_ = n; }

  void key_done(const cj::key_report& r) {
    std::lock_guard lock(output_mutex);
    ++done_;
    if (r.outcome == cj::key_outcome::measured) ++measured_;
    else if (r.outcome == cj::key_outcome::cached) ++cached_;
    else ++failed_;
    if (jsonl_) {
      cotune::json_writer w;
      w.begin_object().field("event", "key").field("kernel", r.kernel).field("key", r.key_text);
      w.field("index", r.index).key("instance").begin_object();
      for (const auto& [n, v] : r.inst->vars) w.field(n, v);
      w.end_object().field("outcome", to_string(r.outcome)).field("ordinal", r.ordinal).field("total", r.total);
      if (r.result) {
        const auto& best = r.result->candidates.at(r.result->winner);
        const bool launch = !host_kernels_.contains(r.kernel);
        w.field("winner", shown(r.kernel, best.cfg)).key("winner_config").raw(launch ? best.cfg.json() : params_json(best.cfg));
        w.field("median_ms", best.time[0]).field("candidates", r.result->candidates.size());
        if (r.outcome == cj::key_outcome::cached) w.field("source", layer_of(r.kernel, r.key_text));
        w.field("device", r.result->made.device);
      }
      if (!r.error.empty()) w.field("error", r.error);
      w.field("wall_ms", r.wall_ms).end_object();
      fmt::print("{}\n", w.str());
      std::fflush(stdout);
    }
    if (r.outcome == cj::key_outcome::failed) {
      if (progress_) fmt::print(stderr, "\r\033[K");
      fmt::print(stderr, "cotune: {} [{}] failed: {}\n", r.kernel, r.key_text, first_line(r.error));
    }
    draw(r.kernel, r.key_text, "");
  }

protected:
  void on_event(const cotune::tuning_event& e) override {
    std::lock_guard lock(output_mutex);
    if (const auto* m = std::get_if<cotune::candidate_measured>(&e)) candidate(m->kernel, m->key_text, m->index, m->total, *m->result);
    else if (const auto* f = std::get_if<cotune::candidate_failed>(&e)) candidate(f->kernel, f->key_text, f->index, f->total, *f->result);
    else if (const auto* h = std::get_if<cotune::cache_hit>(&e)) layers_[h->kernel + "\n" + cj::instance_key_text(h->key_text)] = h->layer;
    else if (const auto* w = std::get_if<cotune::tuning_warning>(&e)) {
      if (progress_) fmt::print(stderr, "\r\033[K");
      fmt::print(stderr, "cotune: warning: {}: {}\n", w->kernel, w->message);
    }
  }

private:
  void candidate(const std::string& kernel, const std::string& key, std::size_t index, std::size_t total,
                 const cotune::candidate_result& c) {
    const std::string k = cj::instance_key_text(key);
    if (jsonl_) {
      cotune::json_writer w;
      w.begin_object().field("event", "candidate").field("kernel", kernel).field("key", k);
      w.field("index", index).field("total", total).field("config", shown(kernel, c.cfg));
      w.field("status", to_string(c.status)).field("median_ms", c.time[0]).field("p20_ms", c.time[1]);
      w.field("p80_ms", c.time[2]).field("compile_ms", c.compile_ms);
      if (!c.reason.empty()) w.field("reason", first_line(c.reason));
      fmt::print("{}\n", std::move(w.end_object()).take());
      std::fflush(stdout);
    }
    draw(kernel, k, fmt::format(": candidate {}/{}", index + 1, total));
  }

  void draw(const std::string& kernel, const std::string& key, const std::string& what) {
    if (!progress_ || total_ == 0) return;
    constexpr std::size_t width = 24;
    const std::size_t filled = done_ * width / total_;
    std::string label = fmt::format("{} [{}]{}", kernel, key, what);
    if (label.size() > 60) label = label.substr(0, 57) + "...";
    fmt::print(stderr, "\r\033[Kcotune: [{}{}] {}/{} keys ({} measured, {} cached, {} failed)  {}",
               std::string(filled, '#'), std::string(width - filled, '.'), done_, total_, measured_, cached_, failed_,
               label);
    if (done_ == total_) fmt::print(stderr, "\n");
    std::fflush(stderr);
  }

  /// The cache layer a key's cache_hit event named ("result", "remote", "shipped tuning database"). With
  /// output_mutex held.
  [[nodiscard]] std::string layer_of(const std::string& kernel, const std::string& key) const {
    auto it = layers_.find(kernel + "\n" + key);
    return it == layers_.end() ? std::string("result") : it->second;
  }

  bool jsonl_, progress_;
  std::set<std::string, std::less<>> host_kernels_;
  std::map<std::string, std::string> layers_; ///< "kernel\nkey" -> the layer its cache hit came from
  std::size_t total_ = 0, done_ = 0, measured_ = 0, cached_ = 0, failed_ = 0;
};

/// The winner of each key, after a run (stdout; with output_mutex held): `kernel [key]: {config} median (measured | from ...)`.
void print_winners(const job_view& view, const std::vector<cj::key_report>& reports) {
  if (reports.empty()) return;
  fmt::print("winners:\n");
  for (const auto& r : reports) {
    if (!r.result) {
      fmt::print("  {} [{}]: failed: {}\n", r.kernel, r.key_text, first_line(r.error));
      continue;
    }
    const auto& best = r.result->candidates.at(r.result->winner);
    const std::string how = r.outcome == cj::key_outcome::measured
                                ? fmt::format("measured, {} candidate{}", r.result->candidates.size(),
                                              r.result->candidates.size() == 1 ? "" : "s")
                                : "from " + view.source_of(r.kernel, r.key_text);
    fmt::print("  {} [{}]: {{{}}} {} ({})\n", r.kernel, r.key_text, view.shown(r.kernel, best.cfg),
               std::isfinite(best.time[0]) ? fmt::format("{:.4f} ms", best.time[0]) : std::string("-"), how);
  }
}

/// "I/N" with 0 <= I < N.
std::pair<std::size_t, std::size_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  std::size_t i = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used = 0;
    i = std::stoul(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    const std::string rest = text.substr(slash + 1);
    n = std::stoul(rest, &used);
    if (used != rest.size()) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw CLI::ValidationError("--shard", fmt::format("'{}' is not I/N (e.g. 0/4: the first of four shards)", text));
  }
  if (n == 0 || i >= n)
    throw CLI::ValidationError("--shard", fmt::format("'{}': I must be in [0, N), e.g. 0/4 .. 3/4", text));
  return {i, n};
}

/// `--dry-run`: the expanded job.
int dry_run(const cj::job_spec& job, bool jsonl) {
  std::size_t total_candidates = 0;
  if (!jsonl)
    fmt::print("job '{}' ({}): {} kernel{}, {} key{}\n", job.name, job.path.string(), job.kernels.size(),
               job.kernels.size() == 1 ? "" : "s", job.instance_count(), job.instance_count() == 1 ? "" : "s");
  for (const auto& k : job.kernels) {
    const auto configs = k.configs();
    std::size_t lo = SIZE_MAX, hi = 0, sum = 0;
    std::vector<std::size_t> per;
    for (const auto& inst : k.instances) {
      const auto n = k.candidates(inst).size();
      per.push_back(n);
      lo = std::min(lo, n);
      hi = std::max(hi, n);
      sum += n;
    }
    total_candidates += sum;
    if (jsonl) {
      cotune::json_writer w;
      w.begin_object().field("event", "kernel").field("kernel", k.name()).field("backend", k.backend);
      w.field("configs", configs.size()).field("instances", k.instances.size()).field("candidates", sum);
      fmt::print("{}\n", std::move(w.end_object()).take());
      for (std::size_t i = 0; i < k.instances.size(); ++i) {
        cotune::json_writer x;
        x.begin_object().field("event", "instance").field("kernel", k.name()).field("index", i);
        x.field("key", cj::key_text(k.arguments_for(k.instances[i]))).field("candidates", per[i]);
        fmt::print("{}\n", std::move(x.end_object()).take());
      }
      continue;
    }
    fmt::print("kernel {} (backend {}, {}, entry {})\n", k.name(), k.backend,
               k.source_file.empty() ? std::string("inline code") : "source " + k.source_file, k.entry);
    std::string args;
    for (const auto& a : k.arguments) {
      std::string d = a.buffer ? fmt::format("{}: {}[{}]", a.name, to_string(a.type), a.extent->text())
                               : fmt::format("{}: {} = {}", a.name, to_string(a.type),
                                             a.int_value ? a.int_value->text() : fmt::format("{}", *a.float_value));
      std::vector<std::string> roles;
      if (a.key) roles.push_back("key");
      if (a.reset) roles.push_back("reset");
      if (a.restore) roles.push_back("restore");
      if (!roles.empty()) d += " (" + fmt::format("{}", fmt::join(roles, ", ")) + ")";
      args += (args.empty() ? "" : ", ") + d;
    }
    fmt::print("  arguments: {}\n", args);
    std::string axes;
    for (const auto& [n, v] : k.axes) axes += fmt::format("{}{}: {}", axes.empty() ? "" : ", ", n, v.size());
    fmt::print("  space: {} configs (axes {}), {} constraints, {} derived launch options\n", configs.size(),
               axes.empty() ? std::string("none") : axes, k.constraints.size(), k.launch.size());
    if (k.geometry) fmt::print("  geometry: {}\n", k.geometry->text());
    fmt::print("  instances: {}, candidates per instance {}..{} (total {})\n", k.instances.size(), lo, hi, sum);
  }
  if (!jsonl) fmt::print("total: {} keys, {} candidates to measure\n", job.instance_count(), total_candidates);
  else {
    cotune::json_writer w;
    w.begin_object().field("event", "job").field("dry_run", true).field("keys", job.instance_count());
    fmt::print("{}\n", std::move(w.field("candidates", total_candidates).end_object()).take());
  }
  return 0;
}

/// The job through `Cache`, with every GPU runner this build has.
template <class Cache>
cj::job_summary run_with_cache(const cj::job_spec& job, const cj::run_options& o) {
#ifdef COTUNE_HAS_CUDA
  return cj::run_job<Cache, cj::cuda_kernel_runner>(job, o);
#else
  return cj::run_job<Cache>(job, o);
#endif
}

/// Results of a run as a database (measured and cached keys alike).
cj::tuning_database database_of(const std::vector<cj::key_report>& reports) {
  cj::tuning_database db;
  for (const auto& r : reports)
    if (r.result) db.add(cj::database_entry::from(*r.result, r.fingerprint));
  return db;
}

} // namespace

bool use_redis([[maybe_unused]] bool redis, [[maybe_unused]] bool no_redis) {
#ifdef COTUNE_HAS_REDIS
  if (no_redis) return false;
  return redis || cotune::redis::redis_knobs().url.is_set();
#else
  if (redis) throw std::runtime_error("this cotune was built without Redis (hiredis was not found): --redis is unavailable");
  return false;
#endif
}

cj::job_summary run_job_with(const cj::job_spec& job, cj::run_options options, bool redis) {
#ifdef COTUNE_HAS_REDIS
  if (redis) {
    namespace cr = cotune::redis;
    auto& backend = cr::redis_backend::shared();
    options.claim = [&backend](const std::string& id) -> std::shared_ptr<void> {
      auto attempt = cr::redis_lease::try_acquire(backend, id, cr::lease_options::from_knobs());
      if (attempt.lease) return std::make_shared<cr::redis_lease>(std::move(*attempt.lease));
      // Redis did not answer: tune the key here (the result cache still shares it once Redis is back).
      if (!attempt.answered) return std::make_shared<int>(0);
      return nullptr;
    };
    // The job's ledger in Redis: how many times each key was measured, by anyone, counted in the
    // transaction that stores the key's result (redis/job_ledger.hpp).
    cr::count_results_in(backend,
                         fmt::format("{}:job:{}:measured", backend.options().prefix, job.digest().substr(0, 16)));
    return run_with_cache<cr::remote_cache>(job, options);
  }
#endif
  (void)redis;
  return run_with_cache<cotune::file_cache>(job, options);
}

std::vector<cj::key_report> collect_job(const cj::job_spec& job, bool redis) {
  std::vector<cj::key_report> out;
  cj::run_options o;
  o.on_key = [&](const cj::key_report& r) {
    if (r.outcome == cj::key_outcome::failed)
      fmt::print(stderr, "cotune: {} [{}] failed: {}\n", r.kernel, r.key_text, first_line(r.error));
    out.push_back(r);
  };
  auto quiet = cotune::knobs().autotuning.progress.scoped(false);
  (void)run_job_with(job, o, redis);
  return out;
}

command add_tune_command(CLI::App& app) {
  struct state {
    std::string job, shard = "0/1", db, report;
    bool dry_run = false, jsonl = false, quiet = false, redis = false, no_redis = false;
  };
  auto s = std::make_shared<state>();
  auto* cmd = app.add_subcommand("tune", "tune every (kernel, instance) of a job file; exit 0 when every key tuned");
  cmd->add_option("job", s->job, "the job file (JSON; docs/jobs.md)")->required();
  cmd->add_flag("--dry-run", s->dry_run, "print the expanded job (configs, instances, candidates per kernel) and exit");
  auto* jsonl = cmd->add_flag("--jsonl", s->jsonl, "print one JSON object per candidate and per key on stdout");
  cmd->add_flag("--quiet", s->quiet, "no progress bar and no winners at the end: only failures, warnings and the "
                                     "one-line summary")
      ->excludes(jsonl);
  cmd->add_option("--shard", s->shard, "tune only keys i with i % N == I (static splitting, no Redis needed)");
  auto* r = cmd->add_flag("--redis", s->redis, "share keys with other processes through Redis (default when "
                                                "COTUNE_REDIS_URL is set)");
  cmd->add_flag("--no-redis", s->no_redis, "never use Redis, even when COTUNE_REDIS_URL is set")->excludes(r);
  cmd->add_option("--db", s->db, "write the job's winners to this tuning database file at the end");
  cmd->add_option("--report", s->report, "write an HTML report of the job to this file at the end");
  return {cmd, [s]() -> int {
            cj::job_spec job;
            std::pair<std::size_t, std::size_t> shard;
            try {
              job = cj::job_spec::load(s->job);
              shard = parse_shard(s->shard);
            } catch (const cj::job_error& e) {
              fmt::print(stderr, "cotune: error: {}\n", e.what());
              return 2;
            } catch (const CLI::ValidationError& e) {
              fmt::print(stderr, "cotune: error: {}\n", e.what());
              return 2;
            }
            if (s->dry_run) return dry_run(job, s->jsonl);
            const bool redis = use_redis(s->redis, s->no_redis);
            // The job draws its own progress bar: the per-key line of the tuner would fight with it.
            auto no_key_progress = cotune::knobs().autotuning.progress.scoped(false);
            auto view = std::make_shared<job_view>(s->jsonl, !s->quiet && ::isatty(STDERR_FILENO) != 0,
                                                   kernels_without_launch_options(job));
            std::vector<cj::key_report> reports;
            cj::run_options o;
            o.shard = shard.first;
            o.shards = shard.second;
            o.observers = {view};
            std::size_t total = 0, global = 0;
            for (const auto& k : job.kernels)
              for (std::size_t i = 0; i < k.instances.size(); ++i, ++global)
                if (global % o.shards == o.shard) ++total;
            view->set_total(total);
            o.on_key = [&](const cj::key_report& r) {
              view->key_done(r);
              reports.push_back(r);
            };
            const auto sum = run_job_with(job, o, redis);
            {
              std::lock_guard lock(output_mutex);
              if (s->jsonl) {
                cotune::json_writer w;
                w.begin_object().field("event", "job").field("job", job.name).field("keys", sum.keys);
                w.field("measured", sum.measured).field("cached", sum.cached).field("failed", sum.failed);
                w.field("wall_s", sum.wall_s).field("keys_per_s", sum.wall_s > 0 ? double(sum.keys) / sum.wall_s : 0.0);
                w.field("shard", o.shard).field("shards", o.shards).field("redis", redis);
                w.field("pid", static_cast<std::int64_t>(::getpid()));
                fmt::print("{}\n", std::move(w.end_object()).take());
              } else {
                if (!s->quiet) print_winners(*view, reports);
                std::fflush(stdout);
                fmt::print(stderr, "cotune: job '{}': {} keys: {} measured, {} from the cache or a tuning database, "
                                   "{} failed, in {:.1f} s\n",
                           job.name, sum.keys, sum.measured, sum.cached, sum.failed, sum.wall_s);
              }
              std::fflush(stdout);
            }
            if (!s->db.empty()) {
              const auto db = database_of(reports);
              db.save(s->db, cj::job_knobs().secret.get().value_or(""));
              fmt::print(stderr, "cotune: wrote {} winner{} to {}\n", db.size(), db.size() == 1 ? "" : "s", s->db);
            }
            if (!s->report.empty()) {
              cj::report_input in{fmt::format("cotune job {}", job.name), job.path.string(), {}};
              for (const auto& rep : reports)
                if (rep.result) in.results.push_back(*rep.result);
              cj::write_html_report(s->report, in);
              fmt::print(stderr, "cotune: wrote the report to {}\n", s->report);
            }
            return sum.all_tuned() ? 0 : 1;
          }};
}

} // namespace cotune_tool
