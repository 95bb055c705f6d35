#pragma once
/// \file How the tuner uses a backend's optional capabilities: which benchmarker it is measured with,
/// whether measuring may overlap compiles, and a refusal of a capability that is spelt but does not fit.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <memory>
#include <type_traits>

#include <cotune/backend/backend.hpp>

namespace cotune {

/// The host clock's benchmarker, named here only as the fallback of `default_benchmarker` (tune/ names
/// no concrete benchmarker: <cotune/defaults.hpp>, which <cotune/cotune.hpp> includes, defines it).
class host_benchmarker;

/// The benchmarker a backend is measured with unless the tuner names another: the backend's
/// `default_benchmarker_type` if it declares one (so that the choice cannot depend on include order),
/// else the host clock.
template <class B>
struct default_benchmarker {
  using type = host_benchmarker;
};
template <DeclaresBenchmarker B>
struct default_benchmarker<B> {
  using type = typename B::default_benchmarker_type;
};
template <class B>
using default_benchmarker_t = typename default_benchmarker<B>::type;

/// Candidates can be measured in a worker process of the backend's own (`static constexpr bool
/// worker_isolation`, with `run_in_worker`, as cuda_backend has): for backends whose device state a
/// forked copy cannot use (COTUNE_ISOLATE; tune/isolated_measure.hpp).
template <class B>
concept DeclaresWorkerIsolation = requires {
  requires std::same_as<decltype(B::worker_isolation), const bool>;
  typename std::bool_constant<B::worker_isolation>;
};

namespace detail {

/// Makes a benchmarker for a device: from (backend, device) if it can, else from the device, else
/// default-constructed.
template <class Bench, class B>
std::unique_ptr<Bench> make_benchmarker(const B& backend, const typename B::device& d) {
  if constexpr (std::is_constructible_v<Bench, const B&, const typename B::device&>)
    return std::make_unique<Bench>(backend, d);
  else if constexpr (std::is_constructible_v<Bench, const typename B::device&>)
    return std::make_unique<Bench>(d);
  else
    return std::make_unique<Bench>();
}

/// Backends whose benchmarks share the CPU with compiles (the host backend) are measured only after
/// every candidate is compiled, so that compiles running beside them do not skew their timings.
template <class B>
constexpr bool overlaps_compile() {
  if constexpr (DeclaresCompileOverlap<B>) return B::benchmark_overlaps_compile;
  else return true;
}

/// Refuses an optional capability that a backend spells but does not fit: a member that is there with
/// the wrong shape would otherwise switch the feature off without a word.
template <class B>
constexpr bool capabilities_fit() {
  static_assert(HasDeviceKey<B> || !requires { &B::device_key; },
                "the backend's device_key must be `std::string device_key(const device&) const` (it names the "
                "physical device, so that all tuners on it share one device thread)");
  static_assert(DeclaresCompileOverlap<B> || !requires { B::benchmark_overlaps_compile; },
                "the backend's benchmark_overlaps_compile must be `static constexpr bool`");
  static_assert(ComparesDevices<B> || !requires { &B::interchangeable; },
                "the backend's interchangeable must be `bool interchangeable(const device&, const device&) const` "
                "(or static)");
  static_assert(ReportsWarnings<B> || !requires { &B::take_warnings; },
                "the backend's take_warnings must be `std::vector<std::string> take_warnings() const`");
  static_assert(DeclaresForkIsolation<B> || !requires { B::fork_isolation; },
                "the backend's fork_isolation must be `static constexpr bool`");
  static_assert(DeclaresWorkerIsolation<B> || !requires { B::worker_isolation; },
                "the backend's worker_isolation must be `static constexpr bool`");
  static_assert(DeclaresLaunchOptions<B> || !requires { B::uses_launch_options; },
                "the backend's uses_launch_options must be `static constexpr bool`");
  static_assert(DeclaresBinaryCaching<B> || !requires { B::caches_binaries; },
                "the backend's caches_binaries must be `static constexpr bool`");
  static_assert(DeclaresFileLoading<B> || !requires { B::loads_from_file; },
                "the backend's loads_from_file must be `static constexpr bool`");
  static_assert(FindsModuleGlobals<B> || !requires { &B::find_global; },
                "the backend's find_global must be `std::optional<cotune::module_global> find_global(const function&, "
                "std::string_view name) const` (tune_options::on_load reads a loaded module's globals through it)");
  return true;
}

/// Whether this backend's kernels use a config's launch options (what results show).
template <class B>
constexpr bool uses_launch_options() {
  if constexpr (DeclaresLaunchOptions<B>) return B::uses_launch_options;
  else return true;
}

/// Whether candidates of this backend can be benchmarked in a forked process (COTUNE_ISOLATE).
template <class B>
constexpr bool fork_isolation() {
  if constexpr (DeclaresForkIsolation<B>) return B::fork_isolation;
  else return false;
}

/// Whether candidates of this backend can be measured in a worker process of its own (COTUNE_ISOLATE).
template <class B>
constexpr bool worker_isolation() {
  if constexpr (DeclaresWorkerIsolation<B>) return B::worker_isolation;
  else return false;
}

/// A worker-isolated backend whose worker can be started ahead of its first job (cuda, hip).
template <class B>
concept PrestartsIsolation = requires(const B& b, const typename B::device& d) {
  { b.prestart_isolation(d) } noexcept;
};

/// Whether COTUNE_ISOLATE can isolate this backend's candidates at all (in a fork or a worker).
template <class B>
constexpr bool can_isolate() {
  return fork_isolation<B>() || worker_isolation<B>();
}

} // namespace detail
} // namespace cotune
