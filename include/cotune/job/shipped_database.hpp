#pragma once
/// \file `cotune::job::find_winner`: the winner a shipped tuning database holds for a kernel's key on
/// a device, for a tuner to launch without tuning. The database is `COTUNE_TUNING_DB` (read-only),
/// then the one `cotune db import` put into the file cache; each file is read once per process (again
/// when it changes).
///
///     if (auto r = cotune::job::database_result("matmul", key_text, device_name, candidates)) use(*r);

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/job/job_knobs.hpp>
#include <cotune/job/tuning_database.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/winner_source.hpp>

namespace cotune::job {

namespace detail {

/// A database file read once per (path, size, mtime, secret).
struct loaded_database {
  std::string path, secret;
  std::uintmax_t size = 0;
  std::filesystem::file_time_type mtime{};
  std::shared_ptr<const tuning_database> db;
};

[[nodiscard]] inline std::shared_ptr<const tuning_database> load_once(loaded_database& slot, const std::string& path,
                                                                      const std::string& secret) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw database_error(path + ": cannot read the tuning database (" + ec.message() + ")");
  const auto mtime = std::filesystem::last_write_time(path, ec);
  if (slot.db && slot.path == path && slot.secret == secret && slot.size == size && slot.mtime == mtime) return slot.db;
  slot = {path, secret, size, mtime, std::make_shared<const tuning_database>(tuning_database::load(path, secret))};
  return slot.db;
}

} // namespace detail

/// The winner for `kernel` and `key` on `device` in the shipped databases (COTUNE_TUNING_DB first, then
/// the cache's imported one), or nothing. Throws database_error for a database that is unreadable,
/// damaged, or unsigned while a secret is set: a tuner reports it as a warning and tunes.
[[nodiscard]] inline std::optional<database_entry> find_winner(std::string_view kernel, std::string_view key,
                                                               std::string_view device) {
  static std::mutex mutex;
  static detail::loaded_database from_knob;
  const std::string secret = job_knobs().secret.get().value_or("");
  std::lock_guard lock(mutex);
  if (auto path = job_knobs().database.get()) {
    auto db = detail::load_once(from_knob, *path, secret);
    if (const auto* e = db->find(kernel, key, device)) return *e;
  }
  const std::filesystem::path root = knobs().cache.dir.get();
  file_cache cache(root, imported_database_key());
  if (auto file = cache.get_file(imported_database_file)) {
    // The cache verified the entry's frame; the database's own checksum and signature are checked too.
    auto text = cache.get(imported_database_file);
    if (text) {
      const auto db = tuning_database::from_json(*text, secret, file->string());
      if (const auto* e = db.find(kernel, key, device)) return *e;
    }
  }
  return std::nullopt;
}

/// The result a tuner adopts for a database hit: its own candidate list, with the winner the equal
/// config (status ok, the shipped time; the others not run). Nothing when the shipped winner is not
/// among `candidates` (the candidate list changed since the database was made): then tune.
[[nodiscard]] inline std::optional<tuning_result> database_result(const database_entry& e,
                                                                  const std::vector<config>& candidates,
                                                                  std::string_view key_text) {
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!(candidates[i] == e.winner)) continue;
    tuning_result r;
    r.kernel = e.kernel;
    r.key_text = key_text;
    for (const auto& c : candidates) r.candidates.push_back(candidate_result{c});
    r.candidates[i].status = candidate_status::ok;
    r.candidates[i].time = e.time;
    r.winner = i;
    r.from_cache = true;
    r.made = provenance{e.host, e.device, e.date, e.cotune_version};
    return r;
  }
  return std::nullopt;
}

namespace detail {
/// Installs the shipped-database lookup for every tuner of the process (tune/winner_source.hpp), during
/// static initialisation of any program that includes this header.
inline const bool shipped_database_installed = [] {
  shipped_winner_source() = [](std::string_view kernel, std::string_view key, std::string_view device,
                               const std::vector<config>& candidates) -> std::optional<tuning_result> {
    if (auto e = find_winner(kernel, key, device)) return database_result(*e, candidates, key);
    // A key the shipped database lacks: tune (the default), or launch the first candidate unmeasured.
    if (!job_knobs().database.get() || job_knobs().fallback.get() != "default" || candidates.empty())
      return std::nullopt;
    tuning_result r;
    r.kernel = std::string(kernel);
    r.key_text = std::string(key);
    for (const auto& c : candidates) r.candidates.push_back(candidate_result{c});
    r.candidates[0].status = candidate_status::ok;
    r.candidates[0].time = {0.0, 0.0, 0.0};
    r.candidates[0].reason = "the default config: the shipped database has no entry for this key "
                             "(COTUNE_TUNING_DB_FALLBACK=default); not measured";
    r.winner = 0;
    r.from_cache = true;
    r.made = provenance::here(std::string(device));
    return r;
  };
  return true;
}();
} // namespace detail

} // namespace cotune::job
