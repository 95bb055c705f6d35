#pragma once
/// \file The bodies of cuda/cuda_backend.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/cuda_backend.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL std::optional<std::string> requested_arch(const std::vector<std::string>& options) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    for (std::string_view flag : {"-arch", "--gpu-architecture"}) {
      std::string_view o = options[i];
      if (!o.starts_with(flag)) continue;
      o.remove_prefix(flag.size());
      if (o.starts_with("=")) return std::string(o.substr(1));
      if (o.empty() && i + 1 < options.size()) return options[i + 1];
    }
  }
  return std::nullopt;
}

COTUNE_DECL std::optional<std::pair<std::int64_t, std::int64_t>> shared_overflow(const std::string& log) {
  constexpr std::string_view marker = "uses too much shared data (";
  auto at = log.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const char* p = log.c_str() + at + marker.size();
  char* end = nullptr;
  const long long required = std::strtoll(p, &end, 0);
  if (end == p) return std::nullopt;
  const char* limit_at = std::strstr(end, ", ");
  if (!limit_at) return std::nullopt;
  const long long limit = std::strtoll(limit_at + 2, &end, 0);
  if (end == limit_at + 2) return std::nullopt;
  return std::pair<std::int64_t, std::int64_t>{required, limit};
}

} // namespace cotune::cuda::detail
