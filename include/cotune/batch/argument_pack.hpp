#pragma once
/// \file `cotune::batch::argument_pack`: a kernel's argument list known only at run time (a job file's
/// buffers and scalars), as one argument the statically typed autotuner can take.
///
/// A job tunes `autotuner<void(argument_pack)>`. The pack is a `Buffer`, so the autotuner keys on its
/// element type name, which is the instance's key text in the form an application's own tuner writes
/// (`A: float32, n=4096`); its `zero`/`snapshot`/`restore` act on the arguments the job marks
/// `reset`/`restore`. A host kernel receives it as `void**` (`kernel_arg`), one slot per argument
/// pointing at the value, through an `extern "C"` trampoline compiled into the kernel's source
/// (`host_trampoline`): `extern "C" void cotune_job_entry(void** a) { saxpy(*(float**)a[0], *(int*)a[1]); }`.
/// The slots are what cuLaunchKernel takes for a CUDA kernel too. Copies share the data (the pack is a
/// view, as every cotune buffer is).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/buffer.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/value.hpp>
#include <cotune/detail/config.hpp>

namespace cotune::batch {

/// The element types a job argument can have.
enum class element_type { float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64 };

inline constexpr element_type all_element_types[] = {
    element_type::float16, element_type::float32, element_type::float64, element_type::int8,   element_type::int16,  element_type::int32,
    element_type::int64,   element_type::uint8,   element_type::uint16, element_type::uint32, element_type::uint64};

/// The name in keys and job files, as cotune::element_type_name<T>() gives it ("float32").
[[nodiscard]] constexpr std::string_view to_string(element_type t) noexcept {
  switch (t) {
  case element_type::float16: return "float16";
  case element_type::float32: return "float32";
  case element_type::float64: return "float64";
  case element_type::int8: return "int8";
  case element_type::int16: return "int16";
  case element_type::int32: return "int32";
  case element_type::int64: return "int64";
  case element_type::uint8: return "uint8";
  case element_type::uint16: return "uint16";
  case element_type::uint32: return "uint32";
  case element_type::uint64: return "uint64";
  }
  return "?";
}

[[nodiscard]] constexpr std::optional<element_type> element_type_from(std::string_view s) noexcept {
  for (auto t : all_element_types)
    if (to_string(t) == s) return t;
  return std::nullopt;
}

/// Bytes per element.
[[nodiscard]] constexpr std::size_t size_of(element_type t) noexcept {
  switch (t) {
  case element_type::int8: case element_type::uint8: return 1;
  case element_type::float16: case element_type::int16: case element_type::uint16: return 2;
  case element_type::float32: case element_type::int32: case element_type::uint32: return 4;
  default: return 8;
  }
}

/// The C type a trampoline casts to. The compilers' predefined `__INT64_TYPE__`-style macros are the
/// exact types <cstdint> names, so a kernel declared with `int64_t*` or `long*` gets its own type.
[[nodiscard]] constexpr std::string_view c_type(element_type t) noexcept {
  switch (t) {
  case element_type::float16: return "_Float16"; // GCC 12 and clang 14 on x86-64 and AArch64
  case element_type::float32: return "float";
  case element_type::float64: return "double";
  case element_type::int8: return "__INT8_TYPE__";
  case element_type::int16: return "__INT16_TYPE__";
  case element_type::int32: return "__INT32_TYPE__";
  case element_type::int64: return "__INT64_TYPE__";
  case element_type::uint8: return "__UINT8_TYPE__";
  case element_type::uint16: return "__UINT16_TYPE__";
  case element_type::uint32: return "__UINT32_TYPE__";
  case element_type::uint64: return "__UINT64_TYPE__";
  }
  return "void";
}

[[nodiscard]] constexpr bool is_floating(element_type t) noexcept {
  return t == element_type::float16 || t == element_type::float32 || t == element_type::float64;
}

/// The IEEE binary16 bits of `f`, which must be exactly representable as a normal half or zero (the
/// fills only make such values: 1, and multiples of 1/1024 in [-1, 1)).
[[nodiscard]] constexpr std::uint16_t exact_half_bits(float f) noexcept {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  if ((x & 0x7fffffffu) == 0) return sign;
  const std::uint32_t exp = ((x >> 23) & 0xffu) - 127u + 15u;
  return static_cast<std::uint16_t>(sign | (exp << 10) | ((x & 0x7fffffu) >> 13));
}
static_assert(exact_half_bits(1.0f) == 0x3c00 && exact_half_bits(-0.5f) == 0xb800 && exact_half_bits(0.0f) == 0);

/// How a buffer's elements are set before tuning. Random: floating elements uniform in [-1, 1)
/// (float16: multiples of 1/1024, exact in half precision), integers uniform in [0, 100).
enum class fill_kind { zeros, ones, random, file };

/// One argument of one problem instance, with every expression evaluated.
struct argument {
  std::string name;
  bool buffer = true;
  element_type type = element_type::float32;
  std::size_t extent = 0;       ///< buffers: elements
  fill_kind fill = fill_kind::zeros;
  std::uint64_t seed = 0;       ///< fill_kind::random
  std::filesystem::path file{}; ///< fill_kind::file: raw little-endian elements, extent * size_of(type) bytes
  value scalar{};               ///< scalars: the value (an integer or a double)
  bool key = false;             ///< part of the tuning key (buffers by extent, scalars by value)
  bool reset = false;           ///< zeroed before every benchmark run
  bool restore = false;         ///< saved before every benchmark run and restored after it
};

/// The text of the tuning key, as `kernel_arguments::key_text` writes it for an application's tuner
/// with the same argument names: `A: float32[4096], n=64` (buffers always add their element type).
[[nodiscard]] COTUNE_DECL std::string key_text(const std::vector<argument>& args);

/// The `extern "C" void cotune_job_entry(void**)` that calls `entry` with the arguments' C types;
/// appended to a host kernel's source.
[[nodiscard]] COTUNE_DECL std::string host_trampoline(std::string_view entry, const std::vector<argument>& args);

/// The autotuner's name for a job's one argument. Results carry the instance's key text alone (the pack's
/// element type name is the whole key: `element_type_name_is_key_text`); results stored before that carry
/// it as `instance: <key text>`.
inline constexpr std::string_view pack_argument_name = "instance";

/// The instance's key text from a job result's key: as is, or without the `instance: ` of results stored
/// before keys lost it (`instance: A: float32, n=64` gives `A: float32, n=64`).
[[nodiscard]] COTUNE_DECL std::string instance_key_text(std::string_view result_key);

/// The entry point every job kernel is called through.
inline constexpr std::string_view job_entry_name = "cotune_job_entry";

/// A problem instance's arguments: owns the buffers (64-byte aligned), shared between copies.
class argument_pack {
public:
  using snapshot_type = std::vector<std::string>; ///< the bytes of each restore buffer, in order
  /// The tuner's key text is the pack's key text alone, as a database and an application's tuner write it
  /// (`A: float32, n=256`), not `instance: A: float32, n=256` (tune/kernel_arguments.hpp).
  static constexpr bool element_type_name_is_key_text = true;

