#pragma once
/// \file Errors thrown by cotune. Each says what failed, with what, and what to do.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace cotune {

/// Base of every error cotune throws.
class error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A knob's environment variable holds a value that does not parse.
class knob_error : public error {
public:
  using error::error;
};

/// A cache operation was refused (bad file name, unwritable directory).
class cache_error : public error {
public:
  using error::error;
  /// From a failed file-system call in the cache (what it was doing, the path, errno's text), with the fix.
  explicit cache_error(const std::system_error& e)
      : error(std::string(e.what()) + "; set COTUNE_CACHE_DIR to a writable place") {}
};

/// A candidate failed to compile; `log()` holds the compiler's output.
class compile_error : public error {
public:
  compile_error(std::string what, std::string log) : error(std::move(what)), log_(std::move(log)) {}
  /// The compiler's diagnostics.
  [[nodiscard]] const std::string& log() const noexcept { return log_; }

private:
  std::string log_;
};

/// The compiler itself died (killed by a signal, or an internal compiler error) while compiling a
/// candidate: not an error in the kernel, and another config or toolchain may well compile.
class compiler_crashed : public compile_error {
public:
  using compile_error::compile_error;
};

/// A compiled candidate needs more of a device resource than the device has.
class out_of_resources : public error {
public:
  out_of_resources(std::string resource, std::int64_t required, std::int64_t limit)
      : error("out of resources: " + resource + ", required " + std::to_string(required) + ", hardware limit " +
              std::to_string(limit) + "; reduce block sizes, num_warps or num_stages"),
        resource_(std::move(resource)), required_(required), limit_(limit) {}
  /// Which resource ("shared memory", "threads per block", "registers").
  [[nodiscard]] const std::string& resource() const noexcept { return resource_; }
  [[nodiscard]] std::int64_t required() const noexcept { return required_; }
  [[nodiscard]] std::int64_t limit() const noexcept { return limit_; }

private:
  std::string resource_;
  std::int64_t required_;
  std::int64_t limit_;
};

/// Loading or launching a compiled candidate failed.
class launch_error : public error {
public:
  using error::error;
};

/// A compile or a benchmark ran past its deadline and was cancelled.
class timeout_error : public error {
public:
  using error::error;
};

/// A candidate killed the isolated process that benchmarked it (a signal, an abort, an exit): that
/// candidate is lost, nothing else is.
class candidate_crashed : public error {
public:
  using error::error;
};

/// A candidate ran past the bench timeout in its isolated process, which was killed.
class candidate_hung : public error {
public:
  using error::error;
};

/// The autotuner cannot proceed (no candidates left after pruning, every candidate failed, misuse).
class autotuner_error : public error {
public:
  using error::error;
};

/// A new exception of the same cotune type and text as the one `e` holds, sharing no memory with it;
/// any other exception comes back as `e` itself. For one failure handed to several threads: libstdc++
/// rethrows the very object an exception_ptr holds, and the count that decides which thread destroys
/// it lives in the uninstrumented runtime, so threads sharing one object look like a race to
/// ThreadSanitizer. Each thread that throws its own copy needs no such count.
COTUNE_DECL std::exception_ptr copy_error(const std::exception_ptr& e);

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/core/errors.ipp>
#endif
