#pragma once
/// \file `cotune::hip::runtime_library`: the HIP runtime (libamdhip64), loaded at run time with dlopen.
///
/// Nothing links against libamdhip64 and no HIP header is needed to build: cotune declares the few
/// HIP functions it calls itself (`COTUNE_HIP_RUNTIME_FUNCTIONS`, with ABI-equal types: enums as int,
/// handles as void*), and tests/hip/test_hip_api.cpp checks each declaration against the real HIP
/// headers where they are installed. The library is opened on first use (COTUNE_LIBAMDHIP64_PATH, else
/// libamdhip64.so.6, then .so.5), so a program built with cotune starts on a machine without ROCm and
/// simply sees no HIP devices.

#include <cotune/detail/config.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <dlfcn.h>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/gpu/library_loader.hpp>
#include <cotune/gpu/runtime_library.hpp>
#include <cotune/hip/hip_knobs.hpp>

namespace cotune::hip {

// --- cotune's declarations of the HIP types it uses (checked against the real headers) -----------
using hip_error = int;          ///< hipError_t
using hip_stream = void*;       ///< hipStream_t
using hip_module = void*;       ///< hipModule_t
using hip_function = void*;     ///< hipFunction_t
using hip_event = void*;        ///< hipEvent_t
using hip_graph = void*;        ///< hipGraph_t
using hip_graph_exec = void*;   ///< hipGraphExec_t
using hip_graph_node = void*;   ///< hipGraphNode_t
using device_ptr = void*;       ///< hipDeviceptr_t

/// hipIpcMemHandle_t: 64 opaque bytes, passed by value.
struct ipc_mem_handle {
  char reserved[64];
};

inline constexpr hip_error hip_success = 0;
inline constexpr hip_error hip_error_invalid_value = 1;
inline constexpr hip_error hip_error_out_of_memory = 2;
inline constexpr hip_error hip_error_no_device = 100;
inline constexpr hip_error hip_error_not_found = 500;
inline constexpr hip_error hip_error_not_ready = 600;
inline constexpr hip_error hip_error_stream_capture_implicit = 906;
inline constexpr int hip_stream_capture_status_none = 0; ///< hipStreamCaptureStatusNone
inline constexpr unsigned hip_stream_non_blocking = 0x01;
inline constexpr int hip_stream_capture_mode_relaxed = 2;
// hipFunction_attribute
inline constexpr int hip_func_attribute_max_threads_per_block = 0;
inline constexpr int hip_func_attribute_shared_size_bytes = 1;
inline constexpr int hip_func_attribute_local_size_bytes = 3;
inline constexpr int hip_func_attribute_num_regs = 4;

/// True for errors after which the device's work in this process cannot go on (the HIP values of
/// CUDA's sticky errors).
[[nodiscard]] constexpr bool is_sticky_error(hip_error r) noexcept {
  switch (r) {
  case 214: // hipErrorECCNotCorrectable
  case 700: // hipErrorIllegalAddress
  case 702: // hipErrorLaunchTimeOut
  case 709: // hipErrorContextIsDestroyed
  case 710: // hipErrorAssert
  case 719: // hipErrorLaunchFailure
    return true;
  default: return false;
  }
}

/// hipDeviceProp_t in the layout HIP 5 fills (`hipDeviceProp_tR0000` in HIP 6), up to gcnArchName;
/// the rest is room the runtime writes into and cotune does not read.
struct device_properties {
  char name[256];
  std::size_t total_global_mem;
  std::size_t shared_mem_per_block;
  int regs_per_block;
  int warp_size;
  int max_threads_per_block;
  int max_threads_dim[3];
  int max_grid_size[3];
  int clock_rate;
  int memory_clock_rate;
  int memory_bus_width;
  std::size_t total_const_mem;
  int major;
  int minor;
  int multi_processor_count;
  int l2_cache_size;
  int max_threads_per_multi_processor;
  int compute_mode;
  int clock_instruction_rate;
  unsigned arch_flags; ///< hipDeviceArch_t: 32 one-bit flags
  int concurrent_kernels;
  int pci_domain_id;
  int pci_bus_id;
  int pci_device_id;
  std::size_t max_shared_memory_per_multi_processor;
  int is_multi_gpu_board;
  int can_map_host_memory;
  int gcn_arch;
  char gcn_arch_name[256];
  char rest[2048]; ///< HIP 5.2's struct has 212 more bytes; room for later additions to R0000
};

/// Every HIP runtime function cotune calls: member, HIP name, cotune's type for it.
#define COTUNE_HIP_RUNTIME_FUNCTIONS(X)                                                                    \
  X(init, hipInit, hip_error(unsigned))                                                                    \
  X(driver_get_version, hipDriverGetVersion, hip_error(int*))                                              \
  X(runtime_get_version, hipRuntimeGetVersion, hip_error(int*))                                            \
  X(get_error_name, hipGetErrorName, const char*(hip_error))                                               \
  X(get_error_string, hipGetErrorString, const char*(hip_error))                                           \
  X(get_device_count, hipGetDeviceCount, hip_error(int*))                                                  \
  X(set_device, hipSetDevice, hip_error(int))                                                              \
  X(get_device_properties, hipGetDeviceProperties, hip_error(device_properties*, int))                     \
  X(device_synchronize, hipDeviceSynchronize, hip_error())                                                 \
  X(module_load_data, hipModuleLoadData, hip_error(hip_module*, const void*))                              \
  X(module_unload, hipModuleUnload, hip_error(hip_module))                                                 \
  X(module_get_function, hipModuleGetFunction, hip_error(hip_function*, hip_module, const char*))          \
  X(module_get_global, hipModuleGetGlobal, hip_error(device_ptr*, std::size_t*, hip_module, const char*))  \
  X(func_get_attribute, hipFuncGetAttribute, hip_error(int*, int, hip_function))                           \
  X(module_launch_kernel, hipModuleLaunchKernel,                                                           \
    hip_error(hip_function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, hip_stream, \
              void**, void**))                                                                             \
  X(free, hipFree, hip_error(void*))                                                                       \
  X(memset_d32_async, hipMemsetD32Async, hip_error(device_ptr, int, std::size_t, hip_stream))              \
  X(memset_async, hipMemsetAsync, hip_error(void*, int, std::size_t, hip_stream))                          \
  X(memcpy_htod_async, hipMemcpyHtoDAsync, hip_error(device_ptr, void*, std::size_t, hip_stream))          \
  X(memcpy_dtoh_async, hipMemcpyDtoHAsync, hip_error(void*, device_ptr, std::size_t, hip_stream))          \
  X(memcpy_dtod_async, hipMemcpyDtoDAsync, hip_error(device_ptr, device_ptr, std::size_t, hip_stream))     \
  X(stream_create_with_flags, hipStreamCreateWithFlags, hip_error(hip_stream*, unsigned))                  \
  X(stream_synchronize, hipStreamSynchronize, hip_error(hip_stream))                                       \
  X(stream_destroy, hipStreamDestroy, hip_error(hip_stream))                                               \
  X(stream_query, hipStreamQuery, hip_error(hip_stream))                                                   \
  X(stream_is_capturing, hipStreamIsCapturing, hip_error(hip_stream, int*))                                \
  X(stream_begin_capture, hipStreamBeginCapture, hip_error(hip_stream, int))                               \
  X(stream_end_capture, hipStreamEndCapture, hip_error(hip_stream, hip_graph*))                            \
  X(graph_instantiate, hipGraphInstantiate,                                                                \
    hip_error(hip_graph_exec*, hip_graph, hip_graph_node*, char*, std::size_t))                            \
  X(graph_launch, hipGraphLaunch, hip_error(hip_graph_exec, hip_stream))                                   \
  X(graph_exec_destroy, hipGraphExecDestroy, hip_error(hip_graph_exec))                                    \
  X(graph_destroy, hipGraphDestroy, hip_error(hip_graph))                                                  \
  X(event_create, hipEventCreate, hip_error(hip_event*))                                                   \
  X(event_record, hipEventRecord, hip_error(hip_event, hip_stream))                                        \
  X(event_synchronize, hipEventSynchronize, hip_error(hip_event))                                          \
  X(event_elapsed_time, hipEventElapsedTime, hip_error(float*, hip_event, hip_event))                      \
  X(event_destroy, hipEventDestroy, hip_error(hip_event))                                                  \
  X(mem_get_address_range, hipMemGetAddressRange, hip_error(device_ptr*, std::size_t*, device_ptr))         \
  X(ipc_get_mem_handle, hipIpcGetMemHandle, hip_error(ipc_mem_handle*, void*))                             \
  X(ipc_open_mem_handle, hipIpcOpenMemHandle, hip_error(void**, ipc_mem_handle, unsigned))                 \
  X(ipc_close_mem_handle, hipIpcCloseMemHandle, hip_error(void*))

/// The HIP runtime functions that HIP's C++ headers overload (hipMalloc has a template for typed
/// pointers): cotune declares the C function, and the check names its signature.
#define COTUNE_HIP_OVERLOADED_FUNCTIONS(X) X(malloc, hipMalloc, hip_error(void**, std::size_t))

/// The HIP runtime functions cotune uses, resolved from libamdhip64 (members in snake_case).
struct runtime_api {
#define COTUNE_HIP_MEMBER(member, name, type) std::add_pointer_t<type> member = nullptr;
  COTUNE_HIP_RUNTIME_FUNCTIONS(COTUNE_HIP_MEMBER)
  COTUNE_HIP_OVERLOADED_FUNCTIONS(COTUNE_HIP_MEMBER)
#undef COTUNE_HIP_MEMBER
};

/// The symbol each member is looked up under, in order: HIP 6 renamed the hipDeviceProp_t that
/// hipGetDeviceProperties fills (R0600) and kept the HIP 5 layout as hipGetDevicePropertiesR0000.
[[nodiscard]] COTUNE_DECL std::vector<const char*> runtime_symbols(std::string_view hip_name);

class runtime_library;

/// One device and the stream cotune works on. HIP's current device is per thread, so every entry
/// point calls `make_current()` first (one thread-local read when it already is).
class device_context {
public:
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  [[nodiscard]] const runtime_api& api() const noexcept { return *api_; }
  [[nodiscard]] const runtime_library& library() const noexcept { return *library_; }
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  /// The stream every cotune launch, copy and timing on this device goes to (non-blocking).
  [[nodiscard]] hip_stream stream() const noexcept { return stream_; }

