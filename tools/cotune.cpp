// `cotune`: the command-line tool. Shows the knobs (with secrets masked) and inspects, verifies and
// clears the file cache.
//
//   cotune knobs [--markdown | --json]      every knob: variable, type, default, current value, doc
//   cotune cache list [--dir D] [--json]    entries under the cache: key, files, sizes, validity
//   cotune cache show <file>                a stored tuning result as a table
//   cotune cache verify [--dir D] [--json]  counts valid and corrupt entries; exit 1 if any is corrupt
//                                           or if the directory is not trusted (cache/cache_trust.hpp)
//   cotune cache clear [--dir D] [--yes]    removes every entry (asks first unless --yes)
//   cotune cache gc [--dir D] [--max-bytes N] [--tmp-max-age S] [--json]
//                                           reclaims orphaned temporary files; evicts LRU entries beyond N
//   cotune version
//   cotune tune JOB ...                     tune a job file (tools/tune_command.cpp)
//   cotune db export|import|diff|show ...   tuning databases (tools/db_command.cpp)
//   cotune report INPUT -o FILE             an HTML report (tools/report_command.cpp)
//
// Human output goes to stdout; with --json, stdout carries only JSON Lines (one object per line) and
// anything meant for a person goes to stderr, so `cotune cache list --json | jq` always parses.
// Exit status: 0 success, 1 a failed check or operation, 2 a usage error.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cotune/cache/cache_inventory.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/version.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/tuning_result.hpp>

#include "commands.hpp"
#include "markdown.hpp"
// The modules' knob headers register their groups during static initialisation, so `cotune knobs`
// lists them although nothing here touches them.
#include <cotune/batch/job_knobs.hpp>
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda_knobs.hpp>
#endif
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis_knobs.hpp>
#endif

namespace fs = std::filesystem;

