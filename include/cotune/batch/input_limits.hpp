#pragma once
/// \file What every file the job module reads (job files, tuning databases, Triton autotune files) is
/// held to before anything is built from it: its size, the number of candidates it expands to
/// (counted from its axes and instances, without overflow), the names that reach file names, and
/// the ranges of launch options. The limits are the knobs `job.max_file_bytes` and
/// `job.max_candidates` (batch/job_knobs.hpp); the readers throw their own error (job_error,
/// database_error) with the file, the field, the limit and the knob.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/batch/job_knobs.hpp>

namespace cotune::batch {

/// `a * b`, or the largest uint64 when the product does not fit: a count past any limit, never a wrap.
[[nodiscard]] constexpr std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) noexcept {
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  if (a != 0 && b > most / a) return most;
  return a * b;
}

/// `a + b`, or the largest uint64 when the sum does not fit.
[[nodiscard]] constexpr std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) noexcept {
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  return b > most - a ? most : a + b;
}

/// A count for a message: `100000`, or `more than 18446744073709551615` for a saturated one.
[[nodiscard]] COTUNE_DECL std::string count_text(std::uint64_t n);

/// The number of elements of a JSON array (simdjson's `size()` stops counting at 2^24 - 1).
[[nodiscard]] COTUNE_DECL std::uint64_t element_count(simdjson::dom::array a) noexcept;

/// The candidate limit (`job.max_candidates`) as a count.
[[nodiscard]] COTUNE_DECL std::uint64_t max_candidates();

/// How to raise the candidate limit, for messages.
inline constexpr std::string_view max_candidates_knob = "job.max_candidates, COTUNE_JOB_MAX_CANDIDATES";

// 200 bytes: a kernel's name becomes a file name (`<name>.autotune.json`, 14 bytes more) and Linux
// file systems allow 255 bytes per name; the rest is room for the cache's temporary suffixes.
inline constexpr std::size_t max_kernel_name_bytes = 200;

/// A name a kernel may have in a job file, a database or a Triton import: a C identifier of at most
/// max_kernel_name_bytes (it reaches file names, so `../x` and `a/b` are not names).
[[nodiscard]] constexpr bool is_kernel_name(std::string_view s) noexcept {
  return s.size() <= max_kernel_name_bytes && is_identifier(s);
}

/// `s` as a message may show text read from a file: control characters and bytes that are not UTF-8
/// written as `\xNN` (a message cannot carry a line break or a terminal escape), and cut after
/// `max_bytes` ("...", then the size), so a 64 KiB name is not printed whole.
[[nodiscard]] COTUNE_DECL std::string shown_text(std::string_view s, std::size_t max_bytes = 64);

/// Why `s` is not a kernel name (for messages), or empty.
[[nodiscard]] COTUNE_DECL std::string kernel_name_problem(std::string_view s);

// 64 KiB: a key text names every key argument and its type or value; the longest the tests and the
// examples write is under 200 bytes. Device names, dates, hosts and fingerprints are shorter still.
inline constexpr std::size_t max_text_bytes = 65536;

// 2^20: the range a job file gives launch options (job_geometry.hpp's derive_launch and the axes of
// job_spec.hpp); beyond any device's threads, stages or registers, but far from int's limit, so that
// num_warps x 32 threads and the like cannot overflow.
inline constexpr std::int64_t max_launch_option = std::int64_t{1} << 20;

// 1024: the most threads a block holds on any CUDA or HIP device, so the most in any one dimension.
inline constexpr int max_block_dimension = 1024;

/// Why launch options `lo` are out of the range a job file allows (every option in [1, 2^20], block
/// dimensions in [1, 1024]), or empty. Databases hold what job files and tuners made, so the same range.
[[nodiscard]] COTUNE_DECL std::string launch_problem(const launch_options& lo);

// The most entries of a job file's structural lists, each far past any real kernel, and a bound on
// the work a hostile file can ask for before it is refused: 256 axes of a space (the largest spaces of
// the search suite have 15), 1024 arguments of a kernel (CUDA's 32 KiB of parameters hold at most 4096
// pointers), and 1024 compiler options, include directories, key arguments, categorical axes or
// constraints; 256 variables of an instance.
inline constexpr std::size_t max_axes = 256, max_list_entries = 1024, max_instance_variables = 256;

// 32: Triton refuses a num_warps that is not a power of two, and 32 warps of 32 threads fill the
// largest block a CUDA device runs (AMD's 64-thread wavefronts stop at 16).
inline constexpr int max_triton_num_warps = 32;

/// Why launch options read from a Triton file are not ones Triton could have run, or empty:
/// launch_problem's ranges, and num_warps a power of two in [1, 32].
[[nodiscard]] COTUNE_DECL std::string triton_launch_problem(const launch_options& lo);

/// The first key given twice in `o`, if any: JSON leaves a repeated key to the reader, and the readers
/// of job files and Triton files refuse one rather than guess which was meant.
[[nodiscard]] COTUNE_DECL std::optional<std::string_view> repeated_key(simdjson::dom::object o);

/// Why the parameters of a config read from a database or a Triton file are not ones a job file or a
/// tuner could have made, or empty: at most max_axes of them, each named by a C identifier of at most
/// max_kernel_name_bytes, string values of at most max_text_bytes.
[[nodiscard]] COTUNE_DECL std::string params_problem(const config& c);

// 10^9 ms (11.6 days): longer than any kernel a tuning could have measured.
inline constexpr double max_time_ms = 1e9;

/// Why `t` (median, p20, p80, in ms) is not a measured time, or empty: each finite and in [0, 10^9].
/// A negative time would win every comparison (a merge, a diff, a winner).
[[nodiscard]] COTUNE_DECL std::string time_problem(const std::array<double, 3>& t);

/// Why a text that listings print (a key, a device, a host) is unfit, or empty: it holds a control
/// character (a newline would forge a line of `cotune db show`) or bytes that are not UTF-8 (a file
/// holding them is not JSON).
[[nodiscard]] COTUNE_DECL std::string text_problem(std::string_view what, std::string_view s);

/// Why a text of `bytes` bytes is over the input size limit (`job.max_file_bytes`), or empty.
[[nodiscard]] COTUNE_DECL std::string input_size_problem(std::uint64_t bytes);

/// The text of `file`, read no further than the input size limit. Throws `Error` naming the file and
/// `what` it should be when it cannot be read, and the limit and its knob when it is larger (a pipe or
/// a device that never ends is refused at the limit, too).
template <class Error>
[[nodiscard]] std::string read_input_file(const std::filesystem::path& file, std::string_view what) {
  std::ifstream in(file, std::ios::binary);
  std::error_code ec;
  if (!in || std::filesystem::is_directory(file, ec))
    throw Error(fmt::format("{}: cannot read the {} (no such file, or no permission)", file.string(), what));
  const auto limit = static_cast<std::uint64_t>(job_knobs().max_file_bytes.get());
  std::string text;
  char chunk[65536];
  while (in) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > limit) {
      const auto size = std::filesystem::file_size(file, ec);
      throw Error(fmt::format("{}: the {} has {}", file.string(), what,
                              input_size_problem(ec || size < text.size() ? text.size() : size)));
    }
  }
  if (in.bad()) throw Error(fmt::format("{}: cannot read the {} (a read error)", file.string(), what));
  return text;
}

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/input_limits.ipp>
#endif
