#pragma once
/// \file Bodies of dlpack/tensor_facts.hpp.

#include <cotune/dlpack/tensor_facts.hpp>

#include <cstdint>
#include <string>

#include <fmt/core.h>

#include <cotune/dlpack/dtype.hpp>

namespace cotune::dlpack {

namespace detail {
[[nodiscard]] inline std::string_view device_type_name(int t) noexcept {
  switch (t) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    default: return "";
  }
}

/// "[64, 64]" for `n` values (none for a null array).
[[nodiscard]] inline std::string list_text(const std::int64_t* v, int n) {
  if (!v) return "(none)";
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += fmt::format(COTUNE_FMT("{}{}"), i ? ", " : "", v[i]);
  return out + "]";
}
} // namespace detail

COTUNE_DECL tensor_facts null_tensor() {
  tensor_facts f;
  f.problem = tensor_facts::fault::null_data;
  f.detail = "the DLManagedTensor pointer is null";
  return f;
}

COTUNE_DECL std::string device_text(DLDevice d) {
  const auto name = detail::device_type_name(d.device_type);
  return name.empty() ? fmt::format(COTUNE_FMT("device type {}:{}"), static_cast<int>(d.device_type), d.device_id)
                      : fmt::format(COTUNE_FMT("{}:{}"), name, d.device_id);
}

COTUNE_DECL tensor_facts inspect(const DLTensor& t, const device_rule& rule, const expected_dtype& expected) {
  using fault = tensor_facts::fault;
  tensor_facts f;
  f.device = t.device;
  f.type_name = dtype_name(t.dtype);
  f.element_bytes = t.dtype.bits / 8u;
  f.count = 1;
  for (int d = 0; d < t.ndim; ++d) f.count *= t.shape && t.shape[d] > 0 ? static_cast<std::size_t>(t.shape[d]) : 0u;
  f.data = t.data ? static_cast<void*>(static_cast<char*>(t.data) + t.byte_offset) : nullptr;
  auto fail = [&](fault p, std::string detail) {
    f.problem = p;
    f.detail = std::move(detail);
    return f;
  };
  if (!rule.accepts(t.device.device_type)) return fail(fault::device, device_text(t.device));
  if (t.dtype.lanes != 1) return fail(fault::lanes, fmt::format(COTUNE_FMT("{}"), t.dtype.lanes));
  if (f.type_name.empty())
    return fail(fault::dtype, fmt::format(COTUNE_FMT("DLPack type code {} with {} bits"), t.dtype.code, t.dtype.bits));
  if (!expected.any && !same_dtype(t.dtype, expected.type)) return fail(fault::dtype, std::string(f.type_name));
  if (f.count == 0) return f; // an empty tensor: nothing to read, and its strides do not matter
  if (!t.data)
    return fail(fault::null_data,
                fmt::format(COTUNE_FMT("its data pointer is null, but its shape holds {} elements"), f.count));
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape))
    return fail(fault::strides, fmt::format(COTUNE_FMT("ndim {} without a shape"), t.ndim));
  if (t.strides) {
    // Compact row-major, in elements; a dimension of extent 1 may have any stride (PyTorch gives them
    // arbitrary ones), since it never moves the index.
    std::int64_t want = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      if (t.shape[d] != 1 && t.strides[d] != want)
        return fail(
            fault::strides,
            fmt::format(COTUNE_FMT("shape {}, strides {} (in elements): dimension {} has stride {} where compact "
                                   "row-major data has {}"),
                        detail::list_text(t.shape, t.ndim), detail::list_text(t.strides, t.ndim), d, t.strides[d],
                        want));
      want *= t.shape[d];
    }
  }
  return f;
}

COTUNE_DECL void throw_fault(const tensor_facts& facts, const device_rule& rule, const expected_dtype& expected,
                             std::string_view kernel, std::size_t position, std::string_view name) {
  using fault = tensor_facts::fault;
  const std::string head =
      fmt::format(COTUNE_FMT("autotuner for '{}': argument {} ('{}'), a DLPack tensor: "), kernel, position, name);
  switch (facts.problem) {
    case fault::device: {
      const std::string accepted = rule.second == rule.first
                                       ? std::string(detail::device_type_name(rule.first))
                                       : fmt::format(COTUNE_FMT("{} or {}"), detail::device_type_name(rule.first),
                                                     detail::device_type_name(rule.second));
      throw tensor_error(fmt::format(
          COTUNE_FMT(
              "{}it is on {}, but the parameter takes {} ({}); move the tensor there ({}) or declare the parameter "
              "as the tensor type of its memory (dlpack::host_tensor, dlpack::cuda_tensor, dlpack::hip_tensor)"),
          head, facts.detail, rule.memory, accepted, rule.move_hint));
    }
    case fault::lanes:
      throw tensor_error(
          fmt::format(COTUNE_FMT("{}its dtype has {} lanes (a vector type), and cotune takes tensors of scalars "
                                 "(lanes 1); view it as a tensor of its scalar type"),
                      head, facts.detail));
    case fault::dtype:
      if (facts.type_name.empty())
        throw tensor_error(
            fmt::format(COTUNE_FMT("{}its dtype ({}) has no cotune element type (cotune knows float16/32/64, "
                                   "bfloat16, int8-64, uint8-64, bool, complex64/128); convert the tensor"),
                        head, facts.detail));
      throw tensor_error(fmt::format(
          COTUNE_FMT("{}its elements are {}, but the kernel's parameter declares {}; convert the "
                     "tensor (x.to(torch.{}) in PyTorch, x.astype('{}') in CuPy and JAX) or declare "
                     "the parameter with element type {} (or untyped: {}<>)"),
          head, facts.type_name, expected.name, expected.name, expected.name, facts.type_name, rule.parameter));
    case fault::null_data:
      throw tensor_error(fmt::format(COTUNE_FMT("{}{}; pass a tensor whose memory is allocated"), head, facts.detail));
    case fault::strides:
      throw tensor_error(
          fmt::format(COTUNE_FMT("{}it is not contiguous: {}; the kernel receives one pointer to compact "
                                 "row-major data: make the tensor contiguous first (x.contiguous() in PyTorch, "
                                 "cupy.ascontiguousarray(x), jnp.asarray(x) copies)"),
                      head, facts.detail));
    case fault::none: break;
  }
  throw tensor_error(head + "no fault was recorded (a bug in cotune)");
}

} // namespace cotune::dlpack
