#pragma once
/// \file The bodies of cache/entry_frame.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cache/entry_frame.hpp>

namespace cotune::detail {

COTUNE_DECL sha256_digest frame_checksum(std::string_view key, std::string_view name,
                                         std::string_view payload) {
  return sha256_hasher{}
      .field("cotune-entry")
      .field(std::to_string(cache_format_version))
      .field(key)
      .field(name)
      .field(payload)
      .digest();
}

COTUNE_DECL std::string make_frame(std::string_view key, std::string_view name, std::string_view payload,
                                   std::string_view secret) {
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

COTUNE_DECL std::string frame_entry(std::string_view key, std::string_view name, std::string_view payload,
                                    std::string_view secret) {
  std::string out;
  out.reserve(payload.size() + frame_size);
  out.append(payload);
  out += make_frame(key, name, payload, secret);
  return out;
}

COTUNE_DECL unframed unframe(std::string_view key, std::string_view name, std::string_view file,
                             std::string_view secret) {
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
