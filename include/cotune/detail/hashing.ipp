#pragma once
/// \file The bodies of detail/hashing.hpp that need Crypto++ (compiled once with
/// COTUNE_SEPARATE_COMPILATION, see detail/config.hpp).

#include <new>

#include <cryptopp/hmac.h>
#include <cryptopp/sha.h>

#include <cotune/detail/hashing.hpp>

namespace cotune::detail {

namespace hashing_impl {
[[nodiscard]] inline CryptoPP::SHA256& state(unsigned char* storage) noexcept {
  return *std::launder(reinterpret_cast<CryptoPP::SHA256*>(storage));
}
[[nodiscard]] inline const CryptoPP::SHA256& state(const unsigned char* storage) noexcept {
  return *std::launder(reinterpret_cast<const CryptoPP::SHA256*>(storage));
}
} // namespace hashing_impl

COTUNE_DECL sha256_hasher::sha256_hasher() noexcept {
  static_assert(sizeof(CryptoPP::SHA256) <= sizeof(state_) && alignof(CryptoPP::SHA256) <= alignof(sha256_hasher),
                "CryptoPP::SHA256 no longer fits sha256_hasher's storage: enlarge state_");
  ::new (static_cast<void*>(state_)) CryptoPP::SHA256();
}

COTUNE_DECL sha256_hasher::sha256_hasher(const sha256_hasher& other) noexcept {
  ::new (static_cast<void*>(state_)) CryptoPP::SHA256(hashing_impl::state(other.state_));
}

COTUNE_DECL sha256_hasher& sha256_hasher::operator=(const sha256_hasher& other) noexcept {
  if (this != &other) hashing_impl::state(state_) = hashing_impl::state(other.state_);
  return *this;
}

COTUNE_DECL sha256_hasher::~sha256_hasher() { hashing_impl::state(state_).~SHA256(); }

COTUNE_DECL sha256_hasher& sha256_hasher::update(std::string_view bytes) {
  hashing_impl::state(state_).Update(reinterpret_cast<const CryptoPP::byte*>(bytes.data()), bytes.size());
  return *this;
}

COTUNE_DECL sha256_digest sha256_hasher::digest() {
  sha256_digest out{};
  hashing_impl::state(state_).Final(out.data());
  return out;
}

COTUNE_DECL sha256_digest hmac_sha256(std::string_view secret, std::string_view message) {
  CryptoPP::HMAC<CryptoPP::SHA256> mac(reinterpret_cast<const CryptoPP::byte*>(secret.data()), secret.size());
  mac.Update(reinterpret_cast<const CryptoPP::byte*>(message.data()), message.size());
  sha256_digest out{};
  mac.Final(out.data());
  return out;
}


COTUNE_DECL std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xF]);
  }
  return out;
}

COTUNE_DECL std::optional<std::string> base32_decode(std::string_view text) {
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    const int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= '2' && c <= '7' ? c - '2' + 26 : -1;
    if (v < 0) return std::nullopt;
    buffer = (buffer << 5) | static_cast<std::uint32_t>(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<char>((buffer >> (bits - 8)) & 0xFF));
      bits -= 8;
    }
  }
  if (base32(out) != text) return std::nullopt;
  return out;
}

COTUNE_DECL bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

} // namespace cotune::detail
