// `cotune`: the command-line tool. Shows the knobs (with secrets masked) and inspects, verifies and
// clears the file cache.
//
//   cotune knobs [--markdown | --json]      every knob: variable, type, default, current value, doc
//   cotune cache list [--dir D] [--json]    entries under the cache: key, files, sizes, validity
//   cotune cache show <file>                a stored tuning result as a table
//   cotune cache verify [--dir D] [--json]  counts valid and corrupt entries; exit 1 if any is corrupt
//   cotune cache clear [--dir D] [--yes]    removes every entry (asks first unless --yes)
//   cotune version
//
// Human output goes to stdout; with --json, stdout carries only JSON Lines (one object per line) and
// anything meant for a person goes to stderr, so `cotune cache list --json | jq` always parses.
// Exit status: 0 success, 1 a failed check or operation, 2 a usage error.
#include <algorithm>
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

#include <cotune/cache/file_cache.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/entry_frame.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/tuning_result.hpp>
// The modules' knob headers register their groups during static initialisation, so `cotune knobs`
// lists them although nothing here touches them.
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda_knobs.hpp>
#endif
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis_knobs.hpp>
#endif

namespace fs = std::filesystem;

namespace {

// --- knobs ----------------------------------------------------------------------------------------

/// True for knobs whose whole value is a secret. knob_base has no secret flag, so the variable's
/// name decides: COTUNE_REMOTE_SECRET today, and any future *_SECRET, *_PASSWORD or *_TOKEN.
bool is_secret_knob(const cotune::knob_base& k) {
  const auto& env = k.env();
  return env.find("SECRET") != std::string::npos || env.find("PASSWORD") != std::string::npos ||
         env.find("TOKEN") != std::string::npos;
}

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
    const bool secret = is_secret_knob(*k);
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

/// An empty value as `""`, so that it cannot be mistaken for a missing column.
std::string shown_text(const std::string& s) { return s.empty() ? std::string("\"\"") : s; }

/// A Markdown table cell: '|' escaped, line breaks flattened.
std::string md_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

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
      std::string line = "{\"knob\": " + cotune::detail::json_quoted(r.name);
      line += ", \"env\": " + cotune::detail::json_quoted(r.env);
      line += ", \"type\": " + cotune::detail::json_quoted(r.type);
      line += ", \"default\": " + cotune::detail::json_quoted(r.default_text);
      line += ", \"current\": " + cotune::detail::json_quoted(r.current);
      line += fmt::format(", \"set\": {}, \"invalidates_caches\": {}", r.set, r.invalidating);
      line += ", \"doc\": " + cotune::detail::json_quoted(r.doc) + "}";
      fmt::print("{}\n", line);
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

/// What one file under the cache directory is.
enum class file_status {
  valid,     ///< a framed entry that checks out
  corrupt,   ///< named like an entry, but damaged, truncated, foreign or renamed: a miss for readers
  temporary, ///< ".tmp.*": a write in progress, or left behind by a process that died mid-write
  foreign    ///< not cotune's: outside a key directory, not a regular file, or in a directory not named as a key
};

std::string_view to_string(file_status s) {
  switch (s) {
  case file_status::valid: return "valid";
  case file_status::corrupt: return "corrupt";
  case file_status::temporary: return "temporary";
  case file_status::foreign: return "foreign";
  }
  return "?";
}

/// One file under the cache directory, as `cache list` and `cache verify` report it.
struct file_record {
  std::string key_dir; ///< the key directory's name (base32 of the key), empty at the top level
  std::string file;    ///< the file's name
  fs::path path;
  std::uintmax_t bytes = 0;
  file_status status = file_status::foreign;
  std::string note; ///< a tuning result's kernel and winner, or why a file is foreign
};

/// RFC 4648 base32 (no padding) back to bytes; nothing unless `text` is the canonical encoding.
std::optional<std::string> base32_decode(std::string_view text) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= '2' && c <= '7' ? c - '2' + 26 : -1;
    if (v < 0) return std::nullopt;
    buffer = (buffer << 5) | static_cast<std::uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<char>((buffer >> (bits - 8)) & 0xFF));
      bits -= 8;
    }
  }
  if (cotune::detail::base32(out) != text) return std::nullopt; // leftover bits set: not what cotune writes
  return out;
}

