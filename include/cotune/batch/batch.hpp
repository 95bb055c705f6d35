#pragma once
/// \file The batch folder's umbrella header: tuning as a batch job, the `cotune` tool's engine.
///
/// What lives in cotune/batch/ (namespace `cotune::batch`): a JSON job file read and checked
/// (`job_spec`, with `expression`, `job_geometry`, `json_location` and `input_limits`), run with the
/// ordinary autotuner (`run_job`, one `autotuner<void(argument_pack)>` per kernel), and the portable
/// results (`tuning_database`: export, import, diff; `shipped_database`: the winners every tuner
/// consults before tuning; `triton_import`: Triton's autotune files; `html_report`). The CUDA kernels
/// of a job run through `cuda_kernel_runner.hpp`, which belongs to the CUDA module (`cotune::cuda`)
/// and is not included here. "Job" in this folder means a job file; the tuning of one key inside a
/// tuner is `tune/`'s business (`tuning_job`).
///
/// Who includes it: the command-line tool (tools/), applications that run jobs or read tuning
/// databases, and the umbrella <cotune/cotune.hpp> (shipped_database.hpp alone, so that every tuner
/// consults a shipped database; a tuner reaches it through tune/winner_source.hpp). No other folder of
/// the library does: backend/, bench/, cache/, core/, cuda/, detail/, gpu/, hip/, knobs/, redis/,
/// search/, tune/ and defaults.hpp never include cotune/batch/ (tests/layout/include_rules.cmake), and
/// impl/ only compiles its bodies.

#include <cotune/batch/argument_pack.hpp>
#include <cotune/batch/expression.hpp>
#include <cotune/batch/html_report.hpp>
#include <cotune/batch/input_limits.hpp>
#include <cotune/batch/job_geometry.hpp>
#include <cotune/batch/job_knobs.hpp>
#include <cotune/batch/job_runner.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/batch/json_location.hpp>
#include <cotune/batch/shipped_database.hpp>
#include <cotune/batch/triton_import.hpp>
#include <cotune/batch/tuning_database.hpp>

namespace cotune {
/// The folder's former name (cotune/job/, `cotune::job`, until the tune/ classes' "tuning job" and the
/// tool's "job file" needed two names): code written against `cotune::job::job_spec` and the like
/// compiles unchanged once it includes this header instead of the old cotune/job/ paths.
namespace job = batch;
} // namespace cotune
