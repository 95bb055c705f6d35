// Tests for cotune/detail/hashing.hpp against published test vectors (FIPS 180-2, RFC 4231, RFC 4648).

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <cotune/detail/hashing.hpp>

using namespace cotune::detail;

// clang 14 cannot evaluate libstdc++ 12's std::string in a constant expression (it rejects the
// small-string buffer's union member activation), so base32's static_assert needs g++ or clang 15+.
#if !defined(__clang__) || __clang_major__ >= 15
#define COTUNE_TEST_CONSTEXPR_STRING 1
#endif

namespace {

constexpr bool hex_rules() {
  return is_hex("00") && is_hex("0123456789abcdef") && !is_hex("") && !is_hex("abc") && !is_hex("AB") &&
         !is_hex("0g") && !is_hex("0x12");
}

constexpr bool base32_vectors() {
  // RFC 4648 §10, without '=' padding.
  return base32(std::string_view("")).empty() && base32(std::string_view("f")) == "MY" &&
         base32(std::string_view("fo")) == "MZXQ" && base32(std::string_view("foo")) == "MZXW6" &&
         base32(std::string_view("foob")) == "MZXW6YQ" && base32(std::string_view("fooba")) == "MZXW6YTB" &&
         base32(std::string_view("foobar")) == "MZXW6YTBOI";
}

} // namespace

TEST_CASE("SHA-256 matches the published test vectors", "[detail][hashing]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1'000'000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("incremental SHA-256 equals the one-shot digest", "[detail][hashing]") {
  sha256_hasher h;
  for (int i = 0; i < 1000; ++i) h.update(std::string(1000, 'a'));
  CHECK(to_hex(h.digest()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK(to_hex(sha256_hasher{}.update("ab").update("c").digest()) == sha256_hex("abc"));
}

TEST_CASE("length-prefixed fields keep field boundaries apart", "[detail][hashing]") {
  auto fields = [](std::string_view a, std::string_view b) { return to_hex(sha256_hasher{}.field(a).field(b).digest()); };
  CHECK(fields("ab", "c") != fields("a", "bc"));
  CHECK(fields("", "abc") != fields("abc", ""));
  CHECK(fields("a", "b") == fields("a", "b"));
  CHECK(to_hex(sha256_hasher{}.field("abc").digest()) == sha256_hex("3:abc"));
}

TEST_CASE("HMAC-SHA256 matches RFC 4231", "[detail][hashing]") {
  // Test case 1.
  CHECK(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2.
  CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block size is hashed first.
  CHECK(hmac_sha256_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("base32 matches RFC 4648 without padding", "[detail][hashing]") {
#ifdef COTUNE_TEST_CONSTEXPR_STRING
  static_assert(base32_vectors());
#endif
  CHECK(base32_vectors());
  const std::array<std::uint8_t, 4> bytes{0x00, 0xff, 0x10, 0x80};
  CHECK(base32(bytes) == "AD7RBAA");
}

TEST_CASE("a SHA-256 digest is 52 base32 characters", "[detail][hashing]") {
  CHECK(base32(sha256("")) == "4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ");
  CHECK(base32(sha256("abc")) == "XJ4BNP4PAHH6UQKBIDPF3LRCEOYAGYNDSYLXVHFUCD7WD4QACWWQ");
  for (const char* s : {"", "x", "cotune"}) {
    const auto text = base32(sha256(s));
    CHECK(text.size() == 52);
    CHECK(text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") == std::string::npos);
  }
}

TEST_CASE("hex is lower case and is_hex recognises it", "[detail][hashing]") {
  static_assert(hex_rules());
  CHECK(hex_rules());
  const std::array<std::uint8_t, 3> bytes{0x00, 0xab, 0xff};
  CHECK(to_hex(bytes) == "00abff");
  CHECK(is_hex(sha256_hex("x")));
  CHECK(sha256_hex("x").size() == 64);
}

TEST_CASE("constant_time_equal compares whole strings", "[detail][hashing]") {
  CHECK(constant_time_equal("", ""));
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "ab"));
  CHECK_FALSE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}
