#pragma once
/// \file The bodies of batch/input_limits.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <utility>

#include <cotune/batch/input_limits.hpp>

namespace cotune::batch {

COTUNE_DECL std::string count_text(std::uint64_t n) {
  return n == std::numeric_limits<std::uint64_t>::max() ? fmt::format(COTUNE_FMT("more than {}"), n)
                                                        : fmt::format(COTUNE_FMT("{}"), n);
}

COTUNE_DECL std::uint64_t element_count(simdjson::dom::array a) noexcept {
  const std::uint64_t n = a.size();
  if (n < 0xFFFFFF) return n;
  std::uint64_t counted = 0;
  for ([[maybe_unused]] auto x : a) ++counted;
  return counted;
}

COTUNE_DECL std::uint64_t max_candidates() {
  return static_cast<std::uint64_t>(job_knobs().max_candidates.get());
}

COTUNE_DECL std::string kernel_name_problem(std::string_view s) {
  if (!is_identifier(s))
    return fmt::format(
        COTUNE_FMT("kernel name '{}' is not a C identifier (letters, digits, '_', not starting with a digit)"), s);
  if (s.size() > max_kernel_name_bytes)
    return fmt::format(COTUNE_FMT("kernel name '{}...' has {} bytes, more than {} (it becomes a file name)"),
                       s.substr(0, 32), s.size(), max_kernel_name_bytes);
  return {};
}

COTUNE_DECL std::string launch_problem(const launch_options& lo) {
  auto out_of_range = [](std::string_view name, std::int64_t v) {
    return fmt::format(COTUNE_FMT("{} = {} is out of range; launch options are integers in [1, {}]"), name, v,
                       max_launch_option);
  };
  const std::pair<std::string_view, std::int64_t> all[] = {
      {"num_warps", lo.num_warps}, {"num_stages", lo.num_stages}, {"num_ctas", lo.num_ctas}};
  for (auto [name, v] : all)
    if (v < 1 || v > max_launch_option) return out_of_range(name, v);
  if (lo.maxnreg && (*lo.maxnreg < 1 || *lo.maxnreg > max_launch_option)) return out_of_range("maxnreg", *lo.maxnreg);
  if (lo.threads_per_block && (*lo.threads_per_block < 1 || *lo.threads_per_block > max_launch_option))
    return out_of_range("threads_per_block", *lo.threads_per_block);
  if (lo.block)
    for (int d : {lo.block->x, lo.block->y, lo.block->z})
      if (d < 1 || d > max_block_dimension)
        return fmt::format(COTUNE_FMT("block ({}, {}, {}) is out of range; each dimension is in [1, {}]"), lo.block->x,
                           lo.block->y, lo.block->z, max_block_dimension);
  return {};
}

COTUNE_DECL std::string triton_launch_problem(const launch_options& lo) {
  const int w = lo.num_warps;
  if (w < 1 || w > max_triton_num_warps || (w & (w - 1)) != 0)
    return fmt::format(COTUNE_FMT("num_warps = {} is not a power of two in [1, {}] (Triton runs no other)"), w,
                       max_triton_num_warps);
  return launch_problem(lo);
}

COTUNE_DECL std::string input_size_problem(std::uint64_t bytes) {
  const auto limit = static_cast<std::uint64_t>(job_knobs().max_file_bytes.get());
  if (bytes <= limit) return {};
  return fmt::format(
      COTUNE_FMT("{} bytes, more than the limit of {} bytes (job.max_file_bytes, COTUNE_JOB_MAX_FILE_BYTES); "
                 "is this the file you meant? If it is, raise the limit"),
      count_text(bytes), limit);
}

} // namespace cotune::batch
