#pragma once
/// \file `cotune::batch::find_winner`: the winner a shipped tuning database holds for a kernel's key on
/// a device, for a tuner to launch without tuning. The database is `COTUNE_TUNING_DB` (read-only),
/// then the one `cotune db import` put into the file cache; each file is read once per process (again
/// when it changes).
///
///     if (auto r = cotune::batch::database_result("matmul", key_text, device_name, candidates)) use(*r);

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/tuning_database.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/process_setup.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/winner_source.hpp>

namespace cotune::batch {

namespace detail {

/// A database file read once per (path, size, mtime, secret).
struct loaded_database {
  std::string path, secret;
  std::uintmax_t size = 0;
  std::filesystem::file_time_type mtime{};
  std::shared_ptr<const tuning_database> db;
};

/// The database in `path`, from `slot` unless the file, its size, its time or the secret changed.
[[nodiscard]] COTUNE_DECL std::shared_ptr<const tuning_database> load_once(loaded_database& slot, const std::string& path,
                                                                           const std::string& secret);

/// The lookup installed as the process's shipped winner source (shipped_database.ipp installs it).
[[nodiscard]] COTUNE_DECL std::optional<tuning_result> shipped_lookup(std::string_view kernel, std::string_view key,
                                                                      std::string_view device,
                                                                      const std::vector<config>& candidates);

} // namespace detail

/// The winner for `kernel` and `key` on `device` in the shipped databases (COTUNE_TUNING_DB first, then
/// the cache's imported one), or nothing. Throws database_error for a database that is unreadable,
/// damaged, or unsigned while a secret is set: a tuner reports it as a warning and tunes.
[[nodiscard]] COTUNE_DECL std::optional<database_entry> find_winner(std::string_view kernel, std::string_view key,
                                                                    std::string_view device);

/// The result a tuner adopts for a database hit: its own candidate list, with the winner the equal
/// config (status ok, the shipped time; the others not run). Nothing when the shipped winner is not
/// among `candidates` (the candidate list changed since the database was made): then tune.
[[nodiscard]] COTUNE_DECL std::optional<tuning_result> database_result(const database_entry& e,
                                                                       const std::vector<config>& candidates,
                                                                       std::string_view key_text);

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
namespace cotune::detail {
/// Header-only: a file that includes this header and instantiates a tuner registers the job knobs and
/// installs the shipped-database lookup during static initialisation (tune/process_setup.hpp); a file
/// that tunes nothing emits neither. More specialised than tune/'s default hook, so chosen over it.
template <class B>
void add_process_setup(process_setup_tag<B>) {
  (void)batch::job_knobs();
  shipped_winner_source() = &batch::detail::shipped_lookup;
}
} // namespace cotune::detail

#include <cotune/batch/shipped_database.ipp>
#endif
