#pragma once
/// \file `cotune::binary_cache`: compiled binaries of every backend, stored through a CacheManager (the
/// same one the tuner keeps its results in, so a Redis-backed tuner shares both). One key recipe for
/// all backends: SHA-256 over cotune's version and cache format, the backend's `binary_recipe`, and
/// the set cache-invalidating knobs. The Triton counterpart is the cache inside compile_module_from_src.
///
///     cotune::host_backend backend;
///     cotune::binary_cache<cotune::host_backend> binaries(backend);
///     auto bin = binaries.get_or_compile(kernel, cfg, backend.devices()[0]);
///     auto fn = binaries.load(bin, kernel, cfg, backend.devices()[0]);

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/backend/backend.hpp>
#include <cotune/cache/cache_manager.hpp>
#include <cotune/cache/remote_companion.hpp>
#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/kernel_source.hpp>
#include <cotune/core/version.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/knobs/knob.hpp>

namespace cotune {

/// The default cache, named here only as a default argument (tune/ names no concrete cache:
/// <cotune/defaults.hpp>, which <cotune/cotune.hpp> includes, defines it).
class file_cache;

namespace detail {
/// A binary's meta entry: the backend's meta text and the image's digest, written together so that an
/// image and a meta from two different writes (or a torn pair) never combine into a binary.
struct binary_meta {
  std::string meta;
  std::string image_sha256; ///< hex

  [[nodiscard]] std::string json() const {
    json_writer w;
    w.begin_object().field("image_sha256", image_sha256).field("meta", meta).end_object();
    return w.str();
  }
  /// Nothing unless `text` is a meta entry with both fields.
  [[nodiscard]] static std::optional<binary_meta> from_json(std::string_view text);
};
} // namespace detail

/// A binary and where it came from.
template <class Binary>
struct cached_binary {
  Binary binary;
  bool from_cache = false;  ///< found in the cache rather than compiled now
  std::string key;          ///< the hex key it is stored under
  std::string not_cached{}; ///< why the cache could not take it (it still loads: see binary_image::file)
};

/// When the cache could not take some of `binaries` (they were loaded from a private location
/// instead), a warning saying so: the tuning is unharmed, but the next run will compile them again.
template <class Binary>
[[nodiscard]] std::optional<std::string> uncached_warning(const std::vector<std::optional<cached_binary<Binary>>>& binaries) {
  std::size_t uncached = 0, built = 0;
  std::string_view why;
  for (const auto& b : binaries) {
    if (!b) continue;
    ++built;
    if (!b->not_cached.empty() && !uncached++) why = b->not_cached;
  }
  if (!uncached) return std::nullopt;
  return fmt::format("{} of {} compiled binaries could not be stored in the cache ({}); they were loaded from a private "
                     "temporary location, and the next run will compile them again",
                     uncached, built, why);
}

/// Binaries of backend `B` in `Cache`. Thread-safe: every call opens the key's entries anew. A cache
/// that cannot be read is a miss; one that cannot be written never fails a compile (the binary says
/// why in `not_cached`, and a backend that loads from files gets a process-private one).
template <Backend B, CacheManager Cache = file_cache>
class binary_cache {
public:
  using binary_type = typename B::binary;
  using entry = cached_binary<binary_type>;

  /// `backend` must outlive the cache.
  explicit binary_cache(const B& backend) noexcept : backend_(&backend) {}

  /// The hex key of `k` under `c` for `d`.
  [[nodiscard]] std::string key(const kernel_source& k, const config& c, const typename B::device& d) const {
    return key_of(backend_->binary_key(k, c, d));
  }

  /// The backend's prebuilt binary (LoadsPrebuilt: not stored, `key` empty), else the cached binary,
  /// or the one compiled now (and stored). Compile failures propagate
  /// (compile_error, timeout_error, ...); cache failures never do.
  [[nodiscard]] entry get_or_compile(const kernel_source& k, const config& c, const typename B::device& d,
                                     std::stop_token stop = {}) const {
    if constexpr (!caches_binaries()) return {compile(k, c, d, stop), false, {}};
    if constexpr (LoadsPrebuilt<B>) // built ahead of time: nothing to compile, nothing to store
      if (auto bin = backend_->prebuilt(k, c, d)) return {*std::move(bin), false, {}};
    const binary_recipe recipe = backend_->binary_key(k, c, d);
    const std::string hex = key_of(recipe);
    std::optional<Cache> cache;
    std::string trouble;
    try {
      cache.emplace(hex);
      if (auto hit = read(*cache, recipe)) return {*std::move(hit), true, hex};
    } catch (const cache_error& e) {
      trouble = e.what();
      cache.reset();
    }
    return store(cache, recipe, hex, compile(k, c, d, stop), std::move(trouble));
  }

