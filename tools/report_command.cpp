// `cotune report INPUT -o FILE`: one self-contained HTML page (inline SVG, no network) for a tuning
// result (a cache entry or its JSON), a tuning database, or a job file (whose keys are then read from
// the cache; keys not yet tuned are tuned).
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/batch/html_report.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/batch/shipped_database.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/tune/tuning_result.hpp>

#include "commands.hpp"

namespace cj = cotune::batch;

namespace cotune_tool {

command add_report_command(CLI::App& app) {
  struct state {
    std::string input, out, title;
    bool redis = false, no_redis = false;
  };
  auto s = std::make_shared<state>();
  auto* cmd = app.add_subcommand("report", "render a tuning result, a job or a tuning database as one HTML page");
  cmd->add_option("input", s->input, "a <kernel>.autotune.json result, a database (cotune db export) or a job file")
      ->required();
  cmd->add_option("-o,--output", s->out, "the HTML file to write")->required();
  cmd->add_option("--title", s->title, "the page's title (default: names the input)");
  cmd->add_flag("--no-redis", s->no_redis, "for a job: never use Redis");
  return {cmd, [s]() -> int {
            const auto entry = cotune::cache_inventory::read_entry(s->input);
            cj::report_input in;
            simdjson::dom::parser parser;
            simdjson::dom::object root;
            const bool object = parser.parse(entry.payload).get(root) == simdjson::SUCCESS;
            std::string_view format;
            if (object && root["format"].get_string().get(format) == simdjson::SUCCESS &&
                format == cj::tuning_database::format_name) {
              const auto db = cj::tuning_database::from_json(entry.payload, cj::job_knobs().secret.get().value_or(""),
                                                             s->input);
              in.title = fmt::format("cotune database {}", s->input);
              in.subtitle = fmt::format("{} winners", db.size());
              for (const auto& e : db.entries()) {
                if (e.detail) {
                  in.results.push_back(*e.detail);
                } else if (auto r = cj::database_result(e, {e.winner}, e.key)) {
                  // A winners-only entry does not say whether its backend uses launch options; the host
                  // backend's device names (`host (x86_64,Linux,...)`) say it does not.
                  if (e.device.starts_with("host (")) r->launch_options = false;
                  in.results.push_back(std::move(*r));
                }
              }
            } else if (object && root["kernels"].error() == simdjson::SUCCESS) {
              cj::job_spec job;
              try {
                job = cj::job_spec::load(s->input);
              } catch (const cj::job_error& e) {
                fmt::print(stderr, "cotune: error: {}\n", e.what());
                return 2;
              }
              in.title = fmt::format("cotune job {}", job.name);
              in.subtitle = job.path.string();
              for (const auto& r : collect_job(job, use_redis(s->redis, s->no_redis)))
                if (r.result) in.results.push_back(*r.result);
            } else if (auto r = cotune::tuning_result::from_json(entry.payload)) {
              in.title = fmt::format("cotune result {} [{}]", r->kernel, cj::instance_key_text(r->key_text));
              in.subtitle = s->input;
              in.results.push_back(std::move(*r));
            } else {
              fmt::print(stderr, "cotune: error: '{}' is neither a tuning result, a tuning database nor a job file\n",
                         s->input);
              return 2;
            }
            if (!s->title.empty()) in.title = s->title;
            cj::write_html_report(s->out, in);
            fmt::print(stderr, "cotune: wrote {} ({} key{})\n", s->out, in.results.size(),
                       in.results.size() == 1 ? "" : "s");
            return 0;
          }};
}

} // namespace cotune_tool
