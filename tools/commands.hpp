// The tool's job commands (`cotune tune`, `cotune db`, `cotune report`, `cotune precompile`), each registered on the app by
// its own file; cotune.cpp only adds them and runs the one that was parsed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <cotune/batch/job_runner.hpp>
#include <cotune/batch/job_spec.hpp>

namespace cotune_tool {

/// A registered subcommand and what runs it once parsed (its exit status).
struct command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

command add_tune_command(CLI::App& app);
command add_db_command(CLI::App& app);
command add_report_command(CLI::App& app);
command add_precompile_command(CLI::App& app);

/// Whether jobs share keys through Redis: built with Redis, not refused by `no_redis`, and asked for by
/// `redis` or by COTUNE_REDIS_URL being set.
[[nodiscard]] bool use_redis(bool redis, bool no_redis);

/// Runs a job through the file cache, or through the Redis remote cache (keys claimed with a lease,
/// each measured key counted in Redis).
cotune::batch::job_summary run_job_with(const cotune::batch::job_spec& job, cotune::batch::run_options options, bool redis);

/// Runs a job quietly and returns every key's report (for `db export --job` and `report JOB`).
std::vector<cotune::batch::key_report> collect_job(const cotune::batch::job_spec& job, bool redis);

} // namespace cotune_tool
