#pragma once
/// \file SHA-256 (Crypto++), HMAC-SHA256, hex and RFC 4648 base32. Crypto++ is included only by
/// hashing.ipp: with COTUNE_SEPARATE_COMPILATION its headers stay out of every user file.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>

#include <cotune/detail/config.hpp>

namespace cotune::detail {

using sha256_digest = std::array<std::uint8_t, 32>;

/// Incremental SHA-256; feed with `update`, read with `digest`.
class sha256_hasher {
public:
  COTUNE_DECL sha256_hasher() noexcept;
  COTUNE_DECL sha256_hasher(const sha256_hasher& other) noexcept;
  COTUNE_DECL sha256_hasher& operator=(const sha256_hasher& other) noexcept;
  COTUNE_DECL ~sha256_hasher();

  COTUNE_DECL sha256_hasher& update(std::string_view bytes);
  /// Adds a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently.
  sha256_hasher& field(std::string_view bytes) {
    update(std::to_string(bytes.size()));
    update(":");
    return update(bytes);
  }
  [[nodiscard]] COTUNE_DECL sha256_digest digest();

private:
  // A CryptoPP::SHA256 lives here (216 bytes, alignment 8 with Crypto++ 8.7; hashing.ipp checks the
  // fit), so that this header needs no Crypto++ header and a hasher needs no allocation.
  alignas(16) unsigned char state_[256];
};

[[nodiscard]] inline sha256_digest sha256(std::string_view bytes) { return sha256_hasher{}.update(bytes).digest(); }

[[nodiscard]] COTUNE_DECL std::string to_hex(std::span<const std::uint8_t> bytes);

[[nodiscard]] inline std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

/// True when `s` is a non-empty string of lower-case hex digits of even length.
[[nodiscard]] constexpr bool is_hex(std::string_view s) noexcept {
  if (s.empty() || s.size() % 2 != 0) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

/// RFC 4648 base32 (A-Z, 2-7) without padding over any range of bytes: 52 characters for a SHA-256.
template <class Range>
[[nodiscard]] constexpr std::string base32(const Range& bytes) {
  constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (auto byte : bytes) {
    buffer = (buffer << 8) | static_cast<std::uint8_t>(byte);
    bits += 8;
    while (bits >= 5) {
      out.push_back(alphabet[(buffer >> (bits - 5)) & 0x1F]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(alphabet[(buffer << (5 - bits)) & 0x1F]);
  return out;
}

/// RFC 4648 base32 (no padding) back to bytes; nothing unless `text` is exactly what `base32` writes
/// for them (no leftover bits set, upper case only).
[[nodiscard]] COTUNE_DECL std::optional<std::string> base32_decode(std::string_view text);

/// HMAC-SHA256 of `message` under `secret`.
[[nodiscard]] COTUNE_DECL sha256_digest hmac_sha256(std::string_view secret, std::string_view message);

/// HMAC-SHA256 of `message` under `secret`, as lower-case hex.
[[nodiscard]] inline std::string hmac_sha256_hex(std::string_view secret, std::string_view message) {
  return to_hex(hmac_sha256(secret, message));
}

/// Compares two strings in time independent of where they differ (for signatures).
[[nodiscard]] COTUNE_DECL bool constant_time_equal(std::string_view a, std::string_view b) noexcept;

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/detail/hashing.ipp>
#endif