/// The hex key of a key directory (52 base32 characters = a SHA-256), or nothing.
std::optional<std::string> key_of_dir(std::string_view name) {
  if (name.size() != 52) return std::nullopt;
  auto bytes = base32_decode(name);
  if (!bytes || bytes->size() != 32) return std::nullopt;
  return cotune::detail::to_hex(std::span(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size()));
}

/// "tuning result: kernel K, key (..), best {..}" for a stored tuning result's payload.
std::string result_note(const std::string& payload) {
  auto r = cotune::tuning_result::from_json(payload);
  if (!r) return "not a readable tuning result";
  return fmt::format("tuning result: kernel {}, key ({}), best {{{}}}", r->kernel, r->key_text, r->best().text());
}

/// A directory's entries in name order, so that output is stable.
std::vector<fs::directory_entry> sorted_entries(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return entries;
}

/// Every file under `root`, checked the way readers check them: through cotune::file_cache.
std::vector<file_record> scan_cache(const fs::path& root) {
  // file_cache resolves its directory from the cache.dir knob; point it at the directory examined.
  cotune::knobs().cache.dir.set(root.string());
  std::vector<file_record> records;
  for (const auto& top : sorted_entries(root)) {
    const auto top_name = top.path().filename().string();
    const auto top_status = top.symlink_status();
    if (!fs::is_directory(top_status)) {
      records.push_back({"", top_name, top.path(), fs::is_regular_file(top_status) ? top.file_size() : 0,
                         file_status::foreign, "not in a key directory"});
      continue;
    }
    const auto key = key_of_dir(top_name);
    std::optional<cotune::file_cache> cache;
    if (key) cache.emplace(*key);
    for (const auto& e : sorted_entries(top.path())) {
      file_record r{top_name, e.path().filename().string(), e.path(), 0, file_status::foreign, {}};
      const auto st = e.symlink_status();
      if (fs::is_regular_file(st)) r.bytes = e.file_size();
      if (!cache) {
        r.note = "the directory's name is not a cache key";
      } else if (!fs::is_regular_file(st)) {
        r.note = fs::is_symlink(st) ? "a symbolic link" : fs::is_directory(st) ? "a directory" : "not a regular file";
      } else if (r.file.starts_with(".tmp.")) {
        r.status = file_status::temporary;
      } else {
        std::optional<std::string> payload;
        try {
          payload = cache->get(r.file);
        } catch (const cotune::cache_error&) {
          // A name that file_cache refuses was not written by it.
        }
        r.status = payload ? file_status::valid : file_status::corrupt;
        if (!payload) r.note = "the frame does not check out (damaged, truncated, renamed, or copied from another key)";
        else if (r.file.ends_with(".autotune.json")) r.note = result_note(*payload);
      }
      records.push_back(std::move(r));
    }
  }
  return records;
}

/// "512 B", "14.7 KiB", "1.2 MiB".
std::string human_size(std::uintmax_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  if (bytes < std::uintmax_t(1024) * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024 * 1024));
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

/// A file's JSON Lines record.
std::string json_line(const file_record& r) {
  std::string line = "{\"type\": \"file\", \"key_dir\": " + cotune::detail::json_quoted(r.key_dir);
  line += ", \"file\": " + cotune::detail::json_quoted(r.file);
  line += ", \"path\": " + cotune::detail::json_quoted(r.path.string());
  line += fmt::format(", \"bytes\": {}, \"status\": ", r.bytes);
  line += cotune::detail::json_quoted(to_string(r.status));
  if (!r.note.empty()) line += ", \"note\": " + cotune::detail::json_quoted(r.note);
  return line + "}";
}

