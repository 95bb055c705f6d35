#pragma once
/// \file `cotune::dlpack::device_tensor<R, Rule, T>`: a DLPack tensor in one GPU's memory as a buffer
/// argument, over a runtime's memory calls `R` (gpu/device_memory.hpp), as a `gpu::device_span<R, T>`
/// would be: its element type and extent enter the tuning key, a writable one can be zeroed,
/// snapshotted and restored on the device (on cotune's stream), a measurement can run in an isolation
/// worker (its memory goes there as an IPC handle), and the kernel receives its device address.
/// `Rule` names the DLPack device types it accepts. Each runtime names it: `dlpack::cuda_tensor<T>`
/// (dlpack/cuda_tensor.hpp), `dlpack::hip_tensor<T>` (dlpack/hip_tensor.hpp).
///
/// Unlike a device span it holds no context: it names its device by DLPack's `device_id` (the
/// runtime's device index), and the tuner refuses it on a kernel that runs on another device.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <dlpack/dlpack.h>
#include <fmt/core.h>

#include <cotune/core/buffer.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/dlpack/host_tensor.hpp>
#include <cotune/dlpack/tensor_facts.hpp>
#include <cotune/gpu/device_memory.hpp>

namespace cotune::dlpack {

/// A DLPack tensor in the memory of one device of runtime `R` (see the file comment). A view: the
/// tensor's memory must outlive the calls and tunings that use it.
template <class R, const device_rule& Rule, class T = void>
  requires gpu::DeviceMemoryRuntime<R>
class device_tensor : public detail::element_of<T> {
public:
  using runtime = R;
  using pointer = typename R::pointer;
  /// A device-side copy of the bytes, made by `snapshot()`.
  using snapshot_type = gpu::device_buffer<R, std::byte>;

  /// Views `t` (checked now, reported when a tuned call names it: see check_argument).
  device_tensor(const DLTensor& t) : facts_(inspect(t, Rule, expected)) {} // NOLINT(google-explicit-constructor)
  /// Views a managed tensor's `dl_tensor` (its deleter stays the caller's to call).
  device_tensor(const DLManagedTensor* m) // NOLINT(google-explicit-constructor)
      : facts_(m ? inspect(m->dl_tensor, Rule, expected) : null_tensor()) {}

  /// The device address of the first element (`data + byte_offset`).
  [[nodiscard]] pointer data() const noexcept { return gpu::detail::address_from<pointer>(facts_.data); }
  [[nodiscard]] std::size_t size() const noexcept { return facts_.count; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return facts_.size_bytes(); }
  [[nodiscard]] std::string_view element_type_name() const noexcept { return facts_.type_name; }
  [[nodiscard]] DLDevice device() const noexcept { return facts_.device; }
  /// The runtime's index of the tensor's device (DLPack's device_id).
  [[nodiscard]] int device_ordinal() const noexcept { return facts_.device.device_id; }
  /// Throws the tensor_error naming argument `position` (`name`) of `kernel` if the tensor cannot be it.
  void check_argument(std::string_view kernel, std::size_t position, std::string_view name) const {
    if (facts_.problem != tensor_facts::fault::none) [[unlikely]]
      throw_fault(facts_, Rule, expected, kernel, position, name);
  }

  /// Sets every byte to 0 (queued on the device's cotune stream; not for const elements).
  void zero() const
    requires(!std::is_const_v<T>)
  {
    if (size_bytes()) R::zero(context(), data(), size_bytes());
  }
  /// Sets every whole 32-bit word to 0xFFFFFFFF before a verification run (as device_span::poison).
  void poison() const
    requires(!std::is_const_v<T>)
  {
    if (size_bytes() >= 4 && gpu::detail::aligned_to_4(data()) && facts_.type_name != "bool")
      R::fill32(context(), data(), 0xFFFFFFFFu, size_bytes() / 4);
  }
  /// A device-side copy of the contents (queued on the device's cotune stream).
  [[nodiscard]] snapshot_type snapshot() const {
    if (!size_bytes()) return {};
    snapshot_type copy(context(), size_bytes());
    R::copy(context(), copy.data(), data(), size_bytes());
    return copy;
  }
  /// Puts back what `snapshot()` copied (queued on the device's cotune stream; not for const elements).
  void restore(const snapshot_type& s) const
    requires(!std::is_const_v<T>)
  {
    if (s.size() != size_bytes())
      throw error(fmt::format("device_tensor::restore: the snapshot holds {} bytes, the tensor {}", s.size(), size_bytes()));
    if (size_bytes()) R::copy(context(), data(), s.data(), size_bytes());
  }
  /// What a kernel receives: the device address (declare the parameter as `T*`).
  [[nodiscard]] pointer kernel_arg() const noexcept { return data(); }

private:
  static constexpr expected_dtype expected = detail::expected_of<std::remove_cv_t<T>>();
  [[nodiscard]] const typename R::context& context() const { return R::context_of(device_ordinal()); }

  tensor_facts facts_;
};

} // namespace cotune::dlpack
