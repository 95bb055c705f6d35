#pragma once
/// \file A loaded GPU kernel, for CUDA and HIP alike: `gpu::load_kernel` loads a compiled image on one
/// device, finds its entry, reads its resources and checks them against the device before any launch;
/// `gpu::launch_kernel` launches it (opting into more dynamic shared memory first where the runtime
/// needs that); `gpu::find_global` finds a module global (a `__constant__` array) for
/// `tune_options::on_load`. Each runtime names its calls in a `KernelCalls` struct
/// (cuda/cuda_backend.hpp and hip/hip_backend.hpp have one each):
///
///     using context = ...;  using module = ...;  using function = ...;  using stream = ...;
///     using result = ...;   using memory = ...;   // its DeviceMemoryRuntime (globals' copies)
///     static constexpr std::string_view backend;      // "cuda backend"
///     static constexpr std::string_view shared_name;  // "shared memory", "shared memory (LDS)"
///     static constexpr std::string_view entry_call, attribute_call, global_call;  // for messages
///     static bool ok(result);  static bool sticky(result);  static bool not_found(result);
///     static result load(const context&, const std::string& image, module*);
///     static void unload(const context&, module) noexcept;
///     static result entry(const context&, function*, module, const char* symbol);
///     static result attribute(const context&, int*, kernel_attribute, function);
///     static result global(const context&, typename memory::pointer*, std::size_t*, module, const char* name);
///     static result allow_shared(const context&, function, int bytes);  // opt into dynamic shared memory
///     static result launch(const context&, function, const launch_grid&, const block_dims&, stream, void** params);

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/backend/module_view.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/gpu/rtc_compile.hpp>

namespace cotune::gpu {

/// The kernel attributes `load_kernel` reads.
enum class kernel_attribute { registers, static_shared_bytes, local_bytes, max_threads_per_block };

/// A loaded module, unloaded when the last kernel that uses it goes (none for a function the program's
/// build compiled: its runtime owns the module).
template <class K>
struct loaded_module {
  const typename K::context* context;
  typename K::module module;
  std::string kernel_name;
  std::string config_text;
  /// Dynamic shared memory the kernel may use now (raised by opting in, never lowered).
  std::atomic<int> dynamic_shared_allowed{0};
  std::mutex opt_in_mutex; ///< serialises opting in, so the attribute only grows

