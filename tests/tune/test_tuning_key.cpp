// Tests for cotune/tune/tuning_key.hpp: the in-memory key of one tuning and the words it is made of.

#include <catch2/catch.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cotune/core/buffer.hpp>
#include <cotune/tune/tuning_key.hpp>

using cotune::tuning_key;
using cotune::detail::element_type_word;
using cotune::detail::fnv1a;
using cotune::detail::key_word;

namespace {

constexpr tuning_key key_of(std::initializer_list<std::uint64_t> words) {
  tuning_key k;
  for (auto w : words) k.push(w);
  return k;
}

/// A key of `n` words 0, 1, ..., n-1; its size, or a failed constant evaluation past the capacity.
template <std::size_t N>
constexpr std::size_t push_words() {
  tuning_key k;
  for (std::size_t i = 0; i < N; ++i) k.push(i);
  return k.size();
}

/// True when a key of N words can be built in a constant expression.
template <std::size_t N>
concept buildable_at_compile_time = requires { typename std::integral_constant<std::size_t, push_words<N>()>; };

constexpr bool equality_rules() {
  const auto empty = key_of({});
  const auto a = key_of({1, 2, 3});
  return empty.size() == 0 && empty == tuning_key{} && a.size() == 3 && a[0] == 1 && a[2] == 3 &&
         a == key_of({1, 2, 3}) && !(a == key_of({1, 2, 4})) && !(a == key_of({3, 2, 1})) &&
         !(a == key_of({1, 2})) && !(a == key_of({1, 2, 3, 0})) && !(empty == key_of({0})) &&
         !(key_of({0}) == key_of({0, 0}));
}

constexpr bool hash_rules() {
  const auto a = key_of({1, 2, 3});
  return a.hash() == key_of({1, 2, 3}).hash() && tuning_key{}.hash() == key_of({}).hash() &&
         // Words are mixed with their position and the length: order, prefixes and zero words count.
         a.hash() != key_of({3, 2, 1}).hash() && a.hash() != key_of({1, 2}).hash() &&
         key_of({}).hash() != key_of({0}).hash() && key_of({0}).hash() != key_of({0, 0}).hash() &&
         key_of({5, 0}).hash() != key_of({0, 5}).hash();
}

/// Copies and assignments carry exactly the first size() words: words left over from a longer key
/// take part in neither equality nor the hash.
constexpr bool copies_carry_the_words() {
  tuning_key k = key_of({7, 8, 9, 10});
  const tuning_key copy(k);
  k = key_of({7, 8});
  const tuning_key fresh = key_of({7, 8});
  return copy == key_of({7, 8, 9, 10}) && k.size() == 2 && k == fresh && k.hash() == fresh.hash() &&
         !(k == copy);
}

constexpr bool a_full_key_works() {
  tuning_key a, b;
  for (std::size_t i = 0; i < tuning_key::capacity; ++i) {
    a.push(i * 3);
    b.push(i * 3);
  }
  tuning_key c = a;
  c = b;
  tuning_key d;
  for (std::size_t i = 0; i + 1 < tuning_key::capacity; ++i) d.push(i * 3);
  d.push(1);
  return a.size() == tuning_key::capacity && a == b && a.hash() == b.hash() && c == a &&
         a[tuning_key::capacity - 1] == 3 * (tuning_key::capacity - 1) && !(a == d) && a.hash() != d.hash();
}

enum class colour : std::uint8_t { red = 1, green = 2 };
enum plain_enum : int { minus_one = -1 };

constexpr bool key_words() {
  return key_word(0) == 0 && key_word(42) == 42 && key_word(std::int64_t{42}) == 42 &&
         key_word(std::uint16_t{42}) == 42 && key_word(true) == 1 && key_word(false) == 0 &&
         // Negative integers are sign-extended: -1 is the same word at every width.
         key_word(-1) == std::numeric_limits<std::uint64_t>::max() &&
         key_word(std::int8_t{-1}) == key_word(std::int64_t{-1}) &&
         key_word(std::uint32_t{0xffffffffu}) == 0xffffffffull &&
         key_word(colour::green) == 2 && key_word(minus_one) == key_word(-1) &&
         // Floating values are words of their double: float and double agree, -0.0 and 0.0 do not,
         // and 2.0 is not the integer 2.
         key_word(1.5f) == key_word(1.5) && key_word(1.5) == std::bit_cast<std::uint64_t>(1.5) &&
         key_word(0.0) != key_word(-0.0) && key_word(2.0) != key_word(2) && key_word(0.0) == key_word(0);
}

constexpr bool fnv1a_vectors() {
  // The published FNV-1a 64-bit test vectors.
  return fnv1a("") == 0xcbf29ce484222325ull && fnv1a("a") == 0xaf63dc4c8601ec8cull &&
         fnv1a("foobar") == 0x85944171f73967e8ull;
}

constexpr bool element_type_words() {
  constexpr cotune::host_span<float> floats{};
  constexpr cotune::host_span<const std::int64_t> longs{};
  return element_type_word(floats) == fnv1a("float32") && element_type_word(longs) == fnv1a("int64") &&
         element_type_word(floats) != element_type_word(longs);
}

/// A buffer that does not name its element type: the word comes from its run-time name.
struct named_buffer {
  using snapshot_type = int;
  std::string_view name;
  [[nodiscard]] std::size_t size() const { return 1; }
  [[nodiscard]] std::string_view element_type_name() const { return name; }
  void zero() {}
  [[nodiscard]] int snapshot() const { return 0; }
  void restore(int) {}
};

} // namespace

