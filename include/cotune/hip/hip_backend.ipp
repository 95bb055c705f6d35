#pragma once
/// \file The bodies of hip/hip_backend.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/hip_backend.hpp>

namespace cotune::hip::detail {

COTUNE_DECL std::optional<std::string> requested_arch(const std::vector<std::string>& options) {
  constexpr std::string_view flag = "--offload-arch=";
  for (const auto& o : options)
    if (std::string_view(o).starts_with(flag)) return o.substr(flag.size());
  return std::nullopt;
}

} // namespace cotune::hip::detail
