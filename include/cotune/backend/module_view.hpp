#pragma once
/// \file `cotune::module_view`: a loaded module as `tune_options::on_load` sees it (or as a program
/// that launches a kernel itself builds it from its backend and the loaded function), `global_span<T>`,
/// a typed view of one of its global variables (a `__constant__` filter, a lookup table), so that their
/// contents are written once per loaded binary, before it first runs, and `module_constant`, such data
/// given to a tuner as data (`tune_options::constants`) instead of through a hook:
///
///     .on_load = [&](const cotune::module_view& m) {
///       m.global<float>("filter").copy_from(filter); // __constant__ float filter[25];
///     }
///     .constants = {{"filter", std::span<const float>(filter)}}, // the same, without a hook
///
///     cotune::module_view m(backend, fn); // a raw launch: fn = backend.load(...)
///     m.global<float>("filter").copy_from(filter);

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

/// Where a module's global variable lies and how to copy into and out of it: what a backend's
/// `find_global` (cotune::FindsModuleGlobals) gives. `address` is a device address for a GPU backend
/// (a CUdeviceptr), a host pointer for the host backend.
struct module_global {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  /// Copies `n` bytes of host memory to `to` (waiting until the copy is done).
  std::function<void(std::uintptr_t to, const void* from, std::size_t n)> write;
  /// Copies `n` bytes at `from` to host memory (waiting until the copy is done).
  std::function<void(void* to, std::uintptr_t from, std::size_t n)> read;
};

/// A typed view of a module's global variable: `size()` elements of T in the module's memory.
template <class T>
class global_span {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "a module global is viewed as mutable, trivially copyable elements");

public:
  using element_type = T;
  using value_type = T;

  /// Views `g`, named `name` (for messages); throws cotune::error when its size is not a whole number of T.
  global_span(std::string name, module_global g) : name_(std::move(name)), global_(std::move(g)) {
    if (global_.bytes % sizeof(T) != 0)
      throw error(fmt::format("module global '{}' holds {} bytes, not a whole number of {}-byte elements; view it "
                              "with global<U>() for its declared element type U",
                              name_, global_.bytes, sizeof(T)));
    size_ = global_.bytes / sizeof(T);
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  /// The device address (GPU backends) or host address (host backend) of the first element.
  [[nodiscard]] std::uintptr_t address() const noexcept { return global_.address + offset_ * sizeof(T); }

  /// Elements [offset, offset + count).
  [[nodiscard]] global_span subspan(std::size_t offset, std::size_t count) const {
    if (offset > size_ || count > size_ - offset)
      throw error(fmt::format("module global '{}': subspan({}, {}) is out of range for {} elements", name_, offset,
                              count, size_));
    global_span s = *this;
    s.offset_ = offset_ + offset;
    s.size_ = count;
    return s;
  }

  /// Copies `host` into the global (sizes must match: take a subspan to write part of it).
  void copy_from(std::span<const T> host) const {
    if (host.size() != size_)
      throw error(fmt::format("module global '{}' holds {} elements, but {} were given; give exactly {} (or write "
                              "a subspan)",
                              name_, size_, host.size(), size_));
    if (size_) global_.write(address(), host.data(), size_bytes());
  }
  /// Copies the global into `host` (sizes must match).
  void copy_to(std::span<T> host) const {
    if (host.size() != size_)
      throw error(fmt::format("module global '{}' holds {} elements, but room for {} was given", name_, size_,
                              host.size()));
    if (size_) global_.read(host.data(), address(), size_bytes());
  }
  /// The contents, copied to the host.
  [[nodiscard]] std::vector<T> to_vector() const {
    std::vector<T> out(size_);
    copy_to(out);
    return out;
  }

private:
  std::string name_;
  module_global global_;
  std::size_t offset_ = 0, size_ = 0;
};

/// A loaded module: a candidate's, loaded on one device and not yet run, as `tune_options::on_load`
/// receives it (it lives for the hook's call only: keep what `global` gives no longer than that), or
/// one a program loaded itself for a raw launch (built from the backend and the loaded function).
class module_view {
public:
  /// Finds a global by name, or nothing (the backend's `find_global` for the loaded function).
  using finder = std::function<std::optional<module_global>(std::string_view)>;