  argument_pack() = default;

  /// Allocates and fills every buffer; throws cotune::error naming the argument that cannot be made.
  COTUNE_DECL explicit argument_pack(std::vector<argument> args);

  [[nodiscard]] std::size_t size() const noexcept { return s_ ? s_->args.size() : 0; }
  /// The instance's key text: the autotuner keys on it (it is hashed, and printed as the key).
  [[nodiscard]] std::string_view element_type_name() const noexcept {
    return s_ ? std::string_view(s_->key_text) : std::string_view("(no arguments)");
  }
  [[nodiscard]] const std::string& key_text() const noexcept { return s_->key_text; }
  [[nodiscard]] const std::vector<argument>& arguments() const noexcept { return s_->args; }

  /// Zeroes the buffers marked `reset`.
  COTUNE_DECL void zero() const;
  /// The bytes of the buffers marked `restore`.
  [[nodiscard]] COTUNE_DECL snapshot_type snapshot() const;
  /// Writes back the bytes `snapshot` took.
  COTUNE_DECL void restore(const snapshot_type& snap) const;
  /// What a host kernel's trampoline receives: one slot per argument, pointing at its value.
  [[nodiscard]] void** kernel_arg() const noexcept { return s_ ? s_->slots.data() : nullptr; }
  /// Buffer `i`'s data (null for a scalar).
  [[nodiscard]] void* data(std::size_t i) const noexcept { return s_->pointers.at(i); }

  /// Writes buffer argument `a`'s initial contents (its fill) into `bytes` bytes at `p` (host memory),
  /// as a GPU job does before copying them up; throws cotune::error naming the argument.
  static void fill_host(const argument& a, std::byte* p, std::size_t bytes) { fill(a, p, bytes); }
  /// Scalar argument `a`'s value in its C type, in the low bytes of `*slot` (a kernel parameter).
  static void store_scalar_value(const argument& a, std::uint64_t* slot) { store_scalar(a, slot); }

private:
  struct aligned_bytes {
    struct release {
      void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte[], release> data;
    std::size_t size = 0;
    aligned_bytes() = default;
    // 64 bytes: a cache line and an AVX-512 vector, as a kernel's own allocation would be.
    explicit aligned_bytes(std::size_t n)
        : data(static_cast<std::byte*>(::operator new[](std::max<std::size_t>(n, 1), std::align_val_t{64}))), size(n) {}
  };
  struct storage {
    std::vector<argument> args;
    std::string key_text;
    std::vector<aligned_bytes> buffers;
    std::vector<void*> pointers;        ///< buffer data
    std::vector<std::uint64_t> scalars; ///< scalar values, stored in their C type
    std::vector<void*> slots;           ///< what the trampoline reads
  };

  // The bodies: argument_pack.ipp (the templates are used there alone).
  template <class Pick, class F>
  void for_each_buffer(Pick pick, F&& f) const;
  template <class T>
  static void fill_as(const argument& a, std::byte* p, std::size_t count);
  COTUNE_DECL static void fill_half(const argument& a, std::byte* p, std::size_t count);
  COTUNE_DECL static void fill(const argument& a, std::byte* p, std::size_t bytes);
  template <class T>
  static void store_as(const argument& a, std::uint64_t* slot);
  COTUNE_DECL static void store_scalar(const argument& a, std::uint64_t* slot);

  std::shared_ptr<storage> s_;
};

static_assert(Buffer<argument_pack>);

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/argument_pack.ipp>
#endif