/// How many of each kind of file a scan found.
struct cache_counts {
  std::size_t keys = 0, valid = 0, corrupt = 0, temporary = 0, foreign = 0;
  std::uintmax_t bytes = 0;
};

cache_counts tally(const std::vector<file_record>& records) {
  cache_counts c;
  std::string last_key;
  for (const auto& r : records) {
    if (!r.key_dir.empty() && r.key_dir != last_key && key_of_dir(r.key_dir)) ++c.keys;
    last_key = r.key_dir;
    c.bytes += r.bytes;
    switch (r.status) {
    case file_status::valid: ++c.valid; break;
    case file_status::corrupt: ++c.corrupt; break;
    case file_status::temporary: ++c.temporary; break;
    case file_status::foreign: ++c.foreign; break;
    }
  }
  return c;
}

/// The closing JSON Lines record of `cache list` and `cache verify`.
std::string summary_json(const fs::path& root, const cache_counts& c) {
  return fmt::format("{{\"type\": \"summary\", \"dir\": {}, \"keys\": {}, \"valid\": {}, \"corrupt\": {}, "
                     "\"temporary\": {}, \"foreign\": {}, \"bytes\": {}}}",
                     cotune::detail::json_quoted(root.string()), c.keys, c.valid, c.corrupt, c.temporary, c.foreign,
                     c.bytes);
}

/// The directory to work on: --dir, else the cache.dir knob (COTUNE_CACHE_DIR, XDG, ~/.cache).
fs::path cache_root(const std::string& dir_option) {
  return dir_option.empty() ? fs::path(cotune::knobs().cache.dir.get()) : fs::path(dir_option);
}

/// False (with a note on stderr) when there is no cache directory yet.
bool cache_exists(const fs::path& root) {
  std::error_code ec;
  if (fs::is_directory(root, ec)) return true;
  if (fs::exists(root, ec))
    throw cotune::cache_error(fmt::format("'{}' is not a directory; pass --dir or set COTUNE_CACHE_DIR to the "
                                          "cache directory",
                                          root.string()));
  fmt::print(stderr, "cotune: no cache at '{}' (nothing has been stored there yet)\n", root.string());
  return false;
}

