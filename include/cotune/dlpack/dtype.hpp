#pragma once
/// \file DLPack element types (`DLDataType`) under cotune's names: `dtype_name({kDLFloat, 32, 1})` is
/// "float32", the name a span of `float` puts into tuning keys, and `dtype_of<float>` the way back.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include <dlpack/dlpack.h>

#include <cotune/core/buffer.hpp>

namespace cotune::dlpack {

namespace detail {
/// One DLPack type and cotune's name for it.
struct named_dtype {
  std::uint8_t code;
  std::uint8_t bits;
  std::string_view name;
};
/// DLPack 0.8 added kDLBool (6); libdlpack-dev 0.6's header lacks it, but PyTorch exports bool tensors so.
inline constexpr std::uint8_t bool_code = 6;
/// Every type cotune names: the names of core/buffer.hpp's element_type_name and of cuda/float16.hpp.
inline constexpr std::array<named_dtype, 15> named_dtypes{{
    {kDLFloat, 32, "float32"},   {kDLFloat, 64, "float64"},   {kDLFloat, 16, "float16"},
    {kDLBfloat, 16, "bfloat16"}, {kDLInt, 8, "int8"},         {kDLInt, 16, "int16"},
    {kDLInt, 32, "int32"},       {kDLInt, 64, "int64"},       {kDLUInt, 8, "uint8"},
    {kDLUInt, 16, "uint16"},     {kDLUInt, 32, "uint32"},     {kDLUInt, 64, "uint64"},
    {bool_code, 8, "bool"},      {kDLComplex, 64, "complex64"}, {kDLComplex, 128, "complex128"},
}};
} // namespace detail

/// cotune's name for a DLPack element type ("float32", "bfloat16", "int64"), as element_type_name<T>()
/// gives it for the C++ type; empty for a type cotune has no name for, or for vectors (lanes != 1).
[[nodiscard]] constexpr std::string_view dtype_name(DLDataType t) noexcept {
  if (t.lanes != 1) return {};
  for (const auto& d : detail::named_dtypes)
    if (d.code == t.code && d.bits == t.bits) return d.name;
  return {};
}

/// The DLPack type cotune names `name` ("float32" -> {kDLFloat, 32, 1}); nothing for a name it has no
/// DLPack type for ("bytes").
[[nodiscard]] constexpr std::optional<DLDataType> dtype_named(std::string_view name) noexcept {
  for (const auto& d : detail::named_dtypes)
    if (d.name == name) return DLDataType{d.code, d.bits, 1};
  return std::nullopt;
}

/// The DLPack type of elements of type T (cv-qualifiers ignored): `dtype_of<float>` is {kDLFloat, 32, 1};
/// `cuda::float16` and `cuda::bfloat16` have theirs through their cotune_type_name.
template <class T>
  requires(dtype_named(cotune::element_type_name<T>()).has_value())
inline constexpr DLDataType dtype_of = *dtype_named(cotune::element_type_name<T>());

/// Whether two DLPack types are the same.
[[nodiscard]] constexpr bool same_dtype(DLDataType a, DLDataType b) noexcept {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

} // namespace cotune::dlpack
