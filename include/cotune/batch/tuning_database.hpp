#pragma once
/// \file `cotune::batch::tuning_database`: the winners of many tunings in one portable file: per
/// (kernel, key, device) the winning config, its measured time, the toolchain fingerprint and the
/// date, and optionally every candidate. `cotune db export` writes one, `cotune db import` merges one
/// into a cache, `cotune db diff` compares two, and an application reads one read-only
/// (`COTUNE_TUNING_DB`) to launch shipped winners without tuning (`find_winner`).
///
/// Integrity: every file carries a SHA-256 over its entries; with a secret (COTUNE_TUNING_DB_SECRET)
/// it also carries an HMAC-SHA256, and a reader with the secret refuses a file without a valid one.
/// Both are computed over the parsed entries (names, key texts, config texts, shortest round-trip
/// text of each time), not over the file's bytes, so re-indenting a database does not break it.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>


#include <cotune/cache/file_cache.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/json.hpp>
#include <cotune/tune/tuning_result.hpp>

namespace cotune::batch {

/// A database that cannot be read or trusted: which file, what is wrong, what to do.
class database_error : public error {
public:
  using error::error;
};

/// One shipped winner.
struct database_entry {
  std::string kernel;
  std::string key;         ///< the key text, as the application's tuner writes it (`A: float32, n=64`)
  std::string device;      ///< the device's name (the backend's device_name)
  std::string fingerprint; ///< toolchain and device identity, when known (exports from a job know it)
  std::string date;        ///< when it was measured (UTC, ISO 8601)
  std::string host;
  std::string cotune_version;
  config winner;
  timings time{inf_ms, inf_ms, inf_ms}; ///< the winner's median, p20, p80 in ms
  std::optional<tuning_result> detail{}; ///< every candidate, when exported with them
  bool launch_options = true; ///< the backend uses configs' launch options (false: the host backend)

  /// The winner as its backend sees it: without launch options where it has none.
  [[nodiscard]] std::string winner_text() const { return launch_options ? winner.text() : winner.params_text(); }

  /// The entry of a tuning result (a job's key text loses its `instance: ` prefix).
  [[nodiscard]] static COTUNE_DECL database_entry from(const tuning_result& r, std::string fingerprint = {},
                                                       bool with_candidates = true);

  /// Why a reader would refuse this entry, or nothing: what `tuning_database::from_json` holds every entry
  /// to (a kernel name that is a C identifier, as in a job file; launch options in a job file's range;
  /// parameters and strings bounded; no control character in what listings print; times that are
  /// measurements), so that `save` never writes a file its own reader refuses.
  [[nodiscard]] COTUNE_DECL std::string problem() const;

  /// What identifies an entry: kernel, key, device.
  [[nodiscard]] std::tuple<const std::string&, const std::string&, const std::string&> id() const noexcept {
    return {kernel, key, device};
  }
};

/// How a winner changed between two databases.
struct database_change {
  /// `tied`: another winning config, whose time is within the measured noise of the first (or a tolerance).
  enum class kind { added, removed, changed, same, tied };
  kind what = kind::same;
  const database_entry* before = nullptr; ///< in the first database (null when added)
  const database_entry* after = nullptr;  ///< in the second (null when removed)
};

/// A set of winners, at most one per (kernel, key, device).
class tuning_database {
public:
  static constexpr std::string_view format_name = "cotune-tuning-database";
  static constexpr int format_version = 1;

  /// Adds an entry, replacing the one with the same kernel, key and device (in constant time: merging
  /// databases of the entry limit's size stays linear).
  COTUNE_DECL void add(database_entry e);
  /// Adds every entry of `other` (its entries replace equal ones here).
  COTUNE_DECL void merge(const tuning_database& other);

  [[nodiscard]] const std::vector<database_entry>& entries() const noexcept { return entries_; }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  /// Whether the file it was read from carried a signature (verified if the reader had the secret).
  [[nodiscard]] bool was_signed() const noexcept { return signed_; }

  /// The entry for this kernel and key on this device, or null. An empty `device` matches any.
  [[nodiscard]] COTUNE_DECL const database_entry* find(std::string_view kernel, std::string_view key,
                                                       std::string_view device) const noexcept;

  /// The file's text: entries sorted by kernel, key and device; signed when `secret` is not empty. Entries
  /// are written as they are (`save` checks them first).
  [[nodiscard]] COTUNE_DECL std::string json(std::string_view secret = {}) const;

  /// Reads a database; with a `secret`, refuses one that is not signed with it. `origin` names the
  /// file in messages.
  [[nodiscard]] static COTUNE_DECL tuning_database from_json(std::string_view text, std::string_view secret,
                                                             const std::string& origin);

  /// Reads a database file (see from_json).
  [[nodiscard]] static COTUNE_DECL tuning_database load(const std::filesystem::path& file, std::string_view secret = {});

  /// Writes the database to a file (atomically: a temporary file, then a rename). An entry that `from_json`
  /// would refuse (database_entry::problem) is not written: `database_error` names it, and the file is
  /// left as it was.
  COTUNE_DECL void save(const std::filesystem::path& file, std::string_view secret = {}) const;

private:
  static COTUNE_DECL std::string digest_of(const std::vector<database_entry>& entries);

  std::vector<database_entry> entries_;
  std::unordered_map<std::string, std::size_t> index_; ///< id_text of an entry -> its first position
  bool signed_ = false;
};

/// Which winners differ between two databases, by (kernel, key, device): added, removed, changed
/// (another winning config), tied (another winning config, `within_noise`), the same; in the order of `a`,
/// then the entries only `b` has.
[[nodiscard]] COTUNE_DECL std::vector<database_change> diff(const tuning_database& a, const tuning_database& b,
                                                            double tolerance = 0);

/// Whether two winners' times are one time measured twice: their p20-p80 bands overlap (each entry's own
/// measured noise), or their medians differ by at most `tolerance` (a fraction of the faster: 0.05 is 5%).
[[nodiscard]] COTUNE_DECL bool within_noise(const database_entry& a, const database_entry& b, double tolerance = 0);

/// The cache key under which `cotune db import` keeps the imported database in a file cache.
[[nodiscard]] COTUNE_DECL std::string imported_database_key();
inline constexpr std::string_view imported_database_file = "imported.db.json";

/// The database imported into the file cache at `root` (empty if none). Verified like every entry.
[[nodiscard]] COTUNE_DECL tuning_database imported_database(const std::filesystem::path& root, std::string_view secret = {});

/// Merges `db` into the database imported into the file cache at `root`; returns the merged size.
COTUNE_DECL std::size_t import_database(const std::filesystem::path& root, const tuning_database& db,
                                        std::string_view secret = {});

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/tuning_database.ipp>
#endif
