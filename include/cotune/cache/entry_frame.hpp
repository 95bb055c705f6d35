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
[[nodiscard]] COTUNE_DECL sha256_digest frame_checksum(std::string_view key, std::string_view name,
                                                  std::string_view payload);

/// HMAC-SHA256 under `secret` over a checksum: the MAC of a signed entry.
[[nodiscard]] inline sha256_digest frame_mac(std::string_view secret, const sha256_digest& checksum) {
  std::string message = "cotune-entry-mac:";
  message.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  return hmac_sha256(secret, message);
}

/// The trailer for `payload` filed as (`key`, `name`); it carries a MAC when `secret` is not empty.
[[nodiscard]] COTUNE_DECL std::string make_frame(std::string_view key, std::string_view name, std::string_view payload,
                                            std::string_view secret = {});

/// `payload` followed by its trailer: a whole framed entry (what a remote store keeps).
[[nodiscard]] COTUNE_DECL std::string frame_entry(std::string_view key, std::string_view name, std::string_view payload,
                                             std::string_view secret = {});

/// The outcome of checking a framed entry: the payload (a view into the entry) when `fault` is none.
struct unframed {
  entry_fault fault = entry_fault::malformed;
  std::string_view payload{};
  bool was_signed = false;
  [[nodiscard]] explicit operator bool() const noexcept { return fault == entry_fault::none; }
};

/// Checks `file` as the entry filed as (`key`, `name`). With a secret, only entries carrying a MAC
/// under that secret are accepted; without one, any entry whose checksum matches is.
[[nodiscard]] COTUNE_DECL unframed unframe(std::string_view key, std::string_view name, std::string_view file,
                                      std::string_view secret = {});

} // namespace cotune::detail

#if COTUNE_HEADER_ONLY
#include <cotune/cache/entry_frame.ipp>
#endif