namespace {

// --- knobs ----------------------------------------------------------------------------------------

/// `text` with the password of every URL login hidden: scheme://user:pass@host becomes
/// scheme://user:***@host, and scheme://pass@host (how redis-cli reads a lone login) scheme://***@host.
std::string mask_url_passwords(std::string text) {
  std::size_t from = 0;
  while (true) {
    const auto scheme_end = text.find("://", from);
    if (scheme_end == std::string::npos) return text;
    const auto login_start = scheme_end + 3;
    // The URL ends at white space; the login ends at its last '@' (a password may hold an '@').
    auto url_end = text.find_first_of(" \t\n'\"", login_start);
    if (url_end == std::string::npos) url_end = text.size();
    const auto at = text.rfind('@', url_end - 1);
    if (at == std::string::npos || at < login_start || url_end == login_start) {
      from = login_start;
      continue;
    }
    const auto colon = text.find(':', login_start);
    const auto hide_from = colon != std::string::npos && colon < at ? colon + 1 : login_start;
    text.replace(hide_from, at - hide_from, "***");
    from = hide_from + 3 + 1;
  }
}

/// What `cotune knobs` shows of one knob.
struct knob_row {
  std::string name, env, type, default_text, current, doc;
  bool set = false;          ///< set in the environment (the tool sets nothing in code)
  bool invalidating = false; ///< hashed into cache keys
};

std::vector<knob_row> knob_rows() {
  std::vector<knob_row> rows;
  for (const auto* k : cotune::knob_registry::instance().all()) {
    knob_row r{k->name(), k->env(), k->type_name(), mask_url_passwords(k->default_text()), {}, k->doc(), false,
               k->invalidates_caches()};
    const bool secret = k->is_secret();
    try {
      r.set = k->is_set();
      r.current = secret && r.set ? std::string("***") : mask_url_passwords(k->current_text());
    } catch (const std::exception& e) {
      // The error names the bad text, which for a secret is the secret itself.
      r.current = secret ? std::string("(invalid)") : "(invalid: " + mask_url_passwords(e.what()) + ")";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

using cotune_tools::md_cell;
using cotune_tools::shown_text;

/// `cotune knobs`: a table for people, the README's Markdown table, or JSON Lines.
int run_knobs(bool markdown, bool json) {
  const auto rows = knob_rows();
  if (markdown) {
    // The README's table: what a knob is, not what it happens to be on this machine.
    fmt::print("| Knob | Environment variable | Type | Default | Description |\n");
    fmt::print("|---|---|---|---|---|\n");
    for (const auto& r : rows)
      fmt::print("| `{}` | `{}` | {} | {} | {}{} |\n", r.name, r.env, r.type, md_cell(shown_text(r.default_text)),
                 md_cell(r.doc),
                 r.invalidating && r.doc.find("cache key") == std::string::npos ? " (part of every cache key)" : "");
    return 0;
  }
  if (json) {
    for (const auto& r : rows) {
      cotune::json_writer w;
      w.begin_object().field("knob", r.name).field("env", r.env).field("type", r.type);
      w.field("default", r.default_text).field("current", r.current).field("set", r.set);
      w.field("invalidates_caches", r.invalidating).field("doc", r.doc).end_object();
      fmt::print("{}\n", w.str());
    }
    return 0;
  }
  std::size_t name_w = 4, env_w = 8, type_w = 4;
  for (const auto& r : rows) {
    name_w = std::max(name_w, r.name.size());
    env_w = std::max(env_w, r.env.size());
    type_w = std::max(type_w, r.type.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", "KNOB", name_w, "VARIABLE", env_w, "TYPE", type_w, "VALUE");
  for (const auto& r : rows) {
    // The default only where it says more than the value: a computed one, or the value is set.
    std::string value = shown_text(r.current);
    if (r.set) value += fmt::format(" (set; default: {})", shown_text(r.default_text));
    else if (r.default_text != r.current) value += fmt::format(" (default: {})", shown_text(r.default_text));
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", r.name, name_w, r.env, env_w, r.type, type_w, value);
    const bool doc_says_it = r.doc.find("cache key") != std::string::npos;
    fmt::print("    {}{}\n", r.doc, r.invalidating && !doc_says_it ? " (part of every cache key)" : "");
  }
  return 0;
}

// --- the file cache -------------------------------------------------------------------------------

using cotune::cache_file;
using cotune::cache_file_status;
using cotune::cache_inventory;

/// What a listing says of a valid entry: a tuning result's kernel, key and winner.
std::string describe_entry(const cache_file& f, std::string_view payload) {
  if (!f.file.ends_with(".autotune.json")) return {};
  auto r = cotune::tuning_result::from_json(payload);
  if (!r) return "not a readable tuning result";
  return fmt::format("tuning result: kernel {}, key ({}), best {{{}}}", r->kernel, r->key_text, r->shown(r->best()));
}

/// "512 B", "14.7 KiB", "1.2 MiB".
std::string human_size(std::uintmax_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  if (bytes < std::uintmax_t(1024) * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024 * 1024));
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

/// A file's JSON Lines record.
std::string json_line(const cache_file& r) {
  cotune::json_writer w;
  w.begin_object().field("type", "file").field("key_dir", r.key_dir).field("file", r.file);
  w.field("path", r.path.string()).field("bytes", r.bytes).field("status", to_string(r.status));
  if (!r.note.empty()) w.field("note", r.note);
  return std::move(w.end_object()).take();
}

/// The closing JSON Lines record of `cache list` and `cache verify`.
std::string summary_json(const fs::path& root, const cotune::cache_totals& c) {
  cotune::json_writer w;
  w.begin_object().field("type", "summary").field("dir", root.string()).field("keys", c.keys);
  w.field("valid", c.valid).field("corrupt", c.corrupt).field("temporary", c.temporary).field("foreign", c.foreign);
  return std::move(w.field("bytes", c.bytes).end_object()).take();
}

/// The directory to work on: --dir, else the cache.dir knob (COTUNE_CACHE_DIR, XDG, ~/.cache).
fs::path cache_root(const std::string& dir_option) {
  return dir_option.empty() ? fs::path(cotune::knobs().cache.dir.get()) : fs::path(dir_option);
}

/// False (with a note on stderr) when there is no cache directory yet.
bool cache_exists(const cache_inventory& inv) {
  if (inv.exists()) return true;
  fmt::print(stderr, "cotune: no cache at '{}' (nothing has been stored there yet)\n", inv.root().string());
  return false;
}

/// `cotune cache list`: every file under the cache, grouped by key directory.
int run_cache_list(const std::string& dir_option, bool json) {
  const cache_inventory inv{cache_root(dir_option)};
  const auto& root = inv.root();
  if (!cache_exists(inv)) return 0;
  const auto records = inv.files(describe_entry);
  const auto c = cache_inventory::totals(records);
  if (json) {
    for (const auto& r : records) fmt::print("{}\n", json_line(r));
    fmt::print("{}\n", summary_json(root, c));
    return 0;
  }
  fmt::print("cache '{}': {} keys, {} files, {} ({} valid, {} corrupt, {} temporary, {} foreign)\n", root.string(),
             c.keys, records.size(), human_size(c.bytes), c.valid, c.corrupt, c.temporary, c.foreign);
  std::size_t name_w = 4;
  for (const auto& r : records) name_w = std::max(name_w, r.file.size());
  std::string current_dir = "\n"; // no directory name is a newline: the first record always starts one
  for (const auto& r : records) {
    if (r.key_dir != current_dir) {
      current_dir = r.key_dir;
      fmt::print("{}\n", current_dir.empty() ? std::string("(top level)") : current_dir);
    }
    fmt::print("  {:<{}}  {:>10}  {}{}\n", r.file, name_w, human_size(r.bytes), to_string(r.status),
               r.note.empty() ? std::string() : "  " + r.note);
  }
  return 0;
}

/// `cotune cache verify`: 1 if any entry is corrupt or the directory is not trusted (readers refuse it).
int run_cache_verify(const std::string& dir_option, bool json) {
  const cache_inventory inv{cache_root(dir_option)};
  const auto& root = inv.root();
  const auto records = cache_exists(inv) ? inv.files(describe_entry) : std::vector<cache_file>{};
  const auto c = cache_inventory::totals(records);
  const auto trust = inv.trust();
  if (json) {
    if (!trust.trusted) {
      cotune::json_writer w;
      fmt::print("{}\n", std::move(w.begin_object().field("type", "untrusted").field("dir", root.string())
                                       .field("why", trust.why).end_object()).take());
    }
    for (const auto& r : records)
      if (r.status != cache_file_status::valid) fmt::print("{}\n", json_line(r));
    fmt::print("{}\n", summary_json(root, c));
  } else {
    for (const auto& r : records)
      if (r.status == cache_file_status::corrupt) fmt::print("corrupt: {} ({})\n", r.path.string(), r.note);
    fmt::print("cache '{}': {} valid, {} corrupt, {} temporary, {} foreign\n", root.string(), c.valid, c.corrupt,
               c.temporary, c.foreign);
    if (c.corrupt)
      fmt::print("corrupt entries are misses and are replaced when next stored; `cotune cache clear` removes all\n");
    if (!trust.trusted) fmt::print("untrusted: {}\n", trust.why);
  }
  return c.corrupt || !trust.trusted ? 1 : 0;
}

/// `cotune cache gc`: reclaims temporary files left by dead writers and, with a limit, evicts the least
/// recently used entries that no live process holds. Negative options mean "the knob's value".
int run_cache_gc(const std::string& dir_option, std::int64_t max_bytes, std::int64_t tmp_max_age_s, bool json) {
  const cache_inventory inv{cache_root(dir_option)};
  const auto& root = inv.root();
  if (!cache_exists(inv)) return 0;
  auto opts = cotune::cache_gc_options::from_knobs();
  if (max_bytes >= 0) opts.max_bytes = static_cast<std::uintmax_t>(max_bytes);
  if (tmp_max_age_s >= 0) opts.tmp_max_age = std::chrono::seconds(tmp_max_age_s);
  const auto r = inv.gc(opts);
  if (json) {
    cotune::json_writer w;
    w.begin_object().field("type", "gc").field("dir", root.string()).field("max_bytes", opts.max_bytes);
    w.field("tmp_max_age_s", static_cast<std::int64_t>(opts.tmp_max_age.count()));
    w.field("temporaries_removed", r.temporaries_removed).field("temporary_bytes", r.temporary_bytes);
    w.field("temporary_bytes_left", r.temporary_bytes_left);
    w.field("evicted", r.evicted).field("evicted_bytes", r.evicted_bytes).field("pinned", r.pinned);
    w.field("dirs_removed", r.dirs_removed).field("bytes_before", r.bytes_before).field("bytes_after", r.bytes_after);
    w.key("skipped").begin_array();
    for (const auto& why : r.skipped) w.value(why);
    fmt::print("{}\n", std::move(w.end_array().end_object()).take());
  } else {
    fmt::print("cache '{}': removed {} orphaned temporary files ({}), evicted {} entries ({}), removed {} empty key "
               "directories; entries now take {}{}{}\n",
               root.string(), r.temporaries_removed, human_size(r.temporary_bytes), r.evicted,
               human_size(r.evicted_bytes), r.dirs_removed, human_size(r.bytes_after),
               r.temporary_bytes_left ? fmt::format(", writes in progress {}", human_size(r.temporary_bytes_left))
                                      : std::string(),
               opts.max_bytes ? fmt::format(" (limit {})", human_size(opts.max_bytes)) : std::string(" (no limit)"));
    if (r.pinned)
      fmt::print("{} entries beyond the limit were kept: live processes have them loaded\n", r.pinned);
    for (const auto& why : r.skipped) fmt::print("skipped: {}\n", why);
  }
  return 0;
}

/// `cotune cache clear`: removes the key directories, after asking unless `yes`.
int run_cache_clear(const std::string& dir_option, bool yes) {
  const cache_inventory inv{cache_root(dir_option)};
  const auto& root = inv.root();
  if (!cache_exists(inv)) return 0;
  const auto plan = inv.plan_clear();
  const auto& doomed = plan.key_dirs;
  const auto foreign = plan.left_alone;
  const auto bytes = plan.bytes;
  if (doomed.empty()) {
    fmt::print("cache '{}' holds no entries{}\n", root.string(),
               foreign ? fmt::format(" ({} other files or directories left alone)", foreign) : std::string());
    return 0;
  }
  if (!yes) {
    const auto question = fmt::format("remove {} cache entries ({}) from '{}'?", doomed.size(), human_size(bytes),
                                      root.string());
    if (!::isatty(STDIN_FILENO)) {
      fmt::print(stderr, "cotune: {} pass --yes to confirm (standard input is not a terminal to ask on)\n", question);
      return 1;
    }
    fmt::print(stderr, "{} [y/N] ", question);
    std::fflush(stderr);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      fmt::print(stderr, "cotune: nothing removed\n");
      return 1;
    }
  }
  inv.clear(plan);
  fmt::print("removed {} cache entries ({}) from '{}'{}\n", doomed.size(), human_size(bytes), root.string(),
             foreign ? fmt::format("; left {} other files or directories alone", foreign) : std::string());
  return 0;
}

/// `cotune cache show`: a stored tuning result (framed or plain JSON) as a table.
int run_cache_show(const std::string& file) {
  const auto entry = cache_inventory::read_entry(file);
  const std::string origin = entry.verified_entry ? "a verified cache entry" : "a plain JSON file";
  auto r = cotune::tuning_result::from_json(entry.payload);
  if (!r)
    throw cotune::cache_error(fmt::format("'{}' is not a tuning result (expected the JSON of a "
                                          "<kernel>.autotune.json entry, with at least one measured candidate)",
                                          file));
  fmt::print("{} ({})\n", file, origin);
  fmt::print("kernel:   {}\nkey:      ({})\nbest:     #{} {{{}}}\n", r->kernel, r->key_text, r->winner, r->shown(r->best()));
  fmt::print("measured: on {} ({}) at {} by cotune {}\n", r->made.host.empty() ? "?" : r->made.host,
             r->made.device.empty() ? "?" : r->made.device, r->made.date.empty() ? "?" : r->made.date,
             r->made.cotune_version);
  std::fflush(stdout);
  cotune::printing_observer::print_table(stdout, *r);
  return 0;
}

/// `cotune version`.
int run_version() {
  std::string modules;
#ifdef COTUNE_HAS_CUDA
  modules += " cuda";
#endif
#ifdef COTUNE_HAS_REDIS
  modules += " redis";
#endif
  fmt::print("cotune {}\ncache format {}\nmodules: core{}\ncache directory: {}\n", cotune::version,
             cotune::cache_format_version, modules, cotune::knobs().cache.dir.get());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"cotune: tune jobs, and inspect cotune's knobs, caches and tuning databases"};
  app.set_version_flag("--version", std::string("cotune ") + cotune::version);
  app.require_subcommand(1);

  bool markdown = false, json = false, yes = false;
  std::string dir, file;

  auto* knobs_cmd = app.add_subcommand("knobs", "every knob: variable, type, default, current value (secrets masked)");
  auto* markdown_flag = knobs_cmd->add_flag("--markdown", markdown, "print the README's table (Markdown)");
  knobs_cmd->add_flag("--json", json, "print one JSON object per knob")->excludes(markdown_flag);
  bool check = false;
  knobs_cmd->add_flag("--check", check,
                      "check every knob's value from the environment; exit 1 naming each bad one and what it "
                      "accepts")
      ->excludes(markdown_flag);

  auto* cache_cmd = app.add_subcommand("cache", "inspect, verify, clear or collect the file cache");
  cache_cmd->require_subcommand(1);
  const std::string dir_help = "the cache directory (default: the cache.dir knob, COTUNE_CACHE_DIR)";
  auto* list_cmd = cache_cmd->add_subcommand("list", "every entry: key directory, files, sizes, validity");
  list_cmd->add_option("--dir", dir, dir_help);
  list_cmd->add_flag("--json", json, "print JSON Lines: one object per file, then a summary");
  auto* show_cmd = cache_cmd->add_subcommand("show", "print a stored tuning result as a table");
  show_cmd->add_option("file", file, "a <kernel>.autotune.json entry (framed or plain)")->required();
  auto* verify_cmd = cache_cmd->add_subcommand("verify", "check every entry; exit 1 if any is corrupt");
  verify_cmd->add_option("--dir", dir, dir_help);
  verify_cmd->add_flag("--json", json, "print JSON Lines: one object per file that is not valid, then a summary");
  auto* clear_cmd = cache_cmd->add_subcommand("clear", "remove every cache entry (other files are left alone)");
  clear_cmd->add_option("--dir", dir, dir_help);
  clear_cmd->add_flag("--yes,-y", yes, "do not ask for confirmation");

  std::int64_t max_bytes = -1, tmp_max_age_s = -1;
  auto* gc_cmd = cache_cmd->add_subcommand("gc", "reclaim orphaned temporary files; evict least recently used "
                                                 "entries beyond a size limit");
  gc_cmd->add_option("--dir", dir, dir_help);
  gc_cmd->add_option("--max-bytes", max_bytes, "evict beyond this many bytes (default: cache.max_bytes, "
                                               "COTUNE_CACHE_MAX_BYTES; 0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  gc_cmd->add_option("--tmp-max-age", tmp_max_age_s, "reclaim other hosts' unlocked temporary files at least this "
                                                     "many seconds old; a dead writer's on this host go at once "
                                                     "(default: cache.tmp_max_age_s, COTUNE_CACHE_TMP_MAX_AGE_S)")
      ->check(CLI::NonNegativeNumber);
  gc_cmd->add_flag("--json", json, "print one JSON object saying what was done");

  auto* version_cmd = app.add_subcommand("version", "print the version, cache format and modules");
  // Tuning as a job (tools/tune_command.cpp, db_command.cpp, report_command.cpp).
  const cotune_tool::command job_commands[] = {cotune_tool::add_tune_command(app), cotune_tool::add_db_command(app),
                                               cotune_tool::add_report_command(app),
                                               cotune_tool::add_precompile_command(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; the rest are usage errors.
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (knobs_cmd->parsed() && check) {
      cotune::knob_registry::instance().check(); // a knob_error below: printed, exit 1
      fmt::print("every knob's value is usable\n");
      return 0;
    }
    if (knobs_cmd->parsed()) return run_knobs(markdown, json);
    if (list_cmd->parsed()) return run_cache_list(dir, json);
    if (show_cmd->parsed()) return run_cache_show(file);
    if (verify_cmd->parsed()) return run_cache_verify(dir, json);
    if (clear_cmd->parsed()) return run_cache_clear(dir, yes);
    if (gc_cmd->parsed()) return run_cache_gc(dir, max_bytes, tmp_max_age_s, json);
    if (version_cmd->parsed()) return run_version();
    for (const auto& c : job_commands)
      if (c.app->parsed()) return c.run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "cotune: error: {}\n", mask_url_passwords(e.what()));
    return 1;
  }
  return 2;
}
