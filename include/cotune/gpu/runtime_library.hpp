#pragma once
/// \file What a GPU runtime's library and device contexts (cuda/driver_api.hpp, hip/hip_api.hpp) do the
/// same way, written once: a failed call's error, waiting for a stream with a deadline, listing the
/// devices and their launch limits, and keeping the library each path loads (tried once per process).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>

namespace cotune::gpu {

/// Throws the launch_error of a failed call (`what`, e.g. "cuMemAlloc of 64 bytes") on `runtime`'s
/// device `ordinal` ("... on CUDA device 0 failed: <error_text>"); a `sticky` error also says that the
/// device's context is lost for the rest of the process, and what to do.
[[noreturn]] COTUNE_DECL void throw_call_failed(std::string_view runtime, int ordinal, std::string_view what,
                                                const std::string& error_text, bool sticky);

/// The timeout_error of work on `runtime`'s device `ordinal` that did not finish by its deadline
/// (COTUNE_BENCH_TIMEOUT_MS).
[[nodiscard]] COTUNE_DECL timeout_error unfinished(std::string_view runtime, int ordinal, std::string_view what);

/// Waits until `done()` (a stream query: true when finished, false while running, throwing on a
/// failure) by polling, so that a kernel that never ends costs a timeout rather than a hang. The first
/// millisecond spins (most first runs end within it); then 50 us naps keep a core free. Past
/// `deadline`, throws `unfinished(runtime, ordinal, what)`.
template <class Done>
void poll_until_done(Done done, std::chrono::steady_clock::time_point deadline, std::string_view runtime, int ordinal,
                     std::string_view what) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (done()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) throw unfinished(runtime, ordinal, what);
    if (now - start < std::chrono::milliseconds(1)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

/// Every device `lib` (may be null: none) describes, in its order; a device it lists but cannot
/// describe (lost, or being reset: `describe` throws cotune::error) is left out.
template <class Library, class Describe>
[[nodiscard]] auto list_devices(const Library* lib, Describe describe) {
  std::vector<decltype(describe(*lib, 0))> out;
  if (!lib) return out;
  for (int i = 0; i < lib->device_count(); ++i) {
    try {
      out.push_back(describe(*lib, i));
    } catch (const error&) {
    }
  }
  return out;
}

/// The limits a launch on device `d` (a runtime's device description) must respect, checked per
/// dimension by check_block and check_grid.
template <class Device>
[[nodiscard]] launch_limits limits_of(const Device& d) noexcept {
  return {{d.max_block_dims[0], d.max_block_dims[1], d.max_block_dims[2]},
          d.max_threads_per_block,
          {d.max_grid_dims[0], d.max_grid_dims[1], d.max_grid_dims[2]}};
}

/// A library loaded from a key (a path, or a list of paths tried in order), or why it was not.
template <class Library>
struct library_entry {
  std::unique_ptr<Library> library;
  std::string message;
};

/// The library `Library::open(key, message)` loads for `key`; each key is tried once per process and
/// the outcome kept. Never destroyed: device contexts, streams and modules may be used by other static
/// objects' destructors (and a preload thread joined at exit), and the runtime tears everything down
/// at process exit anyway.
template <class Library, class Key>
[[nodiscard]] const library_entry<Library>& library_for(const Key& key) {
  static auto* mutex = new std::mutex;
  static auto* entries = new std::map<Key, std::unique_ptr<library_entry<Library>>>;
  std::lock_guard lock(*mutex);
  auto& slot = (*entries)[key];
  if (!slot) {
    slot = std::make_unique<library_entry<Library>>();
    slot->library = Library::open(key, slot->message);
  }
  return *slot;
}

} // namespace cotune::gpu

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/runtime_library.ipp>
#endif
