// `cotune db`: tuning databases, the portable form of tuning results.
//
//   cotune db export (--cache [DIR] | --job JOB) -o FILE [--winners-only]   write a database
//   cotune db import FILE [--dir D]                                         merge it into a file cache
//   cotune db diff A B [--json] [--tolerance PCT]                           which winners changed (exit 1 if any
//                                                                           changed beyond the measured noise)
//   cotune db show FILE [--json]                                            list its winners
//   cotune db predict FILE --kernel K (--key KEY | --held-out [--html PAGE]) [--device D] [--json]
//                                                                           a config for a key nobody tuned, from
//                                                                           its nearest tuned neighbour; or every
//                                                                           key predicted from the others, with regret
//                                                                           (and a page: a grid of sizes, tuned beside
//                                                                           predicted, the regrets)
//   cotune db from-triton FILE... --args A,B:tensor,.. --key K,.. --device D -o FILE
//                                                                           Triton's autotune files as a database
//
// Databases are signed when COTUNE_TUNING_DB_SECRET is set, and then read only if signed with it.
// Exit status 2 for a file that is refused (unreadable, damaged, unsigned, over a limit, a kernel name
// or a launch option out of bounds: the readers' database_error, as for a bad job file).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/batch/input_limits.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/batch/prediction.hpp>
#include <cotune/batch/prediction_report.hpp>
#include <cotune/batch/triton_import.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/tuning_result.hpp>

#include "commands.hpp"

namespace cj = cotune::batch;
namespace fs = std::filesystem;

namespace cotune_tool {

namespace {

/// "a, b,c" -> {"a", "b", "c"}; empty items are dropped.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text + ",") {
    if (c != ',') {
      if (c != ' ' || !item.empty()) item += c;
      continue;
    }
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(std::move(item));
    item.clear();
  }
  return out;
}

std::string secret() { return cj::job_knobs().secret.get().value_or(""); }

fs::path cache_root(const std::string& dir) {
  return dir.empty() ? fs::path(cotune::knobs().cache.dir.get()) : fs::path(dir);
}

/// Every tuning result in a file cache, as database entries. A result no database reader would accept
/// (an application tuner may name its kernel `gemm.v2`; a database names kernels as job files do) is
/// left out with a warning naming its file and why, not written into a database its import refuses.
cj::tuning_database from_cache(const fs::path& root, bool candidates) {
  cj::tuning_database db;
  const cotune::cache_inventory inv{root};
  if (!inv.exists()) throw cj::database_error(fmt::format("no cache at '{}' (nothing to export)", root.string()));
  std::size_t left_out = 0;
  (void)inv.files([&](const cotune::cache_file& f, std::string_view payload) {
    if (f.file.ends_with(".autotune.json"))
      if (auto r = cotune::tuning_result::from_json(payload)) {
        auto e = cj::database_entry::from(*r, {}, candidates);
        auto why = e.problem();
        if (!why.empty() && e.detail) {
          // The winner alone may be one a database takes (a loser out of range, a result past the
          // candidate limit): keep it, without the candidates, and say so.
          auto winner_only = e;
          winner_only.detail.reset();
          if (winner_only.problem().empty()) {
            fmt::print(stderr, "cotune: warning: {}: only the winner is exported, not its candidates: {}\n",
                       cj::shown_text(f.path.string(), 4096), why);
            e = std::move(winner_only);
            why.clear();
          }
        }
        if (!why.empty()) {
          fmt::print(stderr, "cotune: warning: left out {}: {}\n", cj::shown_text(f.path.string(), 4096), why);
          ++left_out;
        } else {
          db.add(std::move(e));
        }
      }
    return std::string();
  });
  if (left_out)
    fmt::print(stderr, "cotune: warning: {} tuning result{} left out: a database holds only what its readers accept\n",
               left_out, left_out == 1 ? "" : "s");
  return db;
}

std::string change_name(cj::database_change::kind k) {
  switch (k) {
  case cj::database_change::kind::added: return "added";
  case cj::database_change::kind::removed: return "removed";
  case cj::database_change::kind::changed: return "changed";
  case cj::database_change::kind::same: return "same";
  case cj::database_change::kind::tied: return "tied";
  }
  return "?";
}

std::string ms(double v) { return std::isfinite(v) ? fmt::format("{:.4f} ms", v) : std::string("-"); }

} // namespace

