#pragma once
/// \file The `Backend` concept: compile a kernel for a config, load it on a device, launch it.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <filesystem>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cotune/core/config.hpp>
#include <cotune/backend/launch_geometry.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/core/kernel_source.hpp>

namespace cotune {

/// Lists the devices a backend can run on and describes each for cache keys.
template <class B>
concept DeviceProvider = requires(const B& b, const typename B::device& d) {
  typename B::device;
  { b.devices() } -> std::same_as<std::vector<typename B::device>>;
  /// Toolchain identity + the device's architecture: part of every key, so a result or binary made
  /// with another compiler or for another architecture is never reused.
  { b.fingerprint(d) } -> std::same_as<std::string>;
  /// Human-readable device name for messages and provenance.
  { b.device_name(d) } -> std::same_as<std::string>;
};

/// What a binary is made from. The binary cache (tune/binary_cache.hpp) hashes the ingredients, with
/// cotune's version and the set cache-invalidating knobs, into the binary's key: one recipe for every
/// backend, so a backend names its inputs and never hashes or stores anything itself.
struct binary_recipe {
  std::string backend;                  ///< "host", "cuda": keeps two backends' keys apart
  std::vector<std::string> ingredients; ///< compiler identity, target, every flag and macro, the source digest
  std::string file;                     ///< the image's file name in the cache ("vadd.so", "saxpy.cubin")
  bool has_meta = false;                ///< the binary has meta text (binary_image::meta) stored beside the image
};

/// A binary as the binary cache stores it: the image, what else the backend needs to load it, and
/// where the image lies on the local disk when the cache keeps it in a file.
struct binary_image {
  std::string bytes;          ///< a shared object, a cubin, PTX text (may be empty when `file` is set)
  std::string meta;           ///< small text the backend reads back (a symbol, an architecture); may be empty
  std::filesystem::path file; ///< the image's local file, or empty
  /// Keeps `file` in the cache (never evicted) while anything made from this image lives: a backend
  /// that loads from the file keeps it as long as the loaded code.
  std::shared_ptr<const void> hold{};
};

/// Turns a source and a config into a binary for a device's architecture. `compile` must be pure
/// (no cache: tune/binary_cache.hpp stores binaries for every backend), thread-safe, and must not
/// touch device state: it runs on the compile pool. It throws compile_error (with the compiler's log
/// and the config) on failure. `binary_key` names what the binary is made from; `to_image` and
/// `from_image` turn a binary into what the cache stores and back (`from_image` gives nothing for an
/// image it cannot use, which the cache then treats as a miss).
template <class B>
concept Compiler = requires(const B& b, const kernel_source& k, const config& c, const typename B::device& d,
                            const typename B::binary& bin, binary_image img) {
  typename B::binary;
  { b.binary_key(k, c, d) } -> std::same_as<binary_recipe>;
  { b.compile(k, c, d) } -> std::same_as<typename B::binary>;
  { b.to_image(bin) } -> std::same_as<binary_image>;
  { b.from_image(std::move(img)) } -> std::same_as<std::optional<typename B::binary>>;
};

/// Makes a binary callable on a device (on that device's strand). Throws out_of_resources when the
/// binary needs more than the device has, launch_error otherwise.
template <class B>
concept Loader = requires(const B& b, const typename B::binary& bin, const kernel_source& k, const config& c,
                          const typename B::device& d) {
  typename B::function;
  { b.load(bin, k, c, d) } -> std::same_as<typename B::function>;
};

/// A backend: devices, compilation and loading. Launching is `b.launch(fn, grid, args...)`,
/// checked per argument list by `LaunchableWith`.
template <class B>
concept Backend = DeviceProvider<B> && Compiler<B> && Loader<B> && std::copy_constructible<typename B::device> &&
                  std::copy_constructible<typename B::binary> && std::move_constructible<typename B::function>;

/// The backend can launch a loaded function with these arguments.
template <class B, class... Args>
concept LaunchableWith = Backend<B> && requires(const B& b, const typename B::function& f, const launch_grid& g,
                                                Args&... args) { b.launch(f, g, args...); };

// --- optional capabilities ------------------------------------------------------------------------
// Each is a named concept, so that a backend can assert the ones it means to offer (a misspelt or
// mistyped member then fails that assertion instead of silently switching the feature off) and the
// autotuner refuses a member that is there but does not fit (see tune/autotuner.hpp).

/// Names the physical device `d` is ("cuda:pci:0000:3b:00.0", "host"): every tuner that measures on
/// it shares one device thread, whatever its template arguments, so their timings never overlap.
/// Without it, devices are told apart by `device_name` and index.
template <class B>
concept HasDeviceKey = requires(const B& b, const typename B::device& d) {
  { b.device_key(d) } -> std::same_as<std::string>;
};

/// Says whether measuring on this backend's devices may run while candidates still compile
/// (`static constexpr bool benchmark_overlaps_compile`): true for GPUs; false for the host, whose
/// timings compiles on the same cores would skew. Without it: true.
template <class B>
concept DeclaresCompileOverlap = requires {
  requires std::same_as<decltype(B::benchmark_overlaps_compile), const bool>;
  typename std::bool_constant<B::benchmark_overlaps_compile>; // a constant expression
};

/// Compiles can be stopped midway (deadline, cancellation) through a `std::stop_token`.
template <class B>
concept StoppableCompiler = requires(const B& b, const kernel_source& k, const config& c, const typename B::device& d,
                                     std::stop_token stop) {
  { b.compile(k, c, d, stop) } -> std::same_as<typename B::binary>;
};

/// Says whether two devices are the same model with the same limits, so that one candidate list can
/// be split across them. Without it: equal fingerprints.
template <class B>
concept ComparesDevices = requires(const B& b, const typename B::device& d) {
  { b.interchangeable(d, d) } -> std::convertible_to<bool>;
};

/// Loads binaries from a file rather than from bytes (`static constexpr bool loads_from_file`): the
/// host backend dlopens a shared object. The binary cache then hands it the cached file and skips
/// reading the bytes; a binary that is in no file is written to a process-private one first.
template <class B>
concept DeclaresFileLoading = requires {
  requires std::same_as<decltype(B::loads_from_file), const bool>;
  typename std::bool_constant<B::loads_from_file>;
};

/// Says whether its binaries are worth caching (`static constexpr bool caches_binaries`): false for a
/// backend whose candidates the program's build already compiled (gpu/compiled_backend.hpp), whose
/// `compile` only finds the candidate; the binary cache then neither reads nor stores them. Without
/// it: true.
template <class B>
concept DeclaresBinaryCaching = requires {
  requires std::same_as<decltype(B::caches_binaries), const bool>;
  typename std::bool_constant<B::caches_binaries>;
};

/// Candidates can be benchmarked in a forked copy of the process (`static constexpr bool fork_isolation`):
/// a crash or a hang then costs that candidate alone (COTUNE_ISOLATE). The host backend can; a GPU
/// backend cannot this way (a forked child cannot use its parent's device context).
template <class B>
concept DeclaresForkIsolation = requires {
  requires std::same_as<decltype(B::fork_isolation), const bool>;
  typename std::bool_constant<B::fork_isolation>;
};

/// Says whether its kernels use a config's launch options (`static constexpr bool uses_launch_options`):
/// the host backend does not, so results, errors and tools show its configs without num_warps and the
/// rest. Without it: true.
template <class B>
concept DeclaresLaunchOptions = requires {
  requires std::same_as<decltype(B::uses_launch_options), const bool>;
  typename std::bool_constant<B::uses_launch_options>;
};

/// Has warnings for the user that belong to no one candidate (a compile server that could not start):
/// `take_warnings()` hands over those gathered since the last call, and each tuning reports them as
/// `tuning_warning` events.
template <class B>
concept ReportsWarnings = requires(const B& b) {
  { b.take_warnings() } -> std::same_as<std::vector<std::string>>;
};

/// Launches on a stream the caller owns (`typename B::stream_type`), so that a tuned call runs in order
/// with the caller's work and can be captured into a graph (`autotuner::on(stream)`):
/// `b.launch_on(stream, f, grid, args...)` launches there; `b.is_capturing(stream)` says whether the
/// stream is being captured (tuning must not run then); `b.synchronize_stream(stream)` waits for the
/// caller's work before a tuning reads its buffers; `b.synchronize(f)` waits for what cotune queued on
/// `f`'s device (buffers zeroed before the first launch).
template <class B>
concept LaunchesOnStreams = requires(const B& b, const typename B::function& f, typename B::stream_type s) {
  typename B::stream_type;
  { b.is_capturing(s) } -> std::same_as<bool>;
  b.synchronize_stream(s);
  b.synchronize(f);
};

/// The backend can launch a loaded function with these arguments on a caller's stream.
template <class B, class... Args>
concept LaunchableOnStreamWith =
    LaunchesOnStreams<B> && requires(const B& b, const typename B::function& f, typename B::stream_type s,
                                     const launch_grid& g, Args&... args) { b.launch_on(s, f, g, args...); };

/// Finds a global variable (a `__constant__` array, a lookup table) in a loaded function's module, so
/// that `tune_options::on_load` can write it before the module first runs: `b.find_global(f, name)`
/// gives its address, size and copy functions (module_view.hpp), or nothing when there is no such
/// global. A tuner whose options set on_load over a backend without it is refused at construction.
template <class B>
concept FindsModuleGlobals = requires(const B& b, const typename B::function& f, std::string_view name) {
  { b.find_global(f, name) } -> std::same_as<std::optional<module_global>>;
};

/// May hold a candidate's binary already built (a file of kernels compiled ahead of time, gpu/precompiled_file.hpp):
/// `prebuilt(k, c, d)` gives it, nothing where the backend must compile, or throws the candidate's failure
/// (compile_error). The binary cache asks it first and keeps no copy of what it gives.
template <class B>
concept LoadsPrebuilt = requires(const B& b, const kernel_source& k, const config& c, const typename B::device& d) {
  { b.prebuilt(k, c, d) } -> std::same_as<std::optional<typename B::binary>>;
};

/// Names the benchmarker its kernels are timed with (`using default_benchmarker_type = ...`).
template <class B>
concept DeclaresBenchmarker = requires { typename B::default_benchmarker_type; };

} // namespace cotune
