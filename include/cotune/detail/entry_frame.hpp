#pragma once
/// \file The frame around every normal cache entry: a 56-byte trailer after the payload.
///
/// A trailer (not a header) keeps a framed shared object loadable by dlopen, which ignores bytes after
/// the ELF image, so the host backend can load entries in place. The trailer holds a magic, the
/// format version, the payload length and SHA-256(binding, payload), where the binding is the entry's
/// key directory and file name (`entry_binding`): a truncated, bit-flipped, foreign or renamed file,
/// or one copied into another key's directory, fails the check and reads as a miss.

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <cotune/core/version.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune::detail {

inline constexpr std::string_view frame_magic = "COTUNEv1";
inline constexpr std::string_view frame_tail = "CTNE";
inline constexpr std::size_t frame_size = 8 + 4 + 8 + 32 + 4;

/// What a frame is bound to: "<key directory>/<file name>" (since cache format 2; format 1 bound the
/// file name alone, so an entry copied under another key still checked out).
[[nodiscard]] inline std::string entry_binding(std::string_view key_dir, std::string_view name) {
  std::string out(key_dir);
  out += '/';
  out += name;
  return out;
}

[[nodiscard]] inline sha256_digest frame_digest(std::string_view name, std::string_view payload) {
  return sha256_hasher{}.field("cotune-entry").field(name).field(payload).digest();
}

/// The trailer for `payload` stored under `name` (an entry_binding, for cache entries).
[[nodiscard]] inline std::string make_frame(std::string_view name, std::string_view payload) {
  std::string t(frame_magic);
  auto put_le = [&](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) t.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  put_le(static_cast<std::uint32_t>(cache_format_version), 4);
  put_le(payload.size(), 8);
  auto d = frame_digest(name, payload);
  t.append(reinterpret_cast<const char*>(d.data()), d.size());
  t += frame_tail;
  return t;
}

/// The payload of a framed file, or nothing if the frame does not check out.
[[nodiscard]] inline std::optional<std::string_view> unframe(std::string_view name, std::string_view file) {
  if (file.size() < frame_size) return std::nullopt;
  auto trailer = file.substr(file.size() - frame_size);
  if (!trailer.starts_with(frame_magic) || !trailer.ends_with(frame_tail)) return std::nullopt;
  auto get_le = [&](std::size_t off, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(trailer[off + i])) << (8 * i);
    return v;
  };
  if (get_le(8, 4) != static_cast<std::uint64_t>(cache_format_version)) return std::nullopt;
  std::uint64_t length = get_le(12, 8);
  if (length != file.size() - frame_size) return std::nullopt;
  auto payload = file.substr(0, length);
  auto d = frame_digest(name, payload);
  if (std::memcmp(d.data(), trailer.data() + 20, d.size()) != 0) return std::nullopt;
  return payload;
}

} // namespace cotune::detail