static_assert(cotune::Buffer<named_buffer>);
static_assert(tuning_key::capacity == 32);
static_assert(std::is_trivially_destructible_v<tuning_key>);
static_assert(std::is_nothrow_copy_constructible_v<tuning_key> && std::is_nothrow_copy_assignable_v<tuning_key>);

TEST_CASE("keys are equal exactly when their words are equal, in order", "[tune][tuning_key]") {
  static_assert(equality_rules());
  CHECK(equality_rules());
}

TEST_CASE("equal keys hash alike, and order, length and position change the hash", "[tune][tuning_key]") {
  static_assert(hash_rules());
  CHECK(hash_rules());
  // The hash is a pure function of the words: the one computed by the compiler is the one at run time.
  constexpr std::uint64_t at_compile_time = key_of({64, 1024, 3}).hash();
  std::vector<std::uint64_t> words{64, 1024, 3};
  tuning_key k;
  for (auto w : words) k.push(w);
  CHECK(k.hash() == at_compile_time);
}

TEST_CASE("a copy or an assignment carries only the words in use", "[tune][tuning_key]") {
  static_assert(copies_carry_the_words());
  CHECK(copies_carry_the_words());
  // At run time too, with a key that was reused for a longer key first.
  tuning_key reused;
  for (std::uint64_t w = 100; w < 120; ++w) reused.push(w);
  tuning_key shorter;
  shorter.push(100);
  reused = shorter;
  CHECK(reused.size() == 1);
  CHECK(reused == shorter);
  CHECK(reused.hash() == shorter.hash());
}

TEST_CASE("a key holds up to capacity words, and more is not a constant expression", "[tune][tuning_key]") {
  static_assert(a_full_key_works());
  CHECK(a_full_key_works());
  static_assert(push_words<tuning_key::capacity>() == tuning_key::capacity);
  static_assert(buildable_at_compile_time<tuning_key::capacity>);
  // Pushing past the capacity is a precondition violation (the autotuner refuses, when it is made,
  // a key that needs more words); the compiler diagnoses it in a constant evaluation.
  static_assert(!buildable_at_compile_time<tuning_key::capacity + 1>);
  CHECK(push_words<tuning_key::capacity>() == tuning_key::capacity);
}

