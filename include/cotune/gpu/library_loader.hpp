#pragma once
/// \file `cotune::gpu::open_first`: how the GPU layer opens a runtime library (libnvrtc, libamdhip64,
/// hiprtc) at run time, written once: the first of a list of sonames or paths that loads and has
/// every function of the runtime's API table.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlfcn.h>

#include <fmt/core.h>

namespace cotune::gpu {

/// Appends `name` to `missing`, a comma-separated list of functions a library lacks.
inline void add_missing(std::string& missing, std::string_view name) {
  if (!missing.empty()) missing += ", ";
  missing += name;
}

/// Opens the first of `paths` that the loader loads and in which `resolve(lib, handle)` finds every
/// function: it fills the library's API table and returns what it could not find (comma-separated,
/// `add_missing`), empty when nothing. `make(handle, path)` wraps a loaded handle into the Library
/// (whose destructor closes it). Each path that failed adds a line "\n  PATH: why" to `tried`,
/// `lacks_hint` after a list of missing functions. Nothing when no path worked.
template <class Library, class Make, class Resolve>
[[nodiscard]] std::unique_ptr<Library> open_first(const std::vector<std::string>& paths, std::string& tried, Make make,
                                                  Resolve resolve, std::string_view lacks_hint = {}) {
  for (const auto& path : paths) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = ::dlerror();
      tried += fmt::format("\n  {}: {}", path, e ? e : "unknown error");
      continue;
    }
    std::unique_ptr<Library> lib = make(handle, path);
    if (const std::string missing = resolve(*lib, handle); !missing.empty()) {
      tried += fmt::format("\n  {}: lacks {}{}{}", path, missing, lacks_hint.empty() ? "" : " ", lacks_hint);
      continue;
    }
    return lib;
  }
  return nullptr;
}

} // namespace cotune::gpu
