#pragma once
/// \file `cotune::cuda::driver_library`: the CUDA driver API, loaded at run time with dlopen.
///
/// Nothing links against libcuda: a program built with cotune starts on a machine without a GPU and
/// simply sees no CUDA devices. The library is opened on first use (from COTUNE_LIBCUDA_PATH, else
/// libcuda.so.1), and every function is looked up under the symbol name that cuda.h gives it
/// (cuda.h #defines many names to versioned symbols, e.g. cuMemAlloc -> cuMemAlloc_v2), so the
/// function pointer and the prototype cotune was compiled against always agree.

#include <cotune/detail/config.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <dlfcn.h>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_knobs.hpp>
#include <cotune/gpu/runtime_library.hpp>

// Two-level stringification, so that the argument is macro-expanded first: COTUNE_CUDA_SYMBOL(cuMemAlloc)
// is "cuMemAlloc_v2" under cuda.h's definitions.
#define COTUNE_CUDA_SYMBOL_TEXT(name) #name
#define COTUNE_CUDA_SYMBOL(name) COTUNE_CUDA_SYMBOL_TEXT(name)

// Every driver function cotune calls: member name, cuda.h name.
#define COTUNE_CUDA_DRIVER_FUNCTIONS(X)                                                                     \
  X(init, cuInit)                                                                                           \
  X(driver_get_version, cuDriverGetVersion)                                                                 \
  X(get_error_name, cuGetErrorName)                                                                         \
  X(get_error_string, cuGetErrorString)                                                                     \
  X(device_get_count, cuDeviceGetCount)                                                                     \
  X(device_get, cuDeviceGet)                                                                                \
  X(device_get_name, cuDeviceGetName)                                                                       \
  X(device_get_attribute, cuDeviceGetAttribute)                                                             \
  X(device_total_mem, cuDeviceTotalMem)                                                                     \
  X(device_primary_ctx_retain, cuDevicePrimaryCtxRetain)                                                    \
  X(ctx_get_current, cuCtxGetCurrent)                                                                       \
  X(ctx_set_current, cuCtxSetCurrent)                                                                       \
  X(ctx_synchronize, cuCtxSynchronize)                                                                      \
  X(module_load_data, cuModuleLoadData)                                                                     \
  X(module_unload, cuModuleUnload)                                                                          \
  X(module_get_function, cuModuleGetFunction)                                                               \
  X(module_get_global, cuModuleGetGlobal)                                                                   \
  X(func_get_attribute, cuFuncGetAttribute)                                                                 \
  X(func_set_attribute, cuFuncSetAttribute)                                                                 \
  X(launch_kernel, cuLaunchKernel)                                                                          \
  X(mem_alloc, cuMemAlloc)                                                                                  \
  X(mem_free, cuMemFree)                                                                                    \
  X(mem_get_address_range, cuMemGetAddressRange)                                                            \
  X(ipc_get_mem_handle, cuIpcGetMemHandle)                                                                  \
  X(ipc_open_mem_handle, cuIpcOpenMemHandle)                                                                \
  X(ipc_close_mem_handle, cuIpcCloseMemHandle)                                                              \
  X(memset_d8_async, cuMemsetD8Async)                                                                       \
  X(memset_d32_async, cuMemsetD32Async)                                                                     \
  X(memcpy_htod_async, cuMemcpyHtoDAsync)                                                                   \
  X(memcpy_dtoh_async, cuMemcpyDtoHAsync)                                                                   \
  X(memcpy_dtod_async, cuMemcpyDtoDAsync)                                                                   \
  X(stream_create, cuStreamCreate)                                                                          \
  X(stream_destroy, cuStreamDestroy)                                                                        \
  X(stream_synchronize, cuStreamSynchronize)                                                                \
  X(stream_query, cuStreamQuery)                                                                            \
  X(stream_is_capturing, cuStreamIsCapturing)                                                               \
  X(stream_begin_capture, cuStreamBeginCapture)                                                             \
  X(stream_end_capture, cuStreamEndCapture)                                                                 \
  X(graph_instantiate, cuGraphInstantiate)                                                                  \
  X(graph_launch, cuGraphLaunch)                                                                            \
  X(graph_exec_destroy, cuGraphExecDestroy)                                                                 \
  X(graph_destroy, cuGraphDestroy)                                                                          \
  X(event_create, cuEventCreate)                                                                            \
  X(event_record, cuEventRecord)                                                                            \
  X(event_synchronize, cuEventSynchronize)                                                                  \
  X(event_elapsed_time, cuEventElapsedTime)                                                                 \
  X(event_destroy, cuEventDestroy)