/// `cotune cache list`: every file under the cache, grouped by key directory.
int run_cache_list(const std::string& dir_option, bool json) {
  const auto root = cache_root(dir_option);
  if (!cache_exists(root)) return 0;
  const auto records = scan_cache(root);
  if (json) {
    for (const auto& r : records) fmt::print("{}\n", json_line(r));
    fmt::print("{}\n", summary_json(root, tally(records)));
    return 0;
  }
  const auto c = tally(records);
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

/// `cotune cache verify`: 1 if any entry is corrupt.
int run_cache_verify(const std::string& dir_option, bool json) {
  const auto root = cache_root(dir_option);
  const auto records = cache_exists(root) ? scan_cache(root) : std::vector<file_record>{};
  const auto c = tally(records);
  if (json) {
    for (const auto& r : records)
      if (r.status != file_status::valid) fmt::print("{}\n", json_line(r));
    fmt::print("{}\n", summary_json(root, c));
  } else {
    for (const auto& r : records)
      if (r.status == file_status::corrupt) fmt::print("corrupt: {} ({})\n", r.path.string(), r.note);
    fmt::print("cache '{}': {} valid, {} corrupt, {} temporary, {} foreign\n", root.string(), c.valid, c.corrupt,
               c.temporary, c.foreign);
    if (c.corrupt)
      fmt::print("corrupt entries are misses and are replaced when next stored; `cotune cache clear` removes all\n");
  }
  return c.corrupt ? 1 : 0;
}

/// `cotune cache clear`: removes the key directories, after asking unless `yes`.
int run_cache_clear(const std::string& dir_option, bool yes) {
  const auto root = cache_root(dir_option);
  if (!cache_exists(root)) return 0;
  // Only key directories go: a cache directory pointed at the wrong place ($HOME, a project) must not
  // lose anything that cotune did not write.
  std::vector<fs::path> doomed;
  std::size_t foreign = 0;
  std::uintmax_t bytes = 0;
  for (const auto& e : sorted_entries(root)) {
    if (fs::is_directory(e.symlink_status()) && key_of_dir(e.path().filename().string())) {
      doomed.push_back(e.path());
      for (const auto& f : fs::recursive_directory_iterator(e.path()))
        if (fs::is_regular_file(f.symlink_status())) bytes += f.file_size();
    } else {
      ++foreign;
    }
  }
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
  for (const auto& dir : doomed) fs::remove_all(dir);
  fmt::print("removed {} cache entries ({}) from '{}'{}\n", doomed.size(), human_size(bytes), root.string(),
             foreign ? fmt::format("; left {} other files or directories alone", foreign) : std::string());
  return 0;
}

/// `cotune cache show`: a stored tuning result (framed or plain JSON) as a table.
int run_cache_show(const std::string& file) {
  const fs::path path(file);
  auto text = cotune::detail::read_file(path);
  if (!text)
    throw cotune::cache_error(fmt::format("cannot read '{}': it does not exist or is not a regular file", file));
  // A framed entry from the cache, or a plain JSON file (the dump directory, a copy someone made).
  std::string payload = *text;
  std::string origin = "a plain JSON file";
  const auto binding = cotune::detail::entry_binding(fs::absolute(path).parent_path().filename().string(),
                                                     path.filename().string());
  if (auto framed = cotune::detail::unframe(binding, *text)) {
    payload = std::string(*framed);
    origin = "a verified cache entry";
  } else if (std::string_view(*text).ends_with(cotune::detail::frame_tail)) {
    throw cotune::cache_error(fmt::format("'{}' is a damaged, renamed or moved cache entry (its frame does not check out; an "
                                          "entry is bound to its file name and its key's directory, so show it where "
                                          "the cache keeps it); the tuning result cannot be trusted",
                                          file));
  }
  auto r = cotune::tuning_result::from_json(payload);
  if (!r)
    throw cotune::cache_error(fmt::format("'{}' is not a tuning result (expected the JSON of a "
                                          "<kernel>.autotune.json entry, with at least one measured candidate)",
                                          file));
  fmt::print("{} ({})\n", file, origin);
  fmt::print("kernel:   {}\nkey:      ({})\nbest:     #{} {{{}}}\n", r->kernel, r->key_text, r->winner, r->best().text());
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
  CLI::App app{"cotune: inspect cotune's knobs and caches"};
  app.set_version_flag("--version", std::string("cotune ") + cotune::version);
  app.require_subcommand(1);

  bool markdown = false, json = false, yes = false;
  std::string dir, file;

  auto* knobs_cmd = app.add_subcommand("knobs", "every knob: variable, type, default, current value (secrets masked)");
  auto* markdown_flag = knobs_cmd->add_flag("--markdown", markdown, "print the README's table (Markdown)");
  knobs_cmd->add_flag("--json", json, "print one JSON object per knob")->excludes(markdown_flag);

  auto* cache_cmd = app.add_subcommand("cache", "inspect, verify or clear the file cache");
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

  auto* version_cmd = app.add_subcommand("version", "print the version, cache format and modules");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; the rest are usage errors.
    return app.exit(e) == 0 ? 0 : 2;
  }

  try {
    if (knobs_cmd->parsed()) return run_knobs(markdown, json);
    if (list_cmd->parsed()) return run_cache_list(dir, json);
    if (show_cmd->parsed()) return run_cache_show(file);
    if (verify_cmd->parsed()) return run_cache_verify(dir, json);
    if (clear_cmd->parsed()) return run_cache_clear(dir, yes);
    if (version_cmd->parsed()) return run_version();
  } catch (const std::exception& e) {
    fmt::print(stderr, "cotune: error: {}\n", mask_url_passwords(e.what()));
    return 1;
  }
  return 2;
}
