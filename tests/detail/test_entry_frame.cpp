// Tests for cotune/detail/entry_frame.hpp: the trailer that makes damaged cache entries misses.

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include <cotune/core/version.hpp>
#include <cotune/detail/entry_frame.hpp>

using namespace cotune::detail;

namespace {

std::string framed(const std::string& name, const std::string& payload) { return payload + make_frame(name, payload); }

} // namespace

TEST_CASE("a frame is a 56-byte trailer with magic, version, length and digest", "[detail][entry_frame]") {
  static_assert(frame_size == 56);
  const std::string payload = "hello";
  const auto t = make_frame("entry.bin", payload);
  REQUIRE(t.size() == frame_size);
  CHECK(t.substr(0, 8) == "COTUNEv1");
  CHECK(t.substr(t.size() - 4) == "CTNE");
  CHECK(static_cast<unsigned char>(t[8]) == cotune::cache_format_version);
  CHECK(t.substr(9, 3) == std::string(3, '\0'));
  CHECK(static_cast<unsigned char>(t[12]) == payload.size()); // little-endian length
  CHECK(t.substr(13, 7) == std::string(7, '\0'));
  const auto d = frame_digest("entry.bin", payload);
  CHECK(t.substr(20, 32) == std::string(reinterpret_cast<const char*>(d.data()), d.size()));
}

TEST_CASE("a framed payload reads back exactly, including empty and binary payloads", "[detail][entry_frame]") {
  for (const std::string& payload : {std::string(), std::string("x"), std::string("a\0b\xff", 4),
                                    std::string(100000, '\x7f'), std::string("COTUNEv1 looks like a frame CTNE")}) {
    const auto file = framed("f", payload);
    auto back = unframe("f", file);
    REQUIRE(back);
    CHECK(*back == payload);
  }
}

TEST_CASE("any flipped bit makes the entry a miss", "[detail][entry_frame]") {
  const auto file = framed("k.so", "0123456789");
  for (std::size_t i = 0; i < file.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      auto damaged = file;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      INFO("byte " << i << " bit " << bit);
      CHECK_FALSE(unframe("k.so", damaged));
    }
}

TEST_CASE("truncated, extended, unframed, renamed and short files are misses", "[detail][entry_frame]") {
  const std::string payload = "payload bytes";
  const auto file = framed("a.json", payload);
  for (std::size_t cut = 0; cut < file.size(); ++cut) {
    INFO("cut to " << cut);
    CHECK_FALSE(unframe("a.json", file.substr(0, cut)));
  }
  CHECK_FALSE(unframe("a.json", file + "x"));
  CHECK_FALSE(unframe("a.json", "x" + file));
  CHECK_FALSE(unframe("a.json", payload));
  CHECK_FALSE(unframe("b.json", file)); // the digest covers the name: a renamed entry is foreign
  CHECK_FALSE(unframe("a.json", ""));
  CHECK_FALSE(unframe("a.json", std::string(frame_size - 1, 'x')));
}

TEST_CASE("a frame from another format version is a miss", "[detail][entry_frame]") {
  auto file = framed("n", "data");
  const std::size_t version_at = file.size() - frame_size + 8;
  file[version_at] = static_cast<char>(cotune::cache_format_version + 1);
  CHECK_FALSE(unframe("n", file));
}
