#pragma once
/// \file The one frame around every cache entry, local (file cache) and remote (a Redis value alike):
/// a 92-byte trailer after the payload.
///
///   payload | magic "CTNFRAME" (8) | format version u32 LE | flags u32 LE (bit 0: carries a MAC)
///           | payload length u64 LE | checksum (32) | MAC (32, zeros when unsigned) | "CTNE" (4)
///
/// checksum = SHA-256("cotune-entry", format version, key, name, payload), each a length-prefixed field;
/// MAC      = HMAC-SHA256(secret; "cotune-entry-mac", checksum), over the checksum rather than the payload
///            so that a signed read hashes a 100 MB fatbin once, not twice (HMAC of a collision-resistant
///            digest is as strong as HMAC of the message).
///
/// A trailer (not a header) keeps a framed shared object loadable by dlopen, which ignores bytes after
/// the ELF image, so the host backend loads entries in place. The key (the entry's hex key) and the
/// file name are bound into the checksum, so a truncated, bit-flipped, renamed entry, or one copied
/// under another key, fails the check. The checksum proves integrity only; a reader that holds the
/// secret (the local key of the file cache, the remote secret of a remote cache) accepts only entries
/// whose MAC it can check, so an entry planted by anyone without the secret is refused. A reader
/// without a secret accepts signed and unsigned entries alike once their checksum matches.
///
/// Format 3 replaced two layouts (format 2's local 56-byte trailer and the remote "envelope" header):
/// their magics differ from this one, and the format version is part of every cache key, so an entry
/// written by either is never looked up, and would be a miss if it were.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <cotune/cache/entry_fault.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune::detail {

inline constexpr std::string_view frame_magic = "CTNFRAME";
inline constexpr std::string_view frame_tail = "CTNE";
inline constexpr std::uint32_t frame_flag_signed = 1;
inline constexpr std::size_t frame_size = 8 + 4 + 4 + 8 + 32 + 32 + 4;
/// Offsets of the trailer's fields, from the trailer's first byte.
inline constexpr std::size_t frame_version_at = 8, frame_flags_at = 12, frame_length_at = 16, frame_checksum_at = 24,
                             frame_mac_at = 56;

/// SHA-256 over (format version, key, name, payload): the checksum every entry carries.
[[nodiscard]] inline sha256_digest frame_checksum(std::string_view key, std::string_view name,
                                                  std::string_view payload) {
  return sha256_hasher{}
      .field("cotune-entry")
      .field(std::to_string(cache_format_version))
      .field(key)
      .field(name)
      .field(payload)
      .digest();
}

/// HMAC-SHA256 under `secret` over a checksum: the MAC of a signed entry.
[[nodiscard]] inline sha256_digest frame_mac(std::string_view secret, const sha256_digest& checksum) {
  std::string message = "cotune-entry-mac:";
  message.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  return hmac_sha256(secret, message);
}

/// The trailer for `payload` filed as (`key`, `name`); it carries a MAC when `secret` is not empty.
[[nodiscard]] inline std::string make_frame(std::string_view key, std::string_view name, std::string_view payload,
                                            std::string_view secret = {}) {
  std::string t(frame_magic);
  t.reserve(frame_size);
  auto put_le = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) t.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  put_le(static_cast<std::uint32_t>(cache_format_version), 4);
  put_le(secret.empty() ? 0 : frame_flag_signed, 4);
  put_le(payload.size(), 8);
  const auto sum = frame_checksum(key, name, payload);
  t.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  if (secret.empty()) t.append(32, '\0');
  else {
    const auto mac = frame_mac(secret, sum);
    t.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  }
  t += frame_tail;
  return t;
}

/// `payload` followed by its trailer: a whole framed entry (what a remote store keeps).
[[nodiscard]] inline std::string frame_entry(std::string_view key, std::string_view name, std::string_view payload,
                                             std::string_view secret = {}) {
  std::string out;
  out.reserve(payload.size() + frame_size);
  out.append(payload);
  out += make_frame(key, name, payload, secret);
  return out;
}

/// The outcome of checking a framed entry: the payload (a view into the entry) when `fault` is none.
struct unframed {
  entry_fault fault = entry_fault::malformed;
  std::string_view payload{};
  bool was_signed = false;
  [[nodiscard]] explicit operator bool() const noexcept { return fault == entry_fault::none; }
};

/// Checks `file` as the entry filed as (`key`, `name`). With a secret, only entries carrying a MAC
/// under that secret are accepted; without one, any entry whose checksum matches is.
[[nodiscard]] inline unframed unframe(std::string_view key, std::string_view name, std::string_view file,
                                      std::string_view secret = {}) {
  if (file.size() < frame_size) return {};
  const auto trailer = file.substr(file.size() - frame_size);
  if (!trailer.starts_with(frame_magic) || !trailer.ends_with(frame_tail)) return {};
  auto get_le = [&](std::size_t off, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= std::uint64_t(static_cast<unsigned char>(trailer[off + static_cast<std::size_t>(i)])) << (8 * i);
    return v;
  };
  if (get_le(frame_version_at, 4) != static_cast<std::uint64_t>(cache_format_version))
    return {entry_fault::bad_version};
  if (get_le(frame_length_at, 8) != file.size() - frame_size) return {entry_fault::truncated};
  const auto payload = file.substr(0, file.size() - frame_size);
  const auto sum = frame_checksum(key, name, payload);
  auto raw = [](const sha256_digest& d) { return std::string_view(reinterpret_cast<const char*>(d.data()), d.size()); };
  if (!constant_time_equal(trailer.substr(frame_checksum_at, 32), raw(sum))) return {entry_fault::bad_checksum};
  // Unknown flags, a MAC on an entry that says it has none, or an all-zero one on an entry that says
  // it has one (a chance of 2^-256) are not this format: no bit of an unsigned entry goes unchecked.
  const auto flags = get_le(frame_flags_at, 4);
  const bool is_signed = (flags & frame_flag_signed) != 0;
  const bool zero_mac = trailer.substr(frame_mac_at, 32).find_first_not_of('\0') == std::string_view::npos;
  if ((flags & ~std::uint64_t{frame_flag_signed}) != 0 || is_signed == zero_mac) return {entry_fault::malformed};
  if (!secret.empty()) {
    if (!is_signed) return {entry_fault::unsigned_entry};
    if (!constant_time_equal(trailer.substr(frame_mac_at, 32), raw(frame_mac(secret, sum))))
      return {entry_fault::bad_signature};
  }
  return {entry_fault::none, payload, is_signed};
}

} // namespace cotune::detail
