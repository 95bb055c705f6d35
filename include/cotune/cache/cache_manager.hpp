#pragma once
/// \file The `CacheManager` concept: files under one key (spec §6.1).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <concepts>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cotune {

/// A group: child file name -> local path.
using cache_group = std::map<std::string, std::filesystem::path>;

/// Reads entries: `get_file` gives a local path to a verified entry, `get` its content.
template <class C>
concept ReadableCache = requires(const C& c, std::string_view name) {
  { c.get_file(name) } -> std::same_as<std::optional<std::filesystem::path>>;
  { c.get(name) } -> std::same_as<std::optional<std::string>>;
};

/// Writes entries: `put(data, name)` stores `data` and returns its local path.
template <class C>
concept WritableCache = requires(C& c, std::string_view data, std::string_view name) {
  { c.put(data, name) } -> std::same_as<std::filesystem::path>;
};

/// Groups of entries stored and found together.
template <class C>
concept GroupCache = requires(C& c, const C& cc, std::string_view name, const cache_group& group) {
  { cc.get_group(name) } -> std::same_as<std::optional<cache_group>>;
  { c.put_group(name, group) } -> std::same_as<std::filesystem::path>;
};

/// Entries can be pinned: `pin(name)` gives a handle to a verified entry (or nothing), with `path()`,
/// and eviction never removes the entry while the handle lives (a process holds one for as long as it
/// uses what it loaded from the entry).
template <class C>
concept PinnableCache = requires(const C& c, std::string_view name) {
  { c.pin(name).has_value() } -> std::same_as<bool>;
  { c.pin(name)->path() } -> std::convertible_to<std::filesystem::path>;
};

/// A cache manager: constructed from a hex key (a SHA-256 digest), it reads and writes the files
/// filed under that key. `file_cache` and `remote_cache` satisfy it; users may bring their own.
template <class C>
concept CacheManager = std::constructible_from<C, std::string_view> && ReadableCache<C> && WritableCache<C> &&
                       GroupCache<C>;

} // namespace cotune
