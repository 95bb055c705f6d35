#pragma once
/// \file `cotune::dlpack::tensor_facts`: what a `DLTensor` is as a kernel argument (its data address,
/// element count and type, its device), and what is wrong with it: found when a tensor view wraps it,
/// reported when a tuned call passes it, so that the error can name the argument.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <dlpack/dlpack.h>

#include <cotune/core/errors.hpp>

namespace cotune::dlpack {

/// A tensor that cannot be the argument it was passed as: on another device than the parameter's, of
/// another element type, not compact, vectorised, or without data. The message names the argument,
/// what was expected, what was found, and what to do.
class tensor_error : public error {
public:
  using error::error;
};

/// Where a kind of tensor parameter takes its memory from: up to two DLPack device types, and the words
/// for messages.
struct device_rule {
  std::string_view memory;      ///< "CUDA device memory", "host memory"
  DLDeviceType first;           ///< kDLCUDA, kDLCPU, ...
  DLDeviceType second;          ///< a second accepted type (kDLCUDAManaged), else `first` again
  std::string_view move_hint;   ///< how a framework moves a tensor there ("x.cuda() in PyTorch")
  std::string_view parameter;   ///< the parameter type that takes it ("dlpack::cuda_tensor")
  [[nodiscard]] constexpr bool accepts(DLDeviceType t) const noexcept { return t == first || t == second; }
};

/// The tensor parameter's element type, when its C++ type names one (`cuda_tensor<float>`).
struct expected_dtype {
  bool any = true;           ///< an untyped parameter (`cuda_tensor<>`): every type cotune names
  DLDataType type{};         ///< else this one
  std::string_view name;     ///< cotune's name of `type` ("float32")
};

/// What a DLTensor is as a buffer argument, and what (if anything) makes it unusable.
struct tensor_facts {
  /// What is wrong with a tensor, checked in this order.
  enum class fault : std::uint8_t { none, device, lanes, dtype, null_data, strides };

  void* data = nullptr;          ///< `data + byte_offset`: what the kernel receives
  std::size_t count = 0;         ///< elements: the product of the shape (1 for a 0-d tensor)
  std::size_t element_bytes = 0; ///< bits / 8
  std::string_view type_name;    ///< cotune's name of its element type ("float32")
  DLDevice device{kDLCPU, 0};
  fault problem = fault::none;
  std::string detail;            ///< what was found, for the message (set only when `problem` is set)

  [[nodiscard]] std::size_t size_bytes() const noexcept { return count * element_bytes; }
};

/// Reads `t` as a parameter of `rule`'s memory and element type `expected` would take it. Never throws
/// for a bad tensor: the fault is kept for `throw_fault`, which runs when the call names the argument.
[[nodiscard]] COTUNE_DECL tensor_facts inspect(const DLTensor& t, const device_rule& rule, const expected_dtype& expected);

/// The facts of a null `DLManagedTensor*`: a null_data fault.
[[nodiscard]] COTUNE_DECL tensor_facts null_tensor();

/// Throws the tensor_error for `facts.problem`: "autotuner for 'kernel': argument 1 ('y'): ...".
[[noreturn]] COTUNE_DECL void throw_fault(const tensor_facts& facts, const device_rule& rule,
                                          const expected_dtype& expected, std::string_view kernel,
                                          std::size_t position, std::string_view name);

/// A DLPack device as text: "kDLCUDA:1", "kDLCPU:0".
[[nodiscard]] COTUNE_DECL std::string device_text(DLDevice d);

} // namespace cotune::dlpack

#if COTUNE_HEADER_ONLY
#include <cotune/dlpack/tensor_facts.ipp>
#endif
