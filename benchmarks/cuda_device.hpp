#pragma once
// The first CUDA device, or a line saying why the benchmark skips: what every CUDA benchmark does first.

#include <cstdio>
#include <optional>

#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/device.hpp>

namespace cotune_bench {

/// The first CUDA device; nothing, after printing "`program`: no CUDA device: skipping (why)", when
/// there is none (scripts/gpu-figures collects such lines).
inline std::optional<cotune::cuda::device> first_cuda_device(const char* program) {
  auto devices = cotune::cuda::devices();
  if (!devices.empty()) return devices.front();
  std::printf("%s: no CUDA device: skipping (%s)\n", program, cotune::cuda::availability().message.c_str());
  return std::nullopt;
}

} // namespace cotune_bench
