#pragma once
/// \file `cotune::basic_remote_cache`: a cache manager over a `RemoteBackend`, backed by a local cache
/// (spec §6.3, without its bugs).
///
/// Differences from Triton's RemoteCacheManager, each deliberate:
/// - a local hit never touches the network (Triton queries the backend on every lookup);
/// - every remote value is framed as a local entry is (cache/entry_frame.hpp: format version, checksum
///   bound to key + file name, and an HMAC-SHA256 under the remote secret when one is set); anything
///   that does not check out is a miss, counted, and never written to the local cache, so a dlopen or
///   a module load only ever sees verified bytes;
/// - groups are stored in the same format as the file cache's, and their children are fetched in one
///   request, so a compiled kernel costs at most two round trips (group, then children);
/// - a tuning result is stored with its winner's binary beside it (cache/remote_companion.hpp), and
///   `get_with_companion` fetches both in one request; what it fetched is written to the local cache
///   on a background thread (cache/local_fill.hpp), after the caller has it;
/// - a read-only client never writes to the remote store;
/// - names are validated, and remote keys are built from validated parts only.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <concepts>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/cache/cache_manager.hpp>
#include <cotune/cache/entry_fault.hpp>
#include <cotune/cache/file_cache.hpp>
#include <cotune/cache/local_fill.hpp>
#include <cotune/cache/remote_backend.hpp>
#include <cotune/cache/remote_companion.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/cache/entry_frame.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/json.hpp>

namespace cotune {

/// Why a remote value was not accepted: remote values are framed like local entries
/// (cache/entry_frame.hpp), and refused for the same faults.
using remote_entry_fault = entry_fault;

namespace detail {

/// A task type used only to ask whether a backend can run blocking work off the caller's thread.
struct remote_probe_task {
  int operator()() const { return 0; }
};

} // namespace detail

/// Optional: the backend runs a blocking callable on its own threads and resumes the awaiting
/// coroutine on its executor (`co_await r.async_run(f)` gives f's result). Enables the cache's
/// async_* members.
template <class R>
concept AsyncRemoteRunner = requires(R& r, detail::remote_probe_task task) { r.async_run(task); };

/// What the remote cache needs of its local cache: a reader and writer constructible from a key.
template <class L>
concept LocalCache = std::constructible_from<L, std::string_view> && ReadableCache<L> && WritableCache<L>;

/// A cache manager that keeps entries in a remote store shared by many machines and serves them from
/// a local cache: lookups try the local cache first, then the remote one, and a verified remote hit
/// is written into the local cache, so `get_file` always gives a local path (a shared object or a
/// cubin loads the same way as from the file cache). `put` writes locally and, unless the backend is
/// read-only, remotely. Remote failures are misses: tuning never fails because the remote store did.
template <RemoteBackend R, LocalCache Local = file_cache>
class basic_remote_cache {
public:
  using backend_type = R;
  using local_type = Local;

  /// Files under `hex_key`, with the process-wide backend `R::shared()`.
  explicit basic_remote_cache(std::string_view hex_key)
    requires SharedRemoteBackend<R>
      : basic_remote_cache(hex_key, R::shared()) {}

  /// Files under `hex_key`, with the given backend (which must outlive this cache).
  basic_remote_cache(std::string_view hex_key, R& backend) : key_(hex_key), local_(hex_key), backend_(&backend) {
    validate_remote_key(key_);
  }

  /// Files under `hex_key` in a local cache of another mode (dump, override): these are local-only,
  /// as in Triton, and never touch the remote store.
  basic_remote_cache(std::string_view hex_key, cache_mode mode)
    requires SharedRemoteBackend<R> && std::constructible_from<Local, std::string_view, cache_mode>
      : key_(hex_key), local_(hex_key, mode), backend_(&R::shared()), remote_(mode == cache_mode::normal) {
    validate_remote_key(key_);
  }

  [[nodiscard]] const std::string& key() const noexcept { return key_; }
  [[nodiscard]] R& backend() const noexcept { return *backend_; }
  [[nodiscard]] const Local& local() const noexcept { return local_; }
  [[nodiscard]] Local& local() noexcept { return local_; }

  /// Local path of a verified entry (fetched from the remote store into the local cache if needed),
  /// or nothing. Throws cache_error for an invalid name.
  [[nodiscard]] std::optional<std::filesystem::path> get_file(std::string_view name) const {
    validate_remote_file_name(name);
    if (auto path = local_.get_file(name)) return path;
    if (auto path = shelved_file(name)) return path;
    if (auto fetched = fetch_one(name)) return std::move(fetched->path);
    return std::nullopt;
  }

  /// Content of a verified entry (local first, then remote; a remote hit is kept locally), or nothing.
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    validate_remote_file_name(name);
    if (auto content = local_.get(name)) return content;
    if (remote_)
      if (auto shelved = detail::companion_shelf::instance().find(backend_, key_, name)) {
        fill_later(name, *shelved, true);
        return shelved;
      }
    if (auto fetched = fetch_one(name)) return std::move(fetched->content);
    return std::nullopt;
  }

