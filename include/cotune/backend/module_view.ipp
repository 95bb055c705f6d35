#pragma once
/// \file The bodies of backend/module_view.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/backend/module_view.hpp>

namespace cotune {

COTUNE_DECL void module_constant::write_to(const module_view& m) const {
  const auto g = m.global<std::byte>(name);
  if (g.size() != bytes.size())
    throw error(
        fmt::format(COTUNE_FMT("constant '{}': {} bytes were given ({} elements of {} bytes), but the module's global "
                               "'{}' holds {} bytes; give exactly {} elements of {} bytes, or declare the global with "
                               "the size of the data"),
                    name, bytes.size(), bytes.size() / element_size, element_size, name, g.size(),
                    g.size() / element_size, element_size));
  g.copy_from(bytes);
}

} // namespace cotune
