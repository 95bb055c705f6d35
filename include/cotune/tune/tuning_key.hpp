#pragma once
/// \file `cotune::tuning_key`: the in-memory key of one tuning, a few machine words.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <cotune/core/buffer.hpp>
#include <cotune/core/errors.hpp>

namespace cotune {

/// Up to `capacity` 64-bit words (argument values, element types, extents, heuristic values).
/// Building, hashing and comparing it allocates nothing and hashes no string at call time.
class tuning_key {
public:
  static constexpr std::size_t capacity = 32;

  /// An empty key. The words are left uninitialised (see words_).
  constexpr tuning_key() noexcept {}
  constexpr tuning_key(const tuning_key& other) noexcept : size_(other.size_) {
    for (std::size_t i = 0; i < size_; ++i) words_[i] = other.words_[i];
  }
  constexpr tuning_key& operator=(const tuning_key& other) noexcept {
    size_ = other.size_;
    for (std::size_t i = 0; i < size_; ++i) words_[i] = other.words_[i];
    return *this;
  }

  constexpr void push(std::uint64_t word) noexcept { words_[size_++] = word; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
  [[nodiscard]] constexpr std::uint64_t operator[](std::size_t i) const noexcept { return words_[i]; }

  /// A 64-bit hash of the words. Each word gets the whole splitmix64 mix on its own (with its
  /// position), and the mixes are summed: the multiplies of different words overlap instead of forming
  /// one dependency chain (a chained mix cost ~13 cycles per word on the hot path of a tuned call).
  /// One multiply per word was not enough: it carries bits only upwards, so words whose information
  /// is in their high bits (a double's bit pattern) summed almost linearly, and [17.0, 11.0] hashed
  /// like [400.0, 240.0].
  [[nodiscard]] constexpr std::uint64_t hash() const noexcept {
    std::uint64_t h = 0x9e3779b97f4a7c15ull * (size_ + 1ull);
    for (std::size_t i = 0; i < size_; ++i) h += mix(words_[i] + 0x9e3779b97f4a7c15ull * (i + 1));
    return mix(h);
  }

  friend constexpr bool operator==(const tuning_key& a, const tuning_key& b) noexcept {
    if (a.size_ != b.size_) return false;
    for (std::size_t i = 0; i < a.size_; ++i)
      if (a.words_[i] != b.words_[i]) return false;
    return true;
  }

private:
  /// splitmix64's finaliser: every input bit reaches every output bit.
  [[nodiscard]] static constexpr std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Only the first size_ words are ever written, read or copied: zeroing all 32 on every call (a
  // 256-byte `rep stos`) was a quarter of a tuned call's cost.
  std::array<std::uint64_t, capacity> words_;
  std::uint8_t size_ = 0;
};

namespace detail {

/// FNV-1a, for element type names at compile time.
[[nodiscard]] constexpr std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

/// Arguments whose value can select a tuning: integers, floating values, bools, enums.
template <class T>
concept key_scalar = std::is_arithmetic_v<std::remove_cvref_t<T>> || std::is_enum_v<std::remove_cvref_t<T>>;

template <key_scalar T>
[[nodiscard]] constexpr std::uint64_t key_word(const T& v) noexcept {
  using U = std::remove_cvref_t<T>;
  if constexpr (std::is_enum_v<U>) return static_cast<std::uint64_t>(static_cast<std::underlying_type_t<U>>(v));
  else if constexpr (std::is_floating_point_v<U>) return std::bit_cast<std::uint64_t>(static_cast<double>(v));
  else return static_cast<std::uint64_t>(v);
}

/// The key word for a buffer's element type: computed at compile time when the buffer names its
/// element type, else from the name at run time.
template <Buffer B>
[[nodiscard]] constexpr std::uint64_t element_type_word(const B& b) noexcept {
  if constexpr (requires { typename B::element_type; }) {
    constexpr std::uint64_t word = fnv1a(cotune::element_type_name<typename B::element_type>());
    return word;
  } else {
    return fnv1a(b.element_type_name());
  }
}

} // namespace detail
} // namespace cotune