  /// `get`, fetching the entry's companion in the same request when the entry is not local: its
  /// verified entries are shelved for the caches of their key (the winner's binary cache) to find
  /// without a round trip. A remote hit is written to the local cache in the background.
  [[nodiscard]] std::optional<std::string> get_with_companion(std::string_view name) const {
    validate_remote_file_name(name);
    if (auto content = local_.get(name)) return content;
    if (!remote_) return std::nullopt;
    const std::string names[] = {std::string(name), detail::companion_name(name)};
    auto found = fetch(names);
    auto entry = found.find(names[0]);
    if (entry == found.end()) return std::nullopt;
    if (auto companion = found.find(names[1]); companion != found.end()) {
      auto decoded = detail::decode_companion(companion->second, detail::sha256_hex(entry->second), backend_->secret());
      if (decoded) detail::companion_shelf::instance().stock(backend_, decoded->key, std::move(decoded->entries));
      else if constexpr (RemoteRefusalCounter<R>) backend_->count_refused();
    }
    fill_later(name, entry->second, false);
    return std::move(entry->second);
  }

  /// `put`, and (unless read-only) `companion` stored remotely beside the entry, first, so that a
  /// reader who finds the entry normally finds its companion. The companion is remote only.
  std::filesystem::path put_with_companion(std::string_view data, std::string_view name,
                                           const remote_companion& companion) {
    validate_remote_file_name(name);
    if (writes_remote()) {
      const std::string cname = detail::companion_name(name);
      const std::string secret = backend_->secret();
      (void)backend_->put(key_, cname,
                          detail::frame_entry(key_, cname,
                                              detail::encode_companion(companion, detail::sha256_hex(data), secret),
                                              secret));
    }
    return put(data, name);
  }

  /// A verified entry held against eviction in the local cache (fetched from the remote store first
  /// if needed), or nothing; see entry_pin.
  [[nodiscard]] auto pin(std::string_view name) const
    requires PinnableCache<Local>
  {
    validate_remote_file_name(name);
    auto held = local_.pin(name);
    if (!held && (shelved_file(name) || fetch_one(name))) held = local_.pin(name);
    return held;
  }

  /// Stores `data` as `name` locally and (unless read-only) remotely; returns the local path. A
  /// remote failure is not an error: the entry is still cached locally.
  std::filesystem::path put(std::string_view data, std::string_view name) {
    validate_remote_file_name(name);
    auto path = local_.put(data, name);
    if (writes_remote()) (void)backend_->put(key_, name, detail::frame_entry(key_, name, data, backend_->secret()));
    return path;
  }

  /// The children of group `name` that are present and valid (fetched in one remote request when not
  /// local), or nothing if there is no such group. A group naming an invalid file is foreign: nothing.
  [[nodiscard]] std::optional<cache_group> get_group(std::string_view name) const {
    auto text = get(group_file_name(name));
    if (!text) return std::nullopt;
    auto children = parse_group(*text);
    if (!children) return std::nullopt;
    cache_group group;
    std::vector<std::string> missing;
    for (auto& child : *children) {
      if (auto path = local_.get_file(child)) group.emplace(child, *path);
      else missing.push_back(child);
    }
    if (!missing.empty() && remote_) {
      for (auto& [child, content] : fetch(missing)) group.emplace(child, local_.put(content, child));
    }
    return group;
  }

  /// Records a group of children (by name; their content is stored by `put`). Same format as the
  /// file cache's groups: `{"children": [names]}` in `__grp__<name>.json`.
  std::filesystem::path put_group(std::string_view name, const cache_group& children) {
    json_writer w;
    w.begin_object().key("children").begin_array();
    for (const auto& [child, path] : children) {
      validate_remote_file_name(child);
      w.value(child);
    }
    return put(std::move(w.end_array().end_object()).take(), group_file_name(name));
  }

