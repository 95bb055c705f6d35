#pragma once
/// \file The bodies of batch/shipped_database.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <cotune/batch/shipped_database.hpp>

namespace cotune::batch {

COTUNE_DECL std::optional<database_entry> find_winner(std::string_view kernel, std::string_view key,
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

COTUNE_DECL std::optional<tuning_result> database_result(const database_entry& e,
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

COTUNE_DECL std::shared_ptr<const tuning_database> load_once(loaded_database& slot, const std::string& path,
                                                             const std::string& secret) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw database_error(path + ": cannot read the tuning database (" + ec.message() + ")");
  const auto mtime = std::filesystem::last_write_time(path, ec);
  if (slot.db && slot.path == path && slot.secret == secret && slot.size == size && slot.mtime == mtime) return slot.db;
  slot = {path, secret, size, mtime, std::make_shared<const tuning_database>(tuning_database::load(path, secret))};
  return slot.db;
}

COTUNE_DECL std::optional<tuning_result> shipped_lookup(std::string_view kernel, std::string_view key,
                                                       std::string_view device, const std::vector<config>& candidates) {
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
}

/// Installs the shipped-database lookup for every tuner of the process (tune/winner_source.hpp), during
/// static initialisation. With COTUNE_SEPARATE_COMPILATION, defined once, in the impl/src.hpp file, so
/// that the lookup and what it calls are compiled there alone; header-only, by each file that includes
/// batch/shipped_database.hpp and instantiates a tuner (add_process_setup, in shipped_database.hpp).
#if !COTUNE_HEADER_ONLY
COTUNE_DECL const bool shipped_database_installed = [] {
  shipped_winner_source() = &shipped_lookup;
  return true;
}();
#endif

} // namespace detail

} // namespace cotune::batch
