#pragma once
/// \file `cotune::batch::job_spec`: a tuning job file (JSON) read and checked: kernels, their config
/// spaces, their arguments and the problem instances to tune. The README's "Tuning as a job" section
/// documents the schema; every refusal names the file, line, column and field, and says what to write.
/// A job is counted before it is expanded: its size and its (config, instance) pairs are held to the
/// limits of batch/input_limits.hpp, so that a file that would expand past them is refused at once.
///
///     auto job = cotune::batch::job_spec::load("gemm.job.json");
///     for (const auto& k : job.kernels)
///       for (const auto& inst : k.instances) { auto args = k.arguments_for(inst); auto cands = k.candidates(inst); }

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/param_kind.hpp>
#include <cotune/core/value.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/batch/argument_pack.hpp>
#include <cotune/batch/expression.hpp>
#include <cotune/batch/job_geometry.hpp>
#include <cotune/search/search_strategy.hpp>

namespace cotune::batch {

/// An argument as the job file describes it: extents and values are expressions over the instance's variables.
struct argument_template {
  std::string name;
  bool buffer = true;
  element_type type = element_type::float32;
  std::optional<expression> extent{};     ///< buffers
  fill_kind fill = fill_kind::zeros;
  std::uint64_t seed = 0;
  std::filesystem::path file{};
  std::optional<expression> int_value{};  ///< integer scalars
  std::optional<double> float_value{};    ///< floating scalars
  bool key = false, reset = false, restore = false;
  std::string where;
};

/// A kernel of the job, with everything needed to tune each of its instances.
struct kernel_job {
  kernel_source source;        ///< host: the code with the trampoline appended, entry cotune_job_entry; GPU: as written
  std::string entry;           ///< the kernel's own entry point
  std::string backend = "host";
  std::string source_file;     ///< empty for inline code
  std::vector<std::pair<std::string, std::vector<value>>> axes;
  param_kinds kinds;           ///< axes the space's "categorical" names (for tune_options::kinds)
  std::vector<std::pair<expression, std::string>> constraints; ///< with where each is written
  std::vector<derived_launch> launch;
  std::optional<launch_geometry> geometry{}; ///< GPU kernels (job_geometry.hpp)
  std::vector<argument_template> arguments;
  std::vector<instance> instances;
  std::string where;

  [[nodiscard]] const std::string& name() const noexcept { return source.name; }
  /// Every config of the space (the axes' product, launch options derived), before constraints.
  [[nodiscard]] COTUNE_DECL std::vector<config> configs() const;

  /// The number of configs of the space (the axes' product), counted without building them; the
  /// largest uint64 when it does not fit.
  [[nodiscard]] COTUNE_DECL std::uint64_t config_count() const noexcept;

  /// The configs whose constraints hold for this instance (constraints see the axes and the instance's variables).
  [[nodiscard]] std::vector<config> candidates(const instance& inst) const { return candidates(inst, configs()); }

  /// The configs of `all` (this kernel's `configs()`) whose constraints hold for this instance.
  [[nodiscard]] COTUNE_DECL std::vector<config> candidates(const instance& inst, const std::vector<config>& all) const;

  /// The instance's arguments, every expression evaluated.
  [[nodiscard]] COTUNE_DECL std::vector<argument> arguments_for(const instance& inst) const;

  /// The launch grid of config `c` for instance `inst` (GPU kernels; a 1x1x1 grid without geometry).
  [[nodiscard]] COTUNE_DECL launch_grid grid_for(const config& c, const instance& inst) const;
};

/// A tuning job: its kernels and their instances, and the benchmark budgets (unset: the bench.* knobs).
struct job_spec {
  std::string name;
  std::filesystem::path path;
  std::optional<double> warmup_ms{}, rep_ms{};
  /// The job's "search": a registered strategy's name (search_registry) and its budget; unset: the
  /// search.* knobs.
  std::optional<std::string> search{};
  std::optional<search_settings> search_budget{};
  std::vector<kernel_job> kernels;

  /// Reads and checks a job file (relative source and fill files are relative to its directory).
  [[nodiscard]] COTUNE_DECL static job_spec load(const std::filesystem::path& file);

  /// Checks a job given as text; `origin` names it in messages and anchors relative paths.
  [[nodiscard]] COTUNE_DECL static job_spec parse(std::string_view text, const std::filesystem::path& origin);

  /// Names this job and its kernels' sources (hex SHA-256): processes running the same job share it.
  [[nodiscard]] COTUNE_DECL std::string digest() const;

  /// Instances over every kernel.
  [[nodiscard]] COTUNE_DECL std::size_t instance_count() const noexcept;

private:
  /// The job file reader (job_spec.ipp): simdjson's DOM, every field checked, errors located.
  struct reader;
};

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/job_spec.ipp>
#endif