  /// `get_file` run off the caller's thread (on the backend's pool); resumes on the caller's executor.
  [[nodiscard]] auto async_get_file(std::string_view name) const
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run([self = *this, name = std::string(name)] { return self.get_file(name); });
  }
  /// `get` run off the caller's thread.
  [[nodiscard]] auto async_get(std::string_view name) const
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run([self = *this, name = std::string(name)] { return self.get(name); });
  }
  /// `get_with_companion` run off the caller's thread.
  [[nodiscard]] auto async_get_with_companion(std::string_view name) const
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run([self = *this, name = std::string(name)] { return self.get_with_companion(name); });
  }
  /// `put_with_companion` run off the caller's thread (the data is copied).
  [[nodiscard]] auto async_put_with_companion(std::string_view data, std::string_view name, remote_companion companion)
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run(
        [self = *this, data = std::string(data), name = std::string(name), companion = std::move(companion)]() mutable {
          return self.put_with_companion(data, name, companion);
        });
  }
  /// Removes `names` from the remote store, not from the local cache (whose eviction takes them in time):
  /// what a tuning no longer needs once its result is stored, its journal, is not kept for ever in a
  /// shared store that evicts nothing. A remote failure is not an error; a backend that cannot delete
  /// keeps them.
  void forget_remote(std::vector<std::string> names) {
    if constexpr (requires(R & b, std::span<const std::string> n) { b.erase(std::string_view{}, n); })
      if (writes_remote()) (void)backend_->erase(key_, names);
  }
  /// `forget_remote` run off the caller's thread.
  [[nodiscard]] auto async_forget_remote(std::vector<std::string> names) requires AsyncRemoteRunner<R> {
    return backend_->async_run([self = *this, names = std::move(names)]() mutable {
      self.forget_remote(std::move(names));
      return true;
    });
  }
  /// `put` run off the caller's thread (the data is copied).
  [[nodiscard]] auto async_put(std::string_view data, std::string_view name)
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run([self = *this, data = std::string(data), name = std::string(name)]() mutable {
      return self.put(data, name);
    });
  }
  /// `get_group` run off the caller's thread.
  [[nodiscard]] auto async_get_group(std::string_view name) const
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run([self = *this, name = std::string(name)] { return self.get_group(name); });
  }
  /// `put_group` run off the caller's thread.
  [[nodiscard]] auto async_put_group(std::string_view name, cache_group children)
    requires AsyncRemoteRunner<R>
  {
    return backend_->async_run([self = *this, name = std::string(name), children = std::move(children)]() mutable {
      return self.put_group(name, children);
    });
  }

private:
  static std::string group_file_name(std::string_view name) {
    validate_remote_file_name(name);
    return "__grp__" + std::string(name) + ".json";
  }

  /// Children listed by a group file, or nothing if it is corrupt or names an invalid file.
  static std::optional<std::vector<std::string>> parse_group(const std::string& text) {
    simdjson::dom::parser parser;
    simdjson::dom::object root;
    simdjson::dom::array list;
    if (parser.parse(text).get(root) != simdjson::SUCCESS || root["children"].get_array().get(list) != simdjson::SUCCESS)
      return std::nullopt;
    std::vector<std::string> children;
    for (auto child : list) {
      std::string_view child_name;
      if (child.get_string().get(child_name) != simdjson::SUCCESS) return std::nullopt;
      try {
        validate_remote_file_name(child_name);
      } catch (const cache_error&) {
        return std::nullopt;
      }
      children.emplace_back(child_name);
    }
    return children;
  }

  /// Writes a fetched entry to the local cache on the background thread; `shelved`: then takes it off
  /// the companion shelf. A failed write is counted there (local_fills()), not thrown.
  void fill_later(std::string_view name, std::string content, bool shelved) const {
    detail::local_filler::instance().post(
        [local = local_, store = static_cast<const void*>(backend_), key = key_, name = std::string(name),
         content = std::move(content), shelved]() mutable {
          struct unshelve {
            const void* store;
            const std::string& key;
            const std::string& name;
            bool on;
            ~unshelve() {
              if (on) detail::companion_shelf::instance().remove(store, key, name);
            }
          } after{store, key, name, shelved};
          (void)local.put(content, name);
        });
  }

  /// A shelved companion entry written to the local cache now (a caller that needs a local file
  /// cannot wait for the background); its path, or nothing if none is shelved.
  std::optional<std::filesystem::path> shelved_file(std::string_view name) const {
    if (!remote_) return std::nullopt;
    auto& shelf = detail::companion_shelf::instance();
    auto shelved = shelf.find(backend_, key_, name);
    if (!shelved) return std::nullopt;
    auto path = local_.put(*shelved, name);
    shelf.remove(backend_, key_, name);
    return path;
  }

  [[nodiscard]] bool writes_remote() const { return remote_ && !backend_->read_only(); }

  /// Fetches `names` in one request and returns the verified contents; refused values are counted.
  remote_values fetch(std::span<const std::string> names) const {
    remote_values found = backend_->get(key_, names);
    const std::string secret = backend_->secret();
    remote_values accepted;
    for (auto& [name, value] : found) {
      auto checked = detail::unframe(key_, name, value, secret);
      if (!checked) {
        if constexpr (RemoteRefusalCounter<R>) backend_->count_refused();
        continue;
      }
      accepted.emplace(name, std::string(checked.payload));
    }
    return accepted;
  }

  struct fetched_entry {
    std::filesystem::path path; ///< where it now is in the local cache
    std::string content;
  };

  /// Fetches one name; a verified hit is written to the local cache.
  std::optional<fetched_entry> fetch_one(std::string_view name) const {
    if (!remote_) return std::nullopt;
    const std::string names[] = {std::string(name)};
    auto found = fetch(names);
    auto it = found.find(name);
    if (it == found.end()) return std::nullopt;
    auto path = local_.put(it->second, name);
    return fetched_entry{std::move(path), std::move(it->second)};
  }

  std::string key_;
  mutable Local local_; // lookups fill it with verified remote hits
  R* backend_;
  bool remote_ = true;
};

} // namespace cotune
