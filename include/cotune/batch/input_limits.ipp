#pragma once
/// \file The bodies of batch/input_limits.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <set>
#include <utility>

#include <cotune/batch/input_limits.hpp>
#include <cotune/detail/json.hpp>

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

COTUNE_DECL std::string shown_text(std::string_view s, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = c < 0x20 || c == 0x7f ? 0 : cotune::detail::utf8_length(s, i);
    if (n == 0) {
      out += fmt::format(COTUNE_FMT("\\x{:02x}"), static_cast<unsigned>(c));
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  if (i < s.size()) out += fmt::format(COTUNE_FMT("... ({} bytes)"), s.size());
  return out;
}

COTUNE_DECL std::string kernel_name_problem(std::string_view s) {
  if (s.size() > max_kernel_name_bytes)
    return fmt::format(COTUNE_FMT("kernel name '{}...' has {} bytes, more than {} (it becomes a file name)"),
                       shown_text(s.substr(0, 32)), s.size(), max_kernel_name_bytes);
  if (!is_identifier(s))
    return fmt::format(
        COTUNE_FMT("kernel name '{}' is not a C identifier (letters, digits, '_', not starting with a digit)"),
        shown_text(s));
  return {};
}

COTUNE_DECL std::optional<std::string_view> repeated_key(simdjson::dom::object o) {
  std::set<std::string_view> seen;
  for (auto [k, v] : o)
    if (!seen.insert(k).second) return k;
  return std::nullopt;
}

COTUNE_DECL std::string params_problem(const config& c) {
  if (c.params().size() > max_axes)
    return fmt::format(COTUNE_FMT("{} parameters, more than the {} a space may have"), c.params().size(), max_axes);
  for (const auto& [name, v] : c.params()) {
    if (!is_identifier(name) || name.size() > max_kernel_name_bytes)
      return fmt::format(COTUNE_FMT("parameter name '{}' is not a C identifier of at most {} bytes"),
                         name.substr(0, 64) + (name.size() > 64 ? "..." : ""), max_kernel_name_bytes);
    if (v.is_string() && v.as_string().size() > max_text_bytes)
      return fmt::format(COTUNE_FMT("parameter '{}' holds a string of {} bytes, more than {}"), name,
                         v.as_string().size(), max_text_bytes);
  }
  return {};
}

COTUNE_DECL std::string time_problem(const std::array<double, 3>& t) {
  for (double x : t)
    if (!(x >= 0) || !(x <= max_time_ms))
      return fmt::format(COTUNE_FMT("a time of {} ms is not a measurement (times are in [0, {}] ms)"), x, max_time_ms);
  return {};
}

COTUNE_DECL std::string text_problem(std::string_view what, std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x80) {
      if (const std::size_t n = cotune::detail::utf8_length(s, i))
        i += n - 1;
      else
        return fmt::format(COTUNE_FMT("{} holds bytes that are not UTF-8 (byte {:#04x} at {})"), what, ch, i);
      continue;
    }
    if (ch < 0x20 || ch == 0x7f)
      return fmt::format(COTUNE_FMT("{} holds a control character (byte {:#04x} at {})"), what, ch, i);
  }
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