command add_db_command(CLI::App& app) {
  struct state {
    std::string cache_dir, job, out, file, a, b, dir, args, key, device, kernel, html;
    std::vector<std::string> files;
    bool from_cache = false, winners_only = false, json = false, redis = false, no_redis = false, held_out = false;
    double tolerance_pct = 0;
  };
  auto s = std::make_shared<state>();
  auto* db = app.add_subcommand("db", "tuning databases: export, import, diff, show, predict");
  db->require_subcommand(1);

  auto* exp = db->add_subcommand("export", "write the winners of a cache or a job to one database file");
  auto* cache_opt = exp->add_option("--cache", s->cache_dir, "export the results in this file cache (default: "
                                                             "COTUNE_CACHE_DIR)")
                        ->expected(0, 1);
  auto* job_opt = exp->add_option("--job", s->job, "export the results of this job (keys not yet tuned are tuned)");
  cache_opt->excludes(job_opt);
  exp->add_option("-o,--output", s->out, "the database file to write")->required();
  exp->add_flag("--winners-only", s->winners_only, "leave out every candidate but the winner (a smaller file)");
  exp->add_flag("--redis", s->redis, "with --job: share keys through Redis (default when COTUNE_REDIS_URL is set)");
  exp->add_flag("--no-redis", s->no_redis, "with --job: never use Redis");

  auto* imp = db->add_subcommand("import", "merge a database into a file cache; tuners then use its winners");
  imp->add_option("file", s->file, "the database file")->required();
  imp->add_option("--dir", s->dir, "the cache directory (default: COTUNE_CACHE_DIR)");

  auto* dif = db->add_subcommand("diff", "which winners changed between two databases (exit 1 if any did beyond "
                                          "the measured noise)");
  dif->add_option("a", s->a, "the first database")->required();
  dif->add_option("b", s->b, "the second database")->required();
  dif->add_flag("--json", s->json, "one JSON object per difference, then a summary");
  dif->add_option("--tolerance", s->tolerance_pct, "also count another winner as tied (exit 0) when the medians "
                                                   "differ by at most PCT percent of the faster (default 0: only "
                                                   "overlapping p20-p80 bands, the measured noise, tie)")
      ->check(CLI::Range(0.0, 1000.0));

  auto* show = db->add_subcommand("show", "list a database's winners");
  show->add_option("file", s->file, "the database file")->required();
  show->add_flag("--json", s->json, "one JSON object per entry");

  auto* tri = db->add_subcommand("from-triton", "write a database from Triton's autotune cache files "
                                                 "({kernel}.autotune.json), to migrate tunings from Triton");
  tri->add_option("files", s->files, "Triton .autotune.json files (one kernel's signature for all)")->required();
  tri->add_option("--args", s->args, "the kernel's arguments in order, tensors marked ':tensor' "
                                     "(e.g. x:tensor,y:tensor,out:tensor,n)")
      ->required();
  tri->add_option("--key", s->key, "the key= list of Triton's autotune, in its order (e.g. n)");
  tri->add_option("--device", s->device, "the device the files were tuned on, as cotune names it "
                                         "(the backend's device_name, as `cotune db show` lists it; e.g. \"NVIDIA H200\")")
      ->required();
  tri->add_option("--kernel", s->kernel, "the cotune kernel name (default: each file's name without .autotune.json)");
  tri->add_option("-o,--output", s->out, "the database file to write")->required();

  auto* pre = db->add_subcommand("predict", "a config for a key nobody tuned, from the nearest tuned key of its "
                                             "shape (numbers on a log scale; same kernel and device); --held-out: "
                                             "every key predicted from the others, with the prediction's regret");
  pre->add_option("file", s->file, "the database file")->required();
  pre->add_option("--kernel", s->kernel, "the kernel's name (every kernel with --held-out when left out)");
  pre->add_option("--key", s->key, "the key's text, as the tuner writes it (e.g. \"x: float32[3000], n=3000\")");
  pre->add_option("--device", s->device, "the device's name, as `cotune db show` lists it (any, when left out)");
  auto* held_opt = pre->add_flag("--held-out", s->held_out, "predict each key of the database from the others and "
                                                            "report the regret");
  pre->add_option("--html", s->html, "with --held-out: also write an HTML page: per kernel a grid of the keys' "
                                     "problem sizes, the tuned winner beside the prediction and its regret")
      ->needs(held_opt);
  pre->add_flag("--json", s->json, "one JSON object per line");

  auto run = [s, exp, imp, dif, show, tri, pre]() -> int {
            if (pre->parsed()) {
              const auto d = cj::tuning_database::load(s->file, secret());
              if (s->held_out) {
                cj::tuning_database kept; // the keys of --kernel and --device
                for (const auto& e : d.entries())
                  if ((s->kernel.empty() || e.kernel == s->kernel) && (s->device.empty() || e.device == s->device))
                    kept.add(e);
                const auto held = cj::held_out_regret(kept);
                for (const auto& h : held) {
                  const std::string regret = h.regret ? fmt::format("{:.1f}%", 100 * *h.regret) : std::string("-");
                  if (s->json) {
                    cotune::json_writer w;
                    w.begin_object().field("kernel", h.kernel).field("key", h.key).field("device", h.device);
                    w.field("tuned", h.shown(h.tuned)).field("predicted", h.shown(h.predicted)).field("from", h.neighbour);
                    if (h.regret) w.field("regret", *h.regret);
                    fmt::print("{}\n", std::move(w.end_object()).take());
                  } else {
                    fmt::print("{} [{}] on {}: tuned {{{}}}, predicted {{{}}} from [{}]: regret {}\n", h.kernel, h.key,
                               h.device, h.shown(h.tuned), h.shown(h.predicted), h.neighbour, regret);
                  }
                }
                const auto sum = cj::held_out_summary::of(held);
                if (!s->json)
                  fmt::print("{} keys with a known regret: {} predicted exactly, mean regret {:.1f}%, median {:.1f}%, "
                             "worst {:.1f}%, {} within 2%\n",
                             sum.measured, sum.exact, 100 * sum.mean, 100 * sum.median, 100 * sum.worst, sum.within);
                if (!s->html.empty()) {
                  cj::write_prediction_report(s->html, kept, fmt::format("cotune predictions for {}", s->file));
                  fmt::print(stderr, "cotune: wrote {} ({} of {} predicted)\n", s->html,
                             sum.keys == 1 ? std::string("1 key") : fmt::format("{} keys", sum.keys), kept.size());
                }
                return 0;
              }
              if (s->kernel.empty() || s->key.empty()) {
                fmt::print(stderr, "cotune: error: db predict needs --kernel and --key (or --held-out)\n");
                return 2;
              }
              const auto p = cj::predict_winner(d, s->kernel, s->key, s->device);
              if (!p) {
                fmt::print(stderr, "cotune: {} [{}]: no key of this shape (same names and element types) in {}{}\n",
                           s->kernel, s->key, s->file, s->device.empty() ? "" : " on " + s->device);
                return 1;
              }
              if (s->json) {
                cotune::json_writer w;
                w.begin_object().field("kernel", s->kernel).field("key", s->key).field("predicted", p->winner_text());
                w.field("from", p->neighbour).field("distance", p->distance);
                fmt::print("{}\n", std::move(w.end_object()).take());
              } else {
                fmt::print("{} [{}]: {{{}}} (the winner of [{}], {:.2f} doublings away)\n", s->kernel, s->key,
                           p->winner_text(), p->neighbour, p->distance);
              }
              return 0;
            }
            if (tri->parsed()) {
              cj::triton_signature sig{.kernel = {}, .args = {}, .key = split_list(s->key), .device = s->device};
              for (const auto& a : split_list(s->args)) {
                const bool tensor = a.ends_with(":tensor");
                sig.args.push_back({tensor ? a.substr(0, a.size() - 7) : a, tensor});
              }
              cj::tuning_database out;
              // Every file is bounded on its own (job.max_candidates configs); together they are bounded
              // too, so that many files cannot grow a database past what its readers take (about 270
              // bytes a config: 8 full files stay under job.max_file_bytes' default).
              const std::uint64_t total_limit = 8 * cj::max_candidates();
              std::uint64_t total = 0;
              for (const auto& f : s->files) {
                if (!std::filesystem::is_regular_file(f) || !std::ifstream(f).good()) {
                  fmt::print(stderr, "cotune: error: {}: cannot read it (no such regular file, or no permission)\n", f);
                  return 2;
                }
                sig.kernel = s->kernel.empty() ? cj::triton_kernel_name(f) : s->kernel;
                const auto e = cj::import_triton_file(f, sig);
                fmt::print("{} [{}]: {{{}}} {} ({} configs)\n", e.kernel, e.key, e.winner.text(), ms(e.time[0]),
                           e.detail ? e.detail->candidates.size() : 0);
                total += e.detail ? e.detail->candidates.size() : 1;
                if (total > total_limit) {
                  fmt::print(stderr,
                             "cotune: error: {}: the Triton files so far hold {} configs together, more than {} (8 x "
                             "job.max_candidates, COTUNE_JOB_MAX_CANDIDATES); import them in parts\n",
                             f, total, total_limit);
                  return 2;
                }
                out.add(e);
              }
              out.save(s->out, secret());
              fmt::print(stderr, "cotune: wrote {} winners to {}{}; a tuner adopts one where its candidates hold an equal "
                                 "config (COTUNE_TUNING_DB={} or `cotune db import {}`)\n",
                         out.size(), s->out, secret().empty() ? "" : " (signed)", s->out, s->out);
              return 0;
            }
            if (exp->parsed()) {
              cj::tuning_database out;
              if (!s->job.empty()) {
                cj::job_spec job;
                try {
                  job = cj::job_spec::load(s->job);
                } catch (const cj::job_error& e) {
                  fmt::print(stderr, "cotune: error: {}\n", e.what());
                  return 2;
                }
                for (const auto& r : collect_job(job, use_redis(s->redis, s->no_redis)))
                  if (r.result) out.add(cj::database_entry::from(*r.result, r.fingerprint, !s->winners_only));
              } else {
                out = from_cache(cache_root(s->cache_dir), !s->winners_only);
              }
              out.save(s->out, secret());
              fmt::print(stderr, "cotune: wrote {} winners to {}{}\n", out.size(), s->out,
                         secret().empty() ? "" : " (signed)");
              return 0;
            }
            if (imp->parsed()) {
              const auto in = cj::tuning_database::load(s->file, secret());
              const auto root = cache_root(s->dir);
              const auto total = cj::import_database(root, in, secret());
              fmt::print("imported {} winners from {} into the cache '{}' ({} in its database now)\n", in.size(),
                         s->file, root.string(), total);
              return 0;
            }
            if (dif->parsed()) {
              using kind = cj::database_change::kind;
              const auto a = cj::tuning_database::load(s->a, secret());
              const auto b = cj::tuning_database::load(s->b, secret());
              std::size_t counts[5] = {};
              for (const auto& c : cj::diff(a, b, s->tolerance_pct / 100.0)) {
                ++counts[static_cast<int>(c.what)];
                if (c.what == kind::same) continue;
                const auto& any = c.before ? *c.before : *c.after;
                if (s->json) {
                  cotune::json_writer w;
                  w.begin_object().field("change", change_name(c.what)).field("kernel", any.kernel);
                  w.field("key", any.key).field("device", any.device);
                  if (c.before) w.field("before", c.before->winner_text()).field("before_ms", c.before->time[0]);
                  if (c.after) w.field("after", c.after->winner_text()).field("after_ms", c.after->time[0]);
                  fmt::print("{}\n", std::move(w.end_object()).take());
                } else {
                  fmt::print("{:<8} {} [{}] on {}{}\n", change_name(c.what), any.kernel, any.key, any.device,
                             c.what != kind::tied       ? ""
                             : s->tolerance_pct > 0     ? " (another winner, within the measured noise or the tolerance)"
                                                        : " (another winner, within the measured noise)");
                  auto band = [](const cj::database_entry& e) {
                    return std::isfinite(e.time[1]) ? fmt::format(" (p20-p80 {:.4f}-{:.4f})", e.time[1], e.time[2])
                                                    : std::string();
                  };
                  if (c.before) fmt::print("  - {{{}}} {}{}\n", c.before->winner_text(), ms(c.before->time[0]), band(*c.before));
                  if (c.after) fmt::print("  + {{{}}} {}{}\n", c.after->winner_text(), ms(c.after->time[0]), band(*c.after));
                }
              }
              const auto count = [&](kind k) { return counts[static_cast<int>(k)]; };
              const std::size_t changed = count(kind::added) + count(kind::removed) + count(kind::changed);
              if (s->json) {
                cotune::json_writer w;
                w.begin_object().field("change", "summary").field("added", count(kind::added));
                w.field("removed", count(kind::removed)).field("changed", count(kind::changed));
                w.field("same", count(kind::same)).field("tied", count(kind::tied));
                fmt::print("{}\n", std::move(w.field("tolerance_pct", s->tolerance_pct).end_object()).take());
              } else {
                fmt::print("{} added, {} removed, {} changed, {} the same, {} tied (another winner within the noise{})\n",
                           count(kind::added), count(kind::removed), count(kind::changed), count(kind::same),
                           count(kind::tied),
                           s->tolerance_pct > 0 ? fmt::format(" or {}%", s->tolerance_pct) : std::string());
              }
              return changed ? 1 : 0;
            }
            if (show->parsed()) {
              const auto d = cj::tuning_database::load(s->file, secret());
              for (const auto& e : d.entries()) {
                if (s->json) {
                  cotune::json_writer w;
                  w.begin_object().field("kernel", e.kernel).field("key", e.key).field("device", e.device);
                  w.field("winner", e.winner_text()).field("median_ms", e.time[0]).field("date", e.date);
                  fmt::print("{}\n", std::move(w.end_object()).take());
                } else {
                  fmt::print("{} [{}] on {}: {{{}}} {} ({})\n", e.kernel, e.key, e.device, e.winner_text(),
                             ms(e.time[0]), e.date);
                }
              }
              if (!s->json)
                fmt::print("{} winner{}{}\n", d.size(), d.size() == 1 ? "" : "s", d.was_signed() ? (secret().empty() ? ", signed (not verified: "
                                                                                            "no secret set)"
                                                                                          : ", signature verified")
                                                                      : ", unsigned");
              return 0;
            }
            return 2;
          };
  return {db, [run]() -> int {
            try {
              return run();
            } catch (const cj::database_error& e) {
              fmt::print(stderr, "cotune: error: {}\n", e.what());
              return 2;
            }
          }};
}

} // namespace cotune_tool
