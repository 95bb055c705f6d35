#pragma once
/// \file The CUDA module's umbrella header: NVRTC + driver API backend, device buffers, benchmarker,
/// and the autotuner's CUDA defaults.
/// Link `cotune::cuda` (it defines COTUNE_HAS_CUDA); libcuda and libnvrtc are opened at run time.

#include <cotune/cuda/autotune.hpp>
#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/cuda/float16.hpp>
#include <cotune/cuda/nvrtc_api.hpp>
