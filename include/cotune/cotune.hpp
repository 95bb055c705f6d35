#pragma once
/// \file The umbrella header: everything in cotune's core (no CUDA, HIP or Redis; see cotune/cuda/,
/// cotune/redis/).

#include <cotune/backend/backend.hpp>
#include <cotune/backend/host_backend.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/bench/host_benchmarker.hpp>
#include <cotune/bench/summary.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/core/config_space.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/value.hpp>
#include <cotune/core/version.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>
#include <cotune/tune/autotuner.hpp>
#include <cotune/tune/coordination.hpp>
#include <cotune/tune/engine.hpp>
#include <cotune/tune/events.hpp>
#include <cotune/tune/tuning_key.hpp>
#include <cotune/tune/tuning_result.hpp>
#include <cotune/tune/tune_many.hpp>
