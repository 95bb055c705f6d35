#pragma once
/// \file The bodies of cotune's non-template functions, for COTUNE_SEPARATE_COMPILATION (Asio's
/// convention): compile exactly one file of the program with
///
///     #include <cotune/impl/src.hpp>
///
/// and define COTUNE_SEPARATE_COMPILATION in every file (the `cotune::cotune_separate` CMake target
/// does both). Header-only programs (the default) must not include this header.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/detail/config.hpp>

#include <cotune/detail/hashing.ipp>
#include <cotune/detail/json.ipp>
#include <cotune/core/value.ipp>
#include <cotune/core/config.ipp>
#include <cotune/core/json_writer.ipp>
#include <cotune/core/config_space.ipp>
#include <cotune/bench/measurement.ipp>
#include <cotune/bench/host_benchmarker.ipp>
#include <cotune/backend/launch_geometry.ipp>
#include <cotune/backend/host_backend.ipp>
#include <cotune/detail/files.ipp>
#include <cotune/detail/dir_fd.ipp>
#include <cotune/detail/isolated_run.ipp>
#include <cotune/tune/detail/isolated_measure.ipp>
#include <cotune/cache/cache_trust.ipp>
#include <cotune/cache/cache_sweep.ipp>
#include <cotune/cache/cache_ledger.ipp>
#include <cotune/cache/local_key.ipp>
#include <cotune/cache/remote_companion.ipp>
#include <cotune/tune/tuning_result.ipp>
#include <cotune/tune/detail/tuning_journal.ipp>
#include <cotune/tune/detail/interleaved_finals.ipp>
#include <cotune/tune/binary_cache.ipp>
#include <cotune/impl/gpu_src.hpp>
#include <cotune/knobs/knob.ipp>
#include <cotune/knobs/knobs.ipp>
#include <cotune/search/search_registry.ipp>
#include <cotune/search/search_knobs.ipp>
#include <cotune/search/search_space.ipp>
#include <cotune/search/search_strategy.ipp>
#include <cotune/search/search.ipp>
#include <cotune/search/exhaustive_search.ipp>
#include <cotune/search/local_search.ipp>
#include <cotune/search/evolutionary_search.ipp>
#include <cotune/search/bayesian_search.ipp>
#include <cotune/search/bayes_local_search.ipp>
#include <cotune/batch/job_knobs.ipp>
#include <cotune/tune/events.ipp>
#include <cotune/tune/key_distance.ipp>
#include <cotune/tune/detail/tuning_timeline.ipp>
#include <cotune/tune/detail/background_pacing.ipp>
#include <cotune/tune/trace.ipp>
#include <cotune/tune/engine.ipp>
#include <cotune/tune/detail/tuning_core.ipp>
#include <cotune/tune/measure_strategy.ipp>
#include <cotune/tune/tune_many.ipp>
#include <cotune/cache/file_cache.ipp>
#include <cotune/cache/cache_inventory.ipp>
#include <cotune/batch/tuning_database.ipp>
#include <cotune/batch/shipped_database.ipp>
#include <cotune/batch/prediction.ipp>
#include <cotune/batch/input_limits.ipp>
#include <cotune/batch/expression.ipp>
#include <cotune/batch/json_location.ipp>
#include <cotune/batch/job_geometry.ipp>
#include <cotune/batch/argument_pack.ipp>
#include <cotune/batch/job_spec.ipp>
#include <cotune/batch/triton_import.ipp>
#include <cotune/batch/html_report.ipp>
#include <cotune/batch/prediction_report.ipp>
#include <cotune/batch/job_runner.ipp>
#include <cotune/backend/module_view.ipp>
#include <cotune/bench/stopping_rule.ipp>
#include <cotune/cache/entry_frame.ipp>
#include <cotune/cache/local_fill.ipp>
#include <cotune/cache/remote_backend.ipp>
#include <cotune/core/errors.ipp>
#include <cotune/core/grid_expr.ipp>
#include <cotune/core/kernel_source.ipp>
#include <cotune/detail/fork_process.ipp>
#include <cotune/detail/fork_server.ipp>
#include <cotune/detail/mersenne_twister.ipp>
#include <cotune/detail/process.ipp>
#include <cotune/tune/detail/kernel_arguments.ipp>
#include <cotune/tune/detail/stand_ins.ipp>
#include <cotune/tune/tuning_phases.ipp>

// The default (host) tuner's job, table of keys and core: declared `extern template` by <cotune/defaults.hpp>.
#include <cotune/defaults.hpp>

COTUNE_INSTANTIATE_TUNING_JOB(cotune::host_backend, cotune::host_benchmarker, cotune::file_cache);