  /// The entries of `c`'s binary for `d`, read from the local part of the cache, to be stored beside a
  /// tuning result whose winner it is (cache/remote_companion.hpp: a reader then fetches the result
  /// and the binary in one request). Nothing for a cache that keeps no companions, or when an entry
  /// is not local; gathering one never fails a tuning.
  [[nodiscard]] std::optional<remote_companion> companion(const kernel_source& k, const config& c,
                                                          const typename B::device& d) const {
    if constexpr (!CompanionCache<Cache> || !caches_binaries()) {
      return std::nullopt;
    } else {
      try {
        if constexpr (LoadsPrebuilt<B>)
          if (backend_->prebuilt(k, c, d)) return std::nullopt; // every reader has it in its own file
        const binary_recipe recipe = backend_->binary_key(k, c, d);
        remote_companion out{key_of(recipe), {}};
        const Cache cache(out.key);
        std::vector<std::string> names;
        if (recipe.has_meta) names.push_back(meta_file(recipe));
        names.push_back(recipe.file);
        for (auto& name : names) {
          auto content = cache.local().get(name);
          if (!content) return std::nullopt;
          out.entries.emplace_back(std::move(name), *std::move(content));
        }
        return out;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }

  /// Loads `bin` on `d`. A binary from the cache that does not load is compiled again and replaced,
  /// once, transparently (as compile_module_from_src does); the second failure propagates.
  [[nodiscard]] typename B::function load(const entry& bin, const kernel_source& k, const config& c,
                                          const typename B::device& d) const {
    if (!bin.from_cache) return backend_->load(bin.binary, k, c, d);
    try {
      return backend_->load(bin.binary, k, c, d);
    } catch (const out_of_resources&) {
      throw; // the kernel's own limits, not a damaged binary
    } catch (const launch_error&) {
      const binary_recipe recipe = backend_->binary_key(k, c, d);
      std::optional<Cache> cache;
      std::string trouble;
      try {
        cache.emplace(bin.key);
      } catch (const cache_error& e) {
        trouble = e.what();
      }
      auto rebuilt = store(cache, recipe, bin.key, compile(k, c, d, {}), std::move(trouble));
      return backend_->load(rebuilt.binary, k, c, d);
    }
  }

private:
  [[nodiscard]] static std::string key_of(const binary_recipe& recipe) {
    detail::sha256_hasher h;
    h.field("cotune-binary").field(version).field(std::to_string(cache_format_version)).field(recipe.backend);
    h.field(recipe.file).field(std::to_string(recipe.ingredients.size()));
    for (const auto& i : recipe.ingredients) h.field(i);
    h.field(knob_registry::instance().invalidating_text());
    return detail::to_hex(h.digest());
  }

  [[nodiscard]] binary_type compile(const kernel_source& k, const config& c, const typename B::device& d,
                                    std::stop_token stop) const {
    if constexpr (StoppableCompiler<B>) return backend_->compile(k, c, d, stop);
    else return backend_->compile(k, c, d);
  }

  [[nodiscard]] static constexpr bool caches_binaries() {
    if constexpr (DeclaresBinaryCaching<B>) return B::caches_binaries;
    else return true;
  }

  [[nodiscard]] static constexpr bool loads_from_file() {
    if constexpr (DeclaresFileLoading<B>) return B::loads_from_file;
    else return false;
  }

  /// The meta entry holds the backend's meta text and the image's digest: an image and a meta from
  /// two different writes (or a torn pair) never combine into a binary.
  static std::string meta_file(const binary_recipe& recipe) { return recipe.file + ".meta"; }

  /// The stored binary if its entries are present, agree and decode; anything else is a miss.
  [[nodiscard]] std::optional<binary_type> read(const Cache& cache, const binary_recipe& recipe) const {
    binary_image img;
    std::string digest;
    if (recipe.has_meta) {
      auto meta = cache.get(meta_file(recipe));
      if (!meta) return std::nullopt;
      auto read = detail::binary_meta::from_json(*meta);
      if (!read) return std::nullopt;
      img.meta = std::move(read->meta);
      digest = std::move(read->image_sha256);
    }
    if (digest.empty() && loads_from_file()) {
      if (!locate(cache, recipe.file, img)) return std::nullopt;
    } else {
      auto bytes = cache.get(recipe.file);
      if (!bytes || (!digest.empty() && detail::sha256_hex(*bytes) != digest)) return std::nullopt;
      img.bytes = *std::move(bytes);
      if (loads_from_file()) (void)locate(cache, recipe.file, img);
    }
    return backend_->from_image(std::move(img));
  }

  /// Points `img` at the verified local file of entry `name`, pinned (kept from eviction for as long as
  /// the image's `hold` lives) where the cache can pin. False if there is no such entry.
  static bool locate(const Cache& cache, const std::string& name, binary_image& img) {
    if constexpr (PinnableCache<Cache>) {
      auto held = cache.pin(name);
      if (!held) return false;
      img.file = held->path();
      img.hold = std::make_shared<std::remove_cvref_t<decltype(*held)>>(*std::move(held));
      return true;
    } else {
      auto file = cache.get_file(name);
      if (!file) return false;
      img.file = *std::move(file);
      return true;
    }
  }

  /// Stores a fresh binary (image first, meta last: a reader that finds the meta finds the image),
  /// and hands back the binary as loaded from where it now lies.
  [[nodiscard]] entry store(std::optional<Cache>& cache, const binary_recipe& recipe, const std::string& hex,
                            binary_type bin, std::string trouble) const {
    binary_image img = backend_->to_image(bin);
    if (cache) {
      try {
        img.file = cache->put(img.bytes, recipe.file);
        if constexpr (PinnableCache<Cache>)
          if (loads_from_file() && !locate(*cache, recipe.file, img))
            img.file.clear(); // evicted already (a tiny size limit, another process's sweep): load the bytes
        if (recipe.has_meta) {
          cache->put(detail::binary_meta{img.meta, detail::sha256_hex(img.bytes)}.json(), meta_file(recipe));
        }
        if (auto stored = backend_->from_image(std::move(img))) return {*std::move(stored), false, hex};
        throw error(fmt::format("the {} backend cannot read back the image it made for '{}'", recipe.backend,
                                recipe.file));
      } catch (const cache_error& e) {
        trouble = e.what();
      }
    }
    if (trouble.empty()) trouble = "no cache";
    return {std::move(bin), false, hex, std::move(trouble)};
  }

  const B* backend_;
};

} // namespace cotune

#if COTUNE_HEADER_ONLY
#include <cotune/tune/binary_cache.ipp>
#endif
