#pragma once
/// \file `cotune::gpu::rtc_request` and `rtc_output`: one run-time compilation (NVRTC, hiprtc) asked
/// for and what it produced, the same for every GPU backend.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <string>
#include <vector>

namespace cotune::gpu {

/// What to compile: a translation unit, its options, and the name expression whose symbol is wanted.
struct rtc_request {
  std::string source;
  std::string file_name;               ///< shown in the compiler's diagnostics ("gemm.cu", "gemm.hip")
  std::vector<std::string> options;
  std::string name_expression;         ///< a kernel name or "gemm<64, 128>"
};

/// What one run-time compilation produced.
struct rtc_output {
  /// What stopped a compilation midway (only a compile process can be stopped).
  enum class stop_cause { none, deadline, stop_request };

  bool ok = false;
  stop_cause stopped = stop_cause::none; ///< set when the compile was killed before it finished
  std::string error;        ///< the compiler's result text when not ok
  std::string log;          ///< the compiler's diagnostics (also on success: warnings)
  std::string image;        ///< a cubin or AMD code object, or NUL-free PTX text when `is_ptx`
  bool is_ptx = false;
  std::string lowered_name; ///< the mangled symbol of the name expression
  bool crashed = false;     ///< the compile process died (the compiler crashed), rather than reporting an error
};

} // namespace cotune::gpu
