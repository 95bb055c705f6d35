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

} // namespace cotune::detail
