#pragma once
/// \file The bodies of gpu/compiled_backend.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/gpu_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/gpu/compiled_backend.hpp>

namespace cotune::gpu::detail {

COTUNE_DECL config config_of(const compiled_entry& e, const std::string& threads_param) {
  config c;
  for (const auto& p : e.params)
    if (!threads_param.empty() && p.name == threads_param && p.type == compiled_param::kind::integer)
      c.with_launch({.threads_per_block = static_cast<int>(p.integer)});
  for (const auto& p : e.params) {
    switch (p.type) {
    case compiled_param::kind::integer: c.set(p.name, value(p.integer)); break;
    case compiled_param::kind::boolean: c.set(p.name, value(p.integer != 0)); break;
    case compiled_param::kind::real: c.set(p.name, value(p.real)); break;
    case compiled_param::kind::text: c.set(p.name, value(p.text)); break;
    }
  }
  return c;
}

} // namespace cotune::gpu::detail