namespace cotune::cuda {

/// The driver functions cotune uses, resolved from libcuda. Members are named after the driver
/// functions in snake_case (`mem_alloc` is cuMemAlloc, i.e. the symbol cuMemAlloc_v2).
struct driver_api {
#define COTUNE_CUDA_MEMBER(member, name) decltype(&::name) member = nullptr;
  COTUNE_CUDA_DRIVER_FUNCTIONS(COTUNE_CUDA_MEMBER)
#undef COTUNE_CUDA_MEMBER
};

/// True for errors after which the CUDA context is unusable: every later call in it fails the
/// same way, until the process ends (or the primary context is reset, freeing all its memory).
[[nodiscard]] constexpr bool is_sticky_error(CUresult r) noexcept {
  switch (static_cast<int>(r)) {
  case 214: // CUDA_ERROR_ECC_UNCORRECTABLE
  case 700: // CUDA_ERROR_ILLEGAL_ADDRESS
  case 702: // CUDA_ERROR_LAUNCH_TIMEOUT
  case 709: // CUDA_ERROR_CONTEXT_IS_DESTROYED
  case 710: // CUDA_ERROR_ASSERT
  case 714: // CUDA_ERROR_HARDWARE_STACK_ERROR
  case 715: // CUDA_ERROR_ILLEGAL_INSTRUCTION
  case 716: // CUDA_ERROR_MISALIGNED_ADDRESS
  case 717: // CUDA_ERROR_INVALID_ADDRESS_SPACE
  case 718: // CUDA_ERROR_INVALID_PC
  case 719: // CUDA_ERROR_LAUNCH_FAILED
  case 721: // CUDA_ERROR_TENSOR_MEMORY_LEAK
  case 911: // CUDA_ERROR_EXTERNAL_DEVICE
    return true;
  default: return false;
  }
}

class driver_library;

namespace detail {

/// Called once a driver library is opened, before cuInit: a moment when the loader is free and the
/// next ~100 ms are spent in the driver. The CUDA backend installs the NVRTC preload here.
[[nodiscard]] COTUNE_DECL std::atomic<void (*)()>& driver_opened_hook() noexcept;

/// True once some driver library has been opened in this process.
[[nodiscard]] COTUNE_DECL std::atomic<bool>& driver_opened() noexcept;

} // namespace detail

/// One device's primary context and the stream cotune works on. Device work may run on different
/// threads over time (a strand hops between pool threads), so every entry point calls
/// `make_current()` first; it costs one thread-local read when the context is already current.
class device_context {
public:
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  [[nodiscard]] const driver_api& api() const noexcept { return *api_; }
  [[nodiscard]] const driver_library& library() const noexcept { return *library_; }
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  [[nodiscard]] CUdevice handle() const noexcept { return device_; }
  [[nodiscard]] CUcontext context() const noexcept { return context_; }
  /// The stream every cotune launch, copy and timing on this device goes to (non-blocking: it does
  /// not wait for the legacy default stream).
  [[nodiscard]] CUstream stream() const noexcept { return stream_; }

  /// Makes the device's primary context current on the calling thread (no-op if it already is).
  void make_current() const {
    CUcontext current = nullptr;
    if (api_->ctx_get_current(&current) == CUDA_SUCCESS && current == context_) return;
    check(api_->ctx_set_current(context_), "cuCtxSetCurrent");
  }
  /// `make_current` for clean-up paths (freeing, unloading): false instead of an error.
  bool try_make_current() const noexcept {
    CUcontext current = nullptr;
    if (api_->ctx_get_current(&current) == CUDA_SUCCESS && current == context_) return true;
    return api_->ctx_set_current(context_) == CUDA_SUCCESS;
  }

  /// Throws launch_error for a failed call. Sticky errors say that the context is lost.
  void check(CUresult r, std::string_view what) const;

  /// Waits for the stream. A `deadline` turns a wait past it into cotune::timeout_error.
  void synchronize(std::string_view what,
                   std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt) const;

private:
  friend class driver_library;
  device_context(const driver_library& lib, const driver_api& api, int ordinal)
      : library_(&lib), api_(&api), ordinal_(ordinal) {}