  module_view(const config& c, std::string kernel, std::string device, std::size_t device_index, finder find)
      : cfg_(&c), kernel_(std::move(kernel)), device_(std::move(device)), device_index_(device_index),
        find_(std::move(find)) {}

  /// The module of `fn`, loaded by `backend` (a backend that finds module globals: CUDA, HIP, host),
  /// for a program that launches it itself. `kernel` names it in messages; the config is empty and the
  /// device unnamed. The view holds `backend` by reference (it must outlive the view) and a copy of `fn`.
  template <class Backend>
    requires requires(const Backend& b, const typename Backend::function& f, std::string_view n) {
      { b.find_global(f, n) } -> std::same_as<std::optional<module_global>>;
    }
  module_view(const Backend& backend, typename Backend::function fn, std::string kernel = "")
      : cfg_(&no_config()), kernel_(std::move(kernel)), device_("its device"), device_index_(0),
        find_([&backend, fn = std::move(fn)](std::string_view name) { return backend.find_global(fn, name); }) {}

  /// The candidate's config (constant data may depend on its parameters); empty for a raw launch's view.
  [[nodiscard]] const config& cfg() const noexcept { return *cfg_; }
  /// The kernel's name.
  [[nodiscard]] const std::string& kernel() const noexcept { return kernel_; }
  /// The device the module is loaded on: its name, and its index in the backend's devices().
  [[nodiscard]] const std::string& device_name() const noexcept { return device_; }
  [[nodiscard]] std::size_t device_index() const noexcept { return device_index_; }

  /// The global variable `name` of the module as elements of T. Throws cotune::error naming the kernel,
  /// the config and the fix when the module has no such global.
  template <class T>
  [[nodiscard]] global_span<T> global(std::string_view name) const {
    auto g = find_(name);
    if (!g)
      throw error(fmt::format("kernel '{}' with config {{{}}} on {} has no global variable '{}'; declare it "
                              "at global namespace scope, not static (e.g. `__constant__ float {}[25];` in CUDA, "
                              "`float {}[25];` on the host), and use it in the kernel so that the compiler keeps it",
                              kernel_, cfg_->text(), device_, name, name, name));
    return global_span<T>(std::string(name), *std::move(g));
  }

private:
  static const config& no_config() {
    static const config none;
    return none;
  }

  const config* cfg_;
  std::string kernel_, device_;
  std::size_t device_index_;
  finder find_;
};

/// Data for a module's global variable, written into it at every load of a candidate, before the
/// kernel first runs and before on_load (`tune_options::constants`): Kernel Tuner's `cmem_args`. The
/// data is copied when the constant is made. Its size must equal the global's.
///
///     .constants = {{"filter", std::span<const float>(filter)}, {"scale", 2.0f}},
struct module_constant {
  /// The global's name, as declared in the kernel (`__constant__ float filter[25];`).
  std::string name;
  /// The bytes written into it.
  std::vector<std::byte> bytes;
  /// The size of one element of the data given (for messages).
  std::size_t element_size = 1;

  /// A contiguous range of trivially copyable elements (a std::span, std::vector or std::array).
  template <std::ranges::contiguous_range R>
    requires std::ranges::sized_range<R> && std::is_trivially_copyable_v<std::ranges::range_value_t<R>>
  module_constant(std::string global, const R& data)
      : name(std::move(global)), bytes(std::ranges::size(data) * sizeof(std::ranges::range_value_t<R>)),
        element_size(sizeof(std::ranges::range_value_t<R>)) {
    if (!bytes.empty()) std::memcpy(bytes.data(), std::ranges::data(data), bytes.size());
  }

  /// One trivially copyable value (a scalar or a struct).
  template <class T>
    requires(!std::ranges::range<T> && !std::is_pointer_v<T> && std::is_trivially_copyable_v<T>)
  module_constant(std::string global, const T& value)
      : name(std::move(global)), bytes(sizeof(T)), element_size(sizeof(T)) {
    std::memcpy(bytes.data(), &value, sizeof(T));
  }

  /// Writes the data into the module's global of this name; throws cotune::error naming both sizes
  /// when they differ (or the fix when the module has no such global).
  void write_to(const module_view& m) const;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/backend/module_view.ipp>
#endif
