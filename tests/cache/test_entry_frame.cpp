// Tests for cotune/cache/entry_frame.hpp: the one frame around local and remote cache entries.

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include <cotune/core/version.hpp>
#include <cotune/cache/entry_frame.hpp>

using namespace cotune::detail;
using cotune::entry_fault;

namespace {

const std::string key = sha256_hex("a key"), other_key = sha256_hex("another key");

std::string framed(const std::string& name, const std::string& payload, const std::string& secret = "") {
  return frame_entry(key, name, payload, secret);
}

std::string raw(const sha256_digest& d) { return std::string(reinterpret_cast<const char*>(d.data()), d.size()); }

} // namespace

TEST_CASE("a frame is a 92-byte trailer: magic, version, flags, length, checksum, MAC, tail", "[cache][entry_frame]") {
  static_assert(frame_size == 92);
  const std::string payload = "hello";
  const auto t = make_frame(key, "entry.bin", payload);
  REQUIRE(t.size() == frame_size);
  CHECK(t.substr(0, 8) == "CTNFRAME");
  CHECK(t.substr(t.size() - 4) == "CTNE");
  CHECK(static_cast<unsigned char>(t[frame_version_at]) == cotune::cache_format_version);
  CHECK(t.substr(frame_version_at + 1, 3) == std::string(3, '\0'));
  CHECK(t.substr(frame_flags_at, 4) == std::string(4, '\0')); // unsigned
  CHECK(static_cast<unsigned char>(t[frame_length_at]) == payload.size()); // little-endian length
  CHECK(t.substr(frame_length_at + 1, 7) == std::string(7, '\0'));
  CHECK(t.substr(frame_checksum_at, 32) == raw(frame_checksum(key, "entry.bin", payload)));
  CHECK(t.substr(frame_mac_at, 32) == std::string(32, '\0'));

  const auto s = make_frame(key, "entry.bin", payload, "secret");
  CHECK(static_cast<unsigned char>(s[frame_flags_at]) == frame_flag_signed);
  CHECK(s.substr(frame_checksum_at, 32) == t.substr(frame_checksum_at, 32)); // the same checksum
  CHECK(s.substr(frame_mac_at, 32) == raw(frame_mac("secret", frame_checksum(key, "entry.bin", payload))));
  CHECK(framed("entry.bin", payload) == payload + t);
}

TEST_CASE("a framed payload reads back exactly, signed or not, including empty and binary payloads",
          "[cache][entry_frame]") {
  for (const std::string& payload : {std::string(), std::string("x"), std::string("a\0b\xff", 4),
                                     std::string(100000, 'z')}) {
    for (const std::string secret : {"", "s3cret"}) {
      const auto file = framed("f", payload, secret);
      auto back = unframe(key, "f", file, secret);
      REQUIRE(back);
      CHECK(back.payload == payload);
      CHECK(back.was_signed == !secret.empty());
      CHECK(back.payload.data() == file.data()); // a view into the entry: no copy
    }
  }
  // Without a secret, a signed entry is accepted on its checksum (the reader cannot check a MAC).
  CHECK(unframe(key, "f", framed("f", "p", "s3cret")));
}

TEST_CASE("any flipped bit makes the entry a miss", "[cache][entry_frame]") {
  // A signed entry read with its secret, and an unsigned one read without: every bit is checked.
  for (const std::string secret : {"secret", ""}) {
    const auto file = framed("k.so", "the payload, a few bytes long", secret);
    for (std::size_t i = 0; i < file.size(); ++i)
      for (int bit = 0; bit < 8; ++bit) {
        auto damaged = file;
        damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
        INFO("secret '" << secret << "' byte " << i << " bit " << bit);
        CHECK_FALSE(unframe(key, "k.so", damaged, secret));
      }
  }
}

TEST_CASE("every way an entry can be wrong is a miss with its own fault", "[cache][entry_frame]") {
  const std::string payload = "the content";
  const auto good = framed("r.json", payload, "secret");
  auto fault = [](std::string_view k, std::string_view n, std::string_view v, std::string_view secret = "secret") {
    return unframe(k, n, v, secret).fault;
  };
  CHECK(fault(key, "r.json", good) == entry_fault::none);
  CHECK(fault(key, "r.json", "") == entry_fault::malformed);
  CHECK(fault(key, "r.json", std::string(frame_size - 1, 'x')) == entry_fault::malformed);
  CHECK(fault(key, "r.json", std::string(200, 'x'), "") == entry_fault::malformed);
  CHECK(fault(key, "r.json", payload) == entry_fault::malformed);       // never framed
  CHECK(fault(key, "r.json", good + "x") == entry_fault::malformed);    // the trailer is no longer last
  CHECK(fault(key, "r.json", good.substr(1)) == entry_fault::truncated); // a byte of payload lost
  CHECK(fault(key, "r.json", "x" + good) == entry_fault::truncated);
  auto version = good;
  version[payload.size() + frame_version_at] = static_cast<char>(cotune::cache_format_version + 1);
  CHECK(fault(key, "r.json", version) == entry_fault::bad_version);
  auto flipped = good;
  flipped[2] ^= 0x20;
  CHECK(fault(key, "r.json", flipped) == entry_fault::bad_checksum);
  CHECK(fault(other_key, "r.json", good) == entry_fault::bad_checksum); // bound to the key
  CHECK(fault(key, "other.json", good) == entry_fault::bad_checksum);   // and to the name
  const auto unsigned_entry = framed("r.json", payload);
  CHECK(fault(key, "r.json", unsigned_entry) == entry_fault::unsigned_entry);
  CHECK(fault(key, "r.json", framed("r.json", payload, "wrong")) == entry_fault::bad_signature);
  // Signed for another key, with the checksum recomputed for this one (anyone can compute a checksum;
  // only the secret makes a MAC): the MAC still fails.
  auto moved = frame_entry(other_key, "r.json", payload, "secret");
  moved.replace(payload.size() + frame_checksum_at, 32, raw(frame_checksum(key, "r.json", payload)));
  CHECK(fault(key, "r.json", moved) == entry_fault::bad_signature);
  // A signed flag set on an unsigned entry (its MAC is all zeros) is not a frame at all, and a made-up
  // MAC fails.
  auto fake_flag = unsigned_entry;
  fake_flag[payload.size() + frame_flags_at] = 1;
  CHECK(fault(key, "r.json", fake_flag) == entry_fault::malformed);
  fake_flag[payload.size() + frame_mac_at] = 1;
  CHECK(fault(key, "r.json", fake_flag) == entry_fault::bad_signature);
  CHECK(cotune::to_string(entry_fault::bad_signature) == "bad signature");
  CHECK(cotune::to_string(entry_fault::unsigned_entry) == "unsigned");
}

TEST_CASE("entries of the earlier formats are misses", "[cache][entry_frame]") {
  // Format 2's local trailer: "COTUNEv1", version 2, length, SHA-256, "CTNE" (56 bytes).
  std::string v2 = "payload";
  v2 += "COTUNEv1";
  v2 += std::string("\x02\0\0\0", 4);
  v2 += std::string("\x07\0\0\0\0\0\0\0", 8);
  v2 += std::string(32, 'd');
  v2 += "CTNE";
  CHECK(unframe(key, "n", v2).fault == entry_fault::malformed);
  CHECK(unframe(key, "n", v2 + std::string(36, '\0')).fault == entry_fault::malformed);
  // The remote envelope of format 2 was a header ("CTREMOTE" ...) before the content.
  const std::string envelope = "CTREMOTE" + std::string(112, '\0') + "content";
  CHECK(unframe(key, "n", envelope, "").fault == entry_fault::malformed);
}