  /// Makes the device current on the calling thread (no-op if this thread's last was this one).
  void make_current() const;
  /// Selects the device for clean-up paths (freeing, unloading): false instead of an error.
  bool try_make_current() const noexcept { return api_->set_device(ordinal_) == hip_success; }

  /// Throws launch_error for a failed call, naming the call and the device.
  void check(hip_error r, std::string_view what) const;

  /// Waits for the stream; past `deadline`, cotune::timeout_error.
  void synchronize(std::string_view what,
                   std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt) const;

private:
  friend class runtime_library;
  device_context(const runtime_library& lib, const runtime_api& api, int ordinal)
      : library_(&lib), api_(&api), ordinal_(ordinal) {}

  const runtime_library* library_;
  const runtime_api* api_;
  int ordinal_;
  hip_stream stream_ = nullptr;
  std::once_flag once_;
};

/// An opened libamdhip64: its function table, version, device count and the devices' streams.
class runtime_library {
public:
  runtime_library(const runtime_library&) = delete;
  runtime_library& operator=(const runtime_library&) = delete;

  /// Opens the first of `paths` that loads and resolves every function; sets `why` otherwise.
  [[nodiscard]] static std::unique_ptr<runtime_library> open(const std::vector<std::string>& paths, std::string& why);

  [[nodiscard]] const runtime_api& api() const noexcept { return api_; }
  [[nodiscard]] void* handle() const noexcept { return handle_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// hipRuntimeGetVersion: 10^7 major + 10^5 minor + patch (50221153 is HIP 5.2).
  [[nodiscard]] int version() const noexcept { return version_; }
  /// "5.2".
  [[nodiscard]] std::string version_text() const {
    return fmt::format("{}.{}", version_ / 10000000, version_ / 100000 % 100);
  }
  [[nodiscard]] int device_count() const noexcept { return device_count_; }
  /// Why there are no devices (hipErrorNoDevice on a machine without an AMD GPU); empty otherwise.
  [[nodiscard]] const std::string& init_error() const noexcept { return init_error_; }

  /// "hipErrorNoDevice (no ROCm-capable device is detected)".
  [[nodiscard]] std::string error_text(hip_error r) const;

  /// Device `ordinal`'s context, created on first use (a non-blocking stream on the device).
  [[nodiscard]] const device_context& context(int ordinal) const;

private:
  runtime_library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_; // never closed: modules and memory live until the process ends
  std::string path_;
  runtime_api api_{};
  int version_ = 0;
  int device_count_ = 0;
  std::string init_error_;
  std::vector<std::unique_ptr<device_context>> contexts_;
};

namespace detail {

using runtime_entry = gpu::library_entry<runtime_library>;

/// The knob's path alone when set; else libamdhip64.so.6, .so.5 (the sonames of ROCm 6 and of HIP 5,
/// Debian 12's), then ROCm's default prefix.
[[nodiscard]] COTUNE_DECL std::vector<std::string> runtime_search_paths();

/// The entry for the paths the knobs name now. The key is a named local: a call with a temporary
/// argument that returns a reference makes g++ 13 warn (-Wdangling-reference), although the entry
/// lives in a function-local static table.
[[nodiscard]] COTUNE_DECL const runtime_entry& current_runtime_entry();

} // namespace detail

/// The HIP runtime as the `hip.libamdhip64_path` knob says, or nullptr (`runtime_error()` says why).
[[nodiscard]] COTUNE_DECL const runtime_library* try_runtime();

/// Why `try_runtime()` is null (empty when it loaded).
[[nodiscard]] COTUNE_DECL std::string runtime_error();

/// The HIP runtime; throws cotune::error with the reason when it cannot be loaded.
[[nodiscard]] COTUNE_DECL const runtime_library& runtime();

} // namespace cotune::hip

#if COTUNE_HEADER_ONLY
#include <cotune/hip/hip_api.ipp>
#endif
