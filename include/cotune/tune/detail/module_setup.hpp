#pragma once
/// \file Module set-up: how a tuning runs `tune_options::on_load` on each binary it loads (every
/// candidate on every device it is measured on, the winner after a result-cache hit: see
/// `bound_call::load` in tune/kernel_call.hpp), and the refusal of on_load over a backend that cannot find a module's globals.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/tune/hook.hpp>

namespace cotune::detail {

/// The hook's type for a kernel `void(Args...)`.
template <class... Args>
using on_load_hook = hook<void(const module_view&, const Args&...)>;

/// Refuses on_load over a backend without cotune::FindsModuleGlobals: the hook would never run, and
/// the kernel would read uninitialised constants without a word.
template <class B, class... Args>
void check_on_load(const on_load_hook<Args...>& hook, const std::string& kernel) {
  if constexpr (!FindsModuleGlobals<B>)
    if (hook)
      throw autotuner_error(fmt::format(
          "autotuner for '{}': tune_options::on_load is set, but this backend cannot find a loaded module's globals "
          "(it does not satisfy cotune::FindsModuleGlobals: the CUDA, HIP and host backends do), so the hook could never "
          "run; pass the data as a kernel argument instead, or use a backend that supports on_load",
          kernel));
}

/// Runs `hook` on `fn`, just loaded on device `dev` (index `d`), with that device's arguments. A
/// failure names the kernel, the config and the device; a launch_error (a lost context) keeps its type.
template <Backend B, class... Args>
void run_on_load(const B& backend, const typename B::function& fn, const on_load_hook<Args...>& hook,
                 const kernel_source& k, const config& c, const typename B::device& dev, std::size_t d,
                 const std::tuple<Args...>& args) {
  if constexpr (FindsModuleGlobals<B>) {
    const std::string where = backend.device_name(dev);
    const module_view m(c, k.name, where, d, [&](std::string_view name) { return backend.find_global(fn, name); });
    try {
      std::apply([&](const Args&... a) { hook(m, a...); }, args);
    } catch (const launch_error&) {
      throw;
    } catch (const std::exception& e) {
      throw error(fmt::format("on_load for kernel '{}' with config {{{}}} on {} failed: {}", k.name, c.text(), where,
                              e.what()));
    }
  } else {
    throw autotuner_error(fmt::format("autotuner for '{}': on_load over a backend without module globals", k.name));
  }
}

} // namespace cotune::detail
