#pragma once
/// \file `cotune::gpu::compiled_kernels<Signature, Runtime>`: kernels the program's own build compiled
/// (nvcc or hipcc template instantiations), one per config, as candidates for a tuner. This header is
/// what a `.cu` or `.hip` file includes: it uses the standard library only, because nvcc's front end
/// cannot parse the rest of cotune (fmt's compile-time format strings, Asio's coroutines). The tuner
/// lives in a C++ file that includes <cotune/cuda/compiled_backend.hpp> (or hip/), and gets the table
/// from a function the `.cu` file defines:
///
///     // kernels.cu
///     cotune::cuda::compiled_kernels<void(const float*, float*, int)> scale_kernels() {
///       return cotune::cuda::compiled_kernels<void(const float*, float*, int)>{}
///           .add({{"BLOCK", 256}, {"ITEMS", 4}}, scale<256, 4>)
///           .add_grid([](auto block, auto items) { return scale<block, items>; },
///                     cotune::gpu::axis<64, 128>{"BLOCK"}, cotune::gpu::axis<1, 2, 8>{"ITEMS"});
///     }
///
/// `add_grid` instantiates a template over every point of its axes (their Cartesian product): the
/// callable receives one `std::integral_constant` per axis, in order, and returns that point's kernel;
/// the point's config names each axis with its value.
///
/// Each entry keeps the kernel's host address and how to find its device function from it
/// (`Runtime::lookup`, cudaGetFuncBySymbol for CUDA), taken where the kernels are compiled: that call
/// needs the runtime library the kernels' file links, which the tuner's own file does not.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cotune::gpu {

/// One parameter of a compiled kernel's config: an integer, a boolean, a floating-point number or a string.
struct compiled_param {
  enum class kind : std::uint8_t { integer, boolean, real, text };
  std::string name;
  kind type = kind::integer;
  std::int64_t integer = 0;
  double real = 0;
  std::string text{};

  compiled_param(const char* n, int v) : name(n), integer(v) {}
  compiled_param(const char* n, long v) : name(n), integer(v) {}
  compiled_param(const char* n, long long v) : name(n), integer(v) {}
  compiled_param(const char* n, unsigned v) : name(n), integer(v) {}
  compiled_param(const char* n, bool v) : name(n), type(kind::boolean), integer(v ? 1 : 0) {}
  compiled_param(const char* n, double v) : name(n), type(kind::real), real(v) {}
  compiled_param(const char* n, const char* v) : name(n), type(kind::text), text(v) {}
};

/// Finds the device function of a kernel's host address (`function` gets a CUfunction, hipFunction_t
/// or, where the runtime launches by address, the address itself); 0 on success, else the runtime's
/// error code.
using function_lookup = int (*)(void** function, const void* host_address);

/// One compiled candidate: its config's parameters, the kernel's host address and how to find its
/// device function.
struct compiled_entry {
  std::vector<compiled_param> params;
  const void* host_address = nullptr;
  function_lookup lookup = nullptr;
};

/// One axis of `compiled_kernels::add_grid`: a parameter's name and its values, each of which is a
/// template argument of the kernel.
template <auto... Values>
struct axis {
  static_assert(sizeof...(Values) > 0, "an axis needs at least one value");
  static_assert((std::is_integral_v<decltype(Values)> && ...),
                "an axis's values are integers or booleans (they become template arguments and config values)");
  const char* name;
};

namespace detail {

template <class T>
[[nodiscard]] compiled_param axis_param(const char* name, T v) {
  if constexpr (std::is_same_v<T, bool>) return compiled_param(name, v);
  else return compiled_param(name, static_cast<long long>(v));
}

/// Calls `point(names, constants...)` for every point of `axes`, the first axis varying slowest.
template <class Point, class... Fixed>
void for_each_point(Point& point, std::vector<compiled_param>& params, std::tuple<Fixed...> fixed) {
  std::apply([&](auto... c) { point(params, c...); }, fixed);
}
template <class Point, class... Fixed, auto... Values, class... Rest>
void for_each_point(Point& point, std::vector<compiled_param>& params, std::tuple<Fixed...> fixed,
                    const axis<Values...>& first, const Rest&... rest) {
  auto one = [&](auto constant) {
    params.push_back(axis_param(first.name, constant.value));
    for_each_point(point, params, std::tuple_cat(fixed, std::tuple<decltype(constant)>{}), rest...);
    params.pop_back();
  };
  (one(std::integral_constant<decltype(Values), Values>{}), ...);
}

} // namespace detail

/// Kernels of signature `Signature` the build compiled, one per config (see the file's comment).
/// `Runtime` names how a device function is found (cuda/compiled_kernels.hpp, hip/compiled_kernels.hpp).
template <class Signature, class Runtime>
class compiled_kernels {
  static_assert(std::is_same_v<Signature, void>,
                "compiled_kernels' first argument is the kernel's signature, void(Params...)");
};

template <class... Params, class Runtime>
class compiled_kernels<void(Params...), Runtime> {
public:
  using signature = void(Params...);
  using runtime = Runtime;

  /// Adds `kernel` (a `__global__` function of this signature) under the config `params`.
  compiled_kernels& add(std::vector<compiled_param> params, void (*kernel)(Params...)) & {
    entries_.push_back({std::move(params), reinterpret_cast<const void*>(kernel),
                        &Runtime::template lookup<void(Params...)>});
    return *this;
  }
  compiled_kernels&& add(std::vector<compiled_param> params, void (*kernel)(Params...)) && {
    add(std::move(params), kernel);
    return std::move(*this);
  }

  /// Adds `make(c...)` for every point of `axes` (their Cartesian product, the first axis varying
  /// slowest): `make` receives one `std::integral_constant` per axis and returns that point's kernel.
  template <class Make, auto... First, class... Axes>
  compiled_kernels& add_grid(Make make, const axis<First...>& first, const Axes&... axes) & {
    std::vector<compiled_param> params;
    auto point = [&](const std::vector<compiled_param>& p, auto... constants) {
      void (*kernel)(Params...) = make(constants...);
      add(p, kernel);
    };
    detail::for_each_point(point, params, std::tuple<>{}, first, axes...);
    return *this;
  }
  template <class Make, auto... First, class... Axes>
  compiled_kernels&& add_grid(Make make, const axis<First...>& first, const Axes&... axes) && {
    add_grid(std::move(make), first, axes...);
    return std::move(*this);
  }

  /// Names the parameter that is each kernel's thread count per block ("BLOCK"): the configs' launch
  /// options then say so (`launch_options::threads_per_block`), so that the kernel is launched with, and
  /// its limits are checked for, that many threads. Without it, the tuner's grid function gives the block.
  compiled_kernels& threads_from(std::string param) & {
    threads_param_ = std::move(param);
    return *this;
  }
  compiled_kernels&& threads_from(std::string param) && {
    threads_param_ = std::move(param);
    return std::move(*this);
  }
  /// The parameter `threads_from` named, or empty.
  [[nodiscard]] const std::string& threads_param() const noexcept { return threads_param_; }

  /// The candidates, in the order they were added.
  [[nodiscard]] const std::vector<compiled_entry>& entries() const noexcept { return entries_; }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

private:
  std::vector<compiled_entry> entries_;
  std::string threads_param_;
};

} // namespace cotune::gpu
