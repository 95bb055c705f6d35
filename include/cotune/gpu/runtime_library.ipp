#pragma once
/// \file The bodies of gpu/runtime_library.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <string>
#include <string_view>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/gpu/runtime_library.hpp>

namespace cotune::gpu {

COTUNE_DECL void throw_call_failed(std::string_view runtime, int ordinal, std::string_view what,
                                   const std::string& error_text, bool sticky) {
  if (sticky)
    throw launch_error(fmt::format(
        COTUNE_FMT("{} on {} device {} failed: {}. This error is sticky: the {} context of device {} is lost, and "
                   "every later candidate and launch on that device in this process will fail; restart the process "
                   "(and fix or drop the faulty kernel or config)"),
        what, runtime, ordinal, error_text, runtime, ordinal));
  throw launch_error(fmt::format(COTUNE_FMT("{} on {} device {} failed: {}"), what, runtime, ordinal, error_text));
}

COTUNE_DECL timeout_error unfinished(std::string_view runtime, int ordinal, std::string_view what) {
  return timeout_error(fmt::format(COTUNE_FMT("{} on {} device {}: the work did not finish before its deadline "
                                              "(COTUNE_BENCH_TIMEOUT_MS); it may still be running and delay later work "
                                              "on this device"),
                                   what, runtime, ordinal));
}

} // namespace cotune::gpu