  const driver_library* library_;
  const driver_api* api_;
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::once_flag once_;
};

/// An opened libcuda: its function table, version, device count and the devices' contexts.
class driver_library {
public:
  driver_library(const driver_library&) = delete;
  driver_library& operator=(const driver_library&) = delete;

  /// Opens `path` (a file name searched by the loader, or a path) and resolves every function.
  /// On failure, returns nothing and sets `why` to a message saying what to do.
  [[nodiscard]] static std::unique_ptr<driver_library> open(const std::string& path, std::string& why);

  [[nodiscard]] const driver_api& api() const noexcept { return api_; }
  /// The dlopen handle (for looking up functions cotune does not use).
  [[nodiscard]] void* handle() const noexcept { return handle_; }
  /// The path it was opened from.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// cuDriverGetVersion: 1000 * major + 10 * minor (13000 is CUDA 13.0).
  [[nodiscard]] int version() const noexcept { return version_; }
  /// "13.0".
  [[nodiscard]] std::string version_text() const { return fmt::format("{}.{}", version_ / 1000, version_ % 1000 / 10); }
  /// Number of devices (0 when cuInit failed, e.g. CUDA_ERROR_NO_DEVICE).
  [[nodiscard]] int device_count() const noexcept { return device_count_; }
  /// Why there are no devices, when cuInit or cuDeviceGetCount failed; empty otherwise.
  [[nodiscard]] const std::string& init_error() const noexcept { return init_error_; }

  /// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
  [[nodiscard]] std::string error_text(CUresult r) const;

  /// Device `ordinal`'s context, created on first use: the primary context is retained (and kept
  /// for the life of the process) and a non-blocking stream is created in it.
  [[nodiscard]] const device_context& context(int ordinal) const;

private:
  driver_library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  /// Resolves every function of the list from `handle_`, naming the symbols it lacks in `missing`. Its
  /// body is the list, expanded here, where the list is defined (the header undefines it at its end).
  void resolve(std::string& missing) {
#define COTUNE_CUDA_RESOLVE(member, name)                                                                   \
  api_.member = reinterpret_cast<decltype(&::name)>(::dlsym(handle_, COTUNE_CUDA_SYMBOL(name)));            \
  if (!api_.member) missing += std::string(missing.empty() ? "" : ", ") + COTUNE_CUDA_SYMBOL(name);
    COTUNE_CUDA_DRIVER_FUNCTIONS(COTUNE_CUDA_RESOLVE)
#undef COTUNE_CUDA_RESOLVE
  }

  void* handle_; // never closed: contexts, modules and memory live until the process ends
  std::string path_;
  driver_api api_{};
  int version_ = 0;
  int device_count_ = 0;
  std::string init_error_;
  std::vector<std::unique_ptr<device_context>> contexts_;
};

namespace detail {

using driver_entry = gpu::library_entry<driver_library>;

/// The library path the knob names, else libcuda.so.1.
[[nodiscard]] COTUNE_DECL std::string driver_path();

/// The entry for the paths the knobs name now. The key is a named local: a call with a temporary
/// argument that returns a reference makes g++ 13 warn (-Wdangling-reference), although the entry
/// lives in a function-local static table.
[[nodiscard]] COTUNE_DECL const driver_entry& current_driver_entry();

} // namespace detail

/// The CUDA driver as the `cuda.libcuda_path` knob says, or nullptr if it cannot be loaded
/// (`driver_error()` then says why). Never throws for a missing library.
[[nodiscard]] COTUNE_DECL const driver_library* try_driver();

/// Why `try_driver()` is null (empty when the driver loaded).
[[nodiscard]] COTUNE_DECL std::string driver_error();

/// The CUDA driver; throws cotune::error with the reason when it cannot be loaded.
[[nodiscard]] COTUNE_DECL const driver_library& driver();

} // namespace cotune::cuda

#undef COTUNE_CUDA_DRIVER_FUNCTIONS
#undef COTUNE_CUDA_SYMBOL
#undef COTUNE_CUDA_SYMBOL_TEXT

#if COTUNE_HEADER_ONLY
#include <cotune/cuda/driver_api.ipp>
#endif
