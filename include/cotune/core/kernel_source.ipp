#pragma once
/// \file The bodies of core/kernel_source.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/core/kernel_source.hpp>

namespace cotune {

COTUNE_DECL std::string kernel_source::digest() const {
  detail::sha256_hasher h;
  h.field("kernel_source").field(name).field(code).field(entry);
  h.field(std::to_string(options.size()));
  for (const auto& o : options) h.field(o);
  h.field(std::to_string(include_dirs.size()));
  for (const auto& d : include_dirs) h.field(d);
  return detail::to_hex(h.digest());
}

} // namespace cotune