  loaded_module(const typename K::context& ctx, typename K::module m, std::string name, std::string cfg)
      : context(&ctx), module(m), kernel_name(std::move(name)), config_text(std::move(cfg)) {}
  loaded_module(const loaded_module&) = delete;
  loaded_module& operator=(const loaded_module&) = delete;
  ~loaded_module() {
    if (module) K::unload(*context, module); // errors ignored: a lost context took the module with it
  }
};

/// A loaded kernel, bound to one device. Copies share the module.
template <class K>
struct loaded_kernel {
  std::shared_ptr<loaded_module<K>> module;
  typename K::function handle{};
  const typename K::context* context = nullptr;
  unsigned threads_per_block = 0;
  block_dims block{};                  ///< the config's block shape
  int kernel_max_threads = 0;          ///< the kernel's own limit (registers, __launch_bounds__)
  launch_limits limits{};              ///< the device's, to name the dimension when a launch is refused
  int registers = 0;                   ///< per thread
  int static_shared_bytes = 0;
  int local_bytes = 0;                 ///< per thread (spills and stack)
  std::int64_t max_dynamic_shared = 0; ///< the (opt-in) limit minus static shared memory
};

/// What `load_kernel` checks a kernel against, from the device's description.
struct kernel_device {
  std::string name;                                    ///< as the backend's device_name says it
  int warp_size = 32;
  device_resources resources{}; ///< threads, registers, the shared memory limit (load_kernel names it as K does)
  std::int64_t shared_without_opt_in = 0;              ///< dynamic shared memory usable before opting in
  launch_limits limits{};
};

/// Binds `handle`, a function of module `module` (null for a function the program's own build
/// compiled, whose module the runtime owns), of kernel `k` under `c` on `ctx`'s device `d`: reads its
/// resources and checks them before any launch. Throws out_of_resources naming the resource,
/// launch_error otherwise.
template <class K>
[[nodiscard]] loaded_kernel<K> bind_kernel(const typename K::context& ctx, typename K::module mod,
                                           typename K::function handle, const kernel_source& k, const config& c,
                                           const kernel_device& d) {
  ctx.make_current();
  const std::string what = fmt::format("loading kernel '{}' with config {{{}}}", k.name, c.text());
  auto module = std::make_shared<loaded_module<K>>(ctx, mod, k.name, c.text());
  loaded_kernel<K> f;
  f.module = module;
  f.context = &ctx;
  f.handle = handle;
  auto attribute = [&](kernel_attribute a, std::string_view name) {
    int v = 0;
    ctx.check(K::attribute(ctx, &v, a, f.handle), fmt::format("{}: {}({})", what, K::attribute_call, name));
    return v;
  };
  f.registers = attribute(kernel_attribute::registers, "NUM_REGS");
  f.static_shared_bytes = attribute(kernel_attribute::static_shared_bytes, "SHARED_SIZE_BYTES");
  f.local_bytes = attribute(kernel_attribute::local_bytes, "LOCAL_SIZE_BYTES");
  f.kernel_max_threads = attribute(kernel_attribute::max_threads_per_block, "MAX_THREADS_PER_BLOCK");
  const int threads = c.launch().threads(d.warp_size);
  f.block = c.launch().block_shape(d.warp_size);
  f.limits = d.limits;
  // The kernel's own limit also counts register allocation granularity and __launch_bounds__.
  device_resources resources = d.resources;
  resources.shared_name = K::shared_name;
  check_loaded_kernel(K::backend, c, {threads, f.registers, f.kernel_max_threads, f.static_shared_bytes}, resources,
                      f.block, f.limits);
  f.threads_per_block = static_cast<unsigned>(threads);
  f.max_dynamic_shared = d.resources.max_static_shared - f.static_shared_bytes;
  module->dynamic_shared_allowed.store(
      static_cast<int>(std::max<std::int64_t>(0, d.shared_without_opt_in - f.static_shared_bytes)),
      std::memory_order_relaxed);
  return f;
}

/// Loads `image` (entry `symbol`; `image_text` says what it is, for an error) of kernel `k` under `c`
/// on `ctx`'s device `d`, reads its resources and checks them before any launch (`bind_kernel`).
/// Throws out_of_resources naming the resource, launch_error otherwise.
template <class K>
[[nodiscard]] loaded_kernel<K> load_kernel(const typename K::context& ctx, const std::string& image,
                                           const std::string& symbol, std::string_view image_text,
                                           const kernel_source& k, const config& c, const kernel_device& d) {
  ctx.make_current();
  const std::string what = fmt::format("loading kernel '{}' with config {{{}}}", k.name, c.text());
  typename K::module mod{};
  if (auto r = K::load(ctx, image, &mod); !K::ok(r)) {
    if (K::sticky(r)) ctx.check(r, fmt::format("{}: {} on {} ({})", K::backend, what, d.name, image_text));
    throw launch_error(fmt::format("{}: {} on {} failed: {} ({})", K::backend, what, d.name,
                                   ctx.library().error_text(r), image_text));
  }
  typename K::function handle{};
  if (auto r = K::entry(ctx, &handle, mod, symbol.c_str()); !K::ok(r)) {
    K::unload(ctx, mod);
    ctx.check(r, fmt::format("{}: {}('{}')", what, K::entry_call, symbol));
  }
  return bind_kernel<K>(ctx, mod, handle, k, c, d);
}

/// Refuses `bytes` of dynamic shared memory beyond what `f` can have (its static shared memory counts
/// against the device's opt-in limit): out_of_resources with the total and the limit.
template <class K>
void check_dynamic_shared(const loaded_kernel<K>& f, unsigned bytes) {
  if (static_cast<std::int64_t>(bytes) > f.max_dynamic_shared)
    throw out_of_resources(std::string(K::shared_name), std::int64_t{f.static_shared_bytes} + bytes,
                           std::int64_t{f.static_shared_bytes} + f.max_dynamic_shared);
}

namespace detail {

template <class K>
[[noreturn]] void launch_failed(typename K::result r, const loaded_kernel<K>& f, const launch_grid& grid,
                                const block_dims& b) {
  if (!K::sticky(r)) { // name the dimension and the limit (the runtime may say only "invalid value")
    check_grid(grid, f.limits);
    check_block(b, f.limits, f.kernel_max_threads);
  }
  f.context->check(r, launch_text(f.module->kernel_name, f.module->config_text, grid, b));
  throw launch_error(fmt::format("launching kernel '{}' failed", f.module->kernel_name)); // check always throws
}

template <class K>
void allow_dynamic_shared(const loaded_kernel<K>& f, unsigned bytes) {
  check_dynamic_shared(f, bytes);
  std::lock_guard lock(f.module->opt_in_mutex);
  if (std::int64_t{bytes} <= f.module->dynamic_shared_allowed.load(std::memory_order_relaxed)) return;
  f.context->check(K::allow_shared(*f.context, f.handle, static_cast<int>(bytes)),
                   fmt::format("opting kernel '{}' into {} bytes of dynamic shared memory", f.module->kernel_name, bytes));
  f.module->dynamic_shared_allowed.store(static_cast<int>(bytes), std::memory_order_relaxed);
}

} // namespace detail

/// Launches `f` on `grid` on `stream` with the kernel parameters `params`.
template <class K>
void launch_kernel(typename K::stream stream, const loaded_kernel<K>& f, const launch_grid& grid, void** params) {
  f.context->make_current();
  if (std::int64_t{grid.shared_bytes} > f.module->dynamic_shared_allowed.load(std::memory_order_relaxed))
    detail::allow_dynamic_shared(f, grid.shared_bytes);
  const block_dims& b = grid.block ? *grid.block : f.block;
  if (auto r = K::launch(*f.context, f.handle, grid, b, stream, params); !K::ok(r)) [[unlikely]]
    detail::launch_failed(r, f, grid, b);
}

/// The global variable `name` (a `__constant__` or `__device__` array at global namespace scope) of
/// `f`'s module, or nothing when the module has none. Its copies go to the device's stream and wait
/// for it.
template <class K>
[[nodiscard]] std::optional<module_global> find_global(const loaded_kernel<K>& f, std::string_view name) {
  using memory = typename K::memory;
  using pointer = typename memory::pointer;
  const auto* ctx = f.context;
  ctx->make_current();
  pointer ptr{};
  std::size_t bytes = 0;
  const std::string symbol(name);
  const auto r = K::global(*ctx, &ptr, &bytes, f.module->module, symbol.c_str());
  if (K::not_found(r)) return std::nullopt;
  ctx->check(r, fmt::format("kernel '{}' with config {{{}}}: {}('{}')", f.module->kernel_name, f.module->config_text,
                            K::global_call, symbol));
  auto address = [](pointer p) {
    if constexpr (std::is_pointer_v<pointer>) return reinterpret_cast<std::uintptr_t>(p);
    else return static_cast<std::uintptr_t>(p);
  };
  auto from_address = [](std::uintptr_t a) {
    if constexpr (std::is_pointer_v<pointer>) return reinterpret_cast<pointer>(a);
    else return static_cast<pointer>(a);
  };
  return module_global{
      address(ptr), bytes,
      [ctx, from_address](std::uintptr_t to, const void* from, std::size_t n) {
        memory::upload(*ctx, from_address(to), from, n);
      },
      [ctx, from_address](void* to, std::uintptr_t from, std::size_t n) {
        memory::download(*ctx, to, from_address(from), n);
      }};
}

} // namespace cotune::gpu