TEST_CASE("distinct keys of realistic shapes have distinct hashes", "[tune][tuning_key]") {
  std::set<std::uint64_t> hashes;
  std::size_t keys = 0;
  auto add = [&](const tuning_key& k) {
    hashes.insert(k.hash());
    ++keys;
  };
  add(tuning_key{});
  // One scalar argument: every value up to 10000, and the same values as doubles.
  for (std::uint64_t n = 0; n < 10000; ++n) {
    add(key_of({n}));
    add(key_of({key_word(static_cast<double>(n) + 0.5)}));
  }
  // A buffer (element type word and extent) and a scalar.
  for (std::string_view type : {"float32", "float64", "int32", "int64", "float16", "bfloat16"})
    for (std::uint64_t n = 1; n <= 1000; ++n) add(key_of({fnv1a(type), n, n % 7}));
  // Two small scalars in both positions, and three-word permutations.
  for (std::uint64_t i = 0; i < 64; ++i)
    for (std::uint64_t j = 0; j < 64; ++j) add(key_of({i, j, 1u << 20}));
  // Keys of every length from 2 made of zero words ([0] is among the one-word keys above).
  tuning_key zeros;
  zeros.push(0);
  for (std::size_t i = 1; i < tuning_key::capacity; ++i) {
    zeros.push(0);
    add(zeros);
  }
  CHECK(hashes.size() == keys);
}

// With one multiply per word, [17.0, 11.0] and [400.0, 240.0] hashed alike, and so did 36 of these
// 1080 GEMM-like keys: words whose information is in their high bits (a double's bit pattern) mixed
// almost linearly. Lookups stayed correct (== decides), but colliding keys shared a probe chain.
TEST_CASE("keys made of floating values have distinct hashes", "[tune][tuning_key]") {
  CHECK(key_of({key_word(17.0), key_word(11.0)}).hash() != key_of({key_word(400.0), key_word(240.0)}).hash());
  std::set<std::uint64_t> hashes;
  std::size_t keys = 0;
  for (std::uint64_t m : {128, 256, 512, 1024, 2048, 4096})
    for (std::uint64_t n : {128, 256, 512, 1024, 2048, 4096})
      for (double alpha : {0.5, 1.0, 2.0, -1.0, 0.25, 4.0})
        for (double beta : {0.0, 1.0, 0.5, 2.0, -1.0}) {
          hashes.insert(key_of({m, n, key_word(alpha), key_word(beta)}).hash());
          ++keys;
        }
  CHECK(hashes.size() == keys);
}

TEST_CASE("the low bits of the hash spread consecutive keys over buckets", "[tune][tuning_key]") {
  // Hash tables (read_mostly_map, std::unordered_map) take the hash modulo a power of two.
  constexpr std::size_t buckets = 4096;
  std::set<std::uint64_t> used;
  for (std::uint64_t n = 0; n < buckets; ++n) used.insert(key_of({fnv1a("float32"), n}).hash() & (buckets - 1));
  // A random function fills about 63% of the buckets; a weak mix of the low bits fills far fewer.
  CHECK(used.size() > buckets / 2);
}

TEST_CASE("scalar arguments become words by value: integers, bools, enums, floating values", "[tune][tuning_key]") {
  static_assert(key_words());
  CHECK(key_words());
  CHECK(key_word(3.25f) == key_word(3.25));
  CHECK(key_word(static_cast<short>(-2)) == key_word(-2LL));
}

TEST_CASE("element type words are FNV-1a of the type's name, at compile time or at run time", "[tune][tuning_key]") {
  static_assert(fnv1a_vectors());
  CHECK(fnv1a_vectors());
  static_assert(element_type_words());
  CHECK(element_type_words());
  // A buffer that only says its element type at run time gets the same word as one that names it.
  std::vector<float> data(4);
  CHECK(element_type_word(named_buffer{"float32"}) == element_type_word(cotune::host_span<float>(data)));
  CHECK(element_type_word(named_buffer{"float64"}) != element_type_word(cotune::host_span<float>(data)));
}
