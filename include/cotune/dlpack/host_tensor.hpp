#pragma once
/// \file `cotune::dlpack::host_tensor<T>`: a DLPack tensor in host memory (kDLCPU) as a host kernel's
/// buffer argument, as a `host_span<T>` would be: its element type and extent enter the tuning key, a
/// writable one can be zeroed, snapshotted and restored, and the kernel receives its data pointer.
///
///     using signature = void(dlpack::host_tensor<const float>, dlpack::host_tensor<float>, int);
///     tuner(x->dl_tensor, y->dl_tensor, n);   // DLTensor& or DLManagedTensor*, from any framework
///
/// `T` is the element type the kernel's parameter declares (a tensor of another dtype is refused), or
/// `void` (the default) for any type cotune names, whose name then enters the key at run time.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include <dlpack/dlpack.h>
#include <fmt/core.h>

#include <cotune/core/buffer.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/dlpack/dtype.hpp>
#include <cotune/dlpack/tensor_facts.hpp>

namespace cotune::dlpack {

namespace detail {
/// The element type a tensor parameter of `T` declares (none for `void`).
template <class T>
[[nodiscard]] constexpr expected_dtype expected_of() noexcept {
  if constexpr (std::is_void_v<T>) return {};
  else return {.any = false, .type = dtype_of<T>, .name = cotune::element_type_name<T>()};
}
/// `element_type` for a typed tensor (its key word is then computed at compile time), nothing for an
/// untyped one (whose name enters the key at run time).
template <class T>
struct element_of {
  using element_type = T;
};
template <class T>
  requires std::is_void_v<T>
struct element_of<T> {};
} // namespace detail

/// Host memory: kDLCPU.
inline constexpr device_rule host_memory{"host memory", kDLCPU, kDLCPU, "x.cpu() in PyTorch, numpy.asarray(x)",
                                         "dlpack::host_tensor"};

/// A DLPack tensor in host memory as a buffer argument (see the file comment). A view: the tensor's
/// memory must outlive the calls that use it.
template <class T = void>
class host_tensor : public detail::element_of<T> {
public:
  /// Elements as the kernel sees them: `T*`, or `void*` for an untyped tensor.
  using pointer = T*;
  using snapshot_type = std::vector<std::byte>;

  /// Views `t` (checked now, reported when a tuned call names it: see check_argument).
  host_tensor(const DLTensor& t) : facts_(inspect(t, host_memory, expected)) {} // NOLINT(google-explicit-constructor)
  /// Views a managed tensor's `dl_tensor` (its deleter stays the caller's to call).
  host_tensor(const DLManagedTensor* m) // NOLINT(google-explicit-constructor)
      : facts_(m ? inspect(m->dl_tensor, host_memory, expected) : null_tensor()) {}

  [[nodiscard]] pointer data() const noexcept { return static_cast<pointer>(facts_.data); }
  [[nodiscard]] std::size_t size() const noexcept { return facts_.count; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return facts_.size_bytes(); }
  [[nodiscard]] std::string_view element_type_name() const noexcept { return facts_.type_name; }
  [[nodiscard]] DLDevice device() const noexcept { return facts_.device; }
  /// Throws the tensor_error naming argument `position` (`name`) of `kernel` if the tensor cannot be it.
  void check_argument(std::string_view kernel, std::size_t position, std::string_view name) const {
    if (facts_.problem != tensor_facts::fault::none) [[unlikely]]
      throw_fault(facts_, host_memory, expected, kernel, position, name);
  }

  /// Zeroes the elements (not for a tensor of const elements: that does not compile).
  void zero() const
    requires(!std::is_const_v<T>)
  {
    if (size_bytes()) std::memset(facts_.data, 0, size_bytes());
  }
  /// Sets every byte to 0xFF before a verification run (see tune_options::verify); bool tensors stay.
  void poison() const
    requires(!std::is_const_v<T>)
  {
    if (size_bytes() && facts_.type_name != "bool") std::memset(facts_.data, 0xFF, size_bytes());
  }
  [[nodiscard]] snapshot_type snapshot() const {
    const auto* p = static_cast<const std::byte*>(facts_.data);
    return p ? snapshot_type(p, p + size_bytes()) : snapshot_type{};
  }
  void restore(const snapshot_type& s) const
    requires(!std::is_const_v<T>)
  {
    if (s.size() != size_bytes())
      throw error(fmt::format("host_tensor::restore: the snapshot holds {} bytes, the tensor {}", s.size(), size_bytes()));
    if (!s.empty()) std::memcpy(facts_.data, s.data(), s.size());
  }
  /// What a host kernel receives.
  [[nodiscard]] pointer kernel_arg() const noexcept { return data(); }

private:
  static constexpr expected_dtype expected = detail::expected_of<std::remove_cv_t<T>>();
  tensor_facts facts_;
};

static_assert(WritableBuffer<host_tensor<float>> && WritableBuffer<host_tensor<>>);
static_assert(Buffer<host_tensor<const float>> && !WritableBuffer<host_tensor<const float>>);

} // namespace cotune::dlpack
