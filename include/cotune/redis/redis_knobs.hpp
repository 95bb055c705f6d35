#pragma once
/// \file `cotune::redis::redis_knobs()`: the settings of the Redis remote cache and lease, each bound to
/// an environment variable, and the Redis URL format they use.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include <cotune/cache/remote_backend.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/knobs/knob.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::redis {

/// Where a Redis server listens and how to log in, parsed from a URL.
struct redis_endpoint {
  bool unix_socket = false; ///< `unix://` URL: `path` is used, host and port are not
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string path;     ///< Unix socket path
  std::string user;     ///< ACL user (Redis 6+); empty = the default user
  std::string password; ///< empty = no AUTH
  int db = 0;           ///< SELECTed after connecting when not 0

  /// The URL without its password, for messages and logs.
  [[nodiscard]] std::string display() const;
  friend bool operator==(const redis_endpoint&, const redis_endpoint&) = default;
};

namespace detail {

[[nodiscard]] COTUNE_DECL std::string percent_decode(std::string_view in, std::string_view url_shown);

} // namespace detail

/// Parses `redis://[[user]:password@]host[:port][/db]` (IPv6 hosts in brackets) or `unix:///path`.
/// Throws knob_error naming the problem. TLS (`rediss://`) is refused: hiredis 0.14 has no TLS.
[[nodiscard]] COTUNE_DECL redis_endpoint parse_redis_url(std::string_view url);

/// The Redis remote cache's settings.
struct redis_knob_group {
  // Redis's own default port on this machine: a process with no Redis configured then costs one
  // refused loopback connect (microseconds), after which the remote layer backs off.
  knob<std::string> url{{.name = "redis.url", .env = "COTUNE_REDIS_URL", .fallback = "redis://127.0.0.1:6379",
                         .doc = "the Redis server of the remote cache and lease: redis://[[user]:password@]host[:port][/db] "
                                "or unix:///path",
                         .validate = [](const std::string& v) { (void)parse_redis_url(v); }}};
  // One name per project keeps cotune's keys apart from others' in a shared server; versioned
  // layouts live in the envelope, not the prefix.
  knob<std::string> prefix{{.name = "redis.prefix", .env = "COTUNE_REDIS_PREFIX", .fallback = "cotune",
                            .doc = "first part of every remote key (<prefix>:<hex key>:<file>); [A-Za-z0-9_.-], at most 64",
                            .validate = [](const std::string& v) {
                              if (!is_valid_remote_prefix(v))
                                throw knob_error(fmt::format("COTUNE_REDIS_PREFIX='{}' is refused: use 1 to 64 "
                                                             "characters of [A-Za-z0-9_.-]",
                                                             cotune::detail::shown_name(v)));
                            }}};
  // 100 ms: a TCP handshake takes ~50 us on loopback and well under 1 ms inside a data centre, so
  // 100 ms is >100x a healthy connect, and it is the whole cost of an unreachable server (a dropped
  // SYN) to a process, paid once per backoff period.
  knob<std::int64_t> connect_timeout_ms{{.name = "redis.connect_timeout_ms", .env = "COTUNE_REDIS_CONNECT_TIMEOUT_MS",
                                         .fallback = 100,
                                         .doc = "a connect to Redis taking longer fails (a miss) and starts the backoff",
                                         .validate = cotune::detail::at_least<std::int64_t>(1, "COTUNE_REDIS_CONNECT_TIMEOUT_MS")}};
  // 1 s: a healthy server answers within a millisecond, and within tens to hundreds of ms when another
  // client's slow command or a background save holds it up; the timeout bounds each wait for the
  // server to make progress (not a whole transfer), so only a stalled server or network reaches it.
  knob<std::int64_t> timeout_ms{{.name = "redis.timeout_ms", .env = "COTUNE_REDIS_TIMEOUT_MS", .fallback = 1000,
                                 .doc = "a Redis command waiting longer than this for the server fails (a miss) and "
                                        "starts the backoff",
                                 .validate = cotune::detail::at_least<std::int64_t>(1, "COTUNE_REDIS_TIMEOUT_MS")}};
  // 60 s: a Redis restart or failover takes seconds to a minute; retrying more often would spend a
  // timeout per retry for nothing, while running a minute on local caches only costs a few misses.
  knob<std::int64_t> backoff_ms{{.name = "redis.backoff_ms", .env = "COTUNE_REDIS_BACKOFF_MS", .fallback = 60000,
                                 .doc = "after a failed connect or command, Redis calls are skipped (misses, no "
                                        "writes) for this long; 0 = retry at the next call",
                                 .validate = cotune::detail::at_least<std::int64_t>(0, "COTUNE_REDIS_BACKOFF_MS")}};
  // 64 MiB: single-architecture cubins of large CUTLASS-style GEMMs are a few MiB and host shared
  // objects well under 1 MiB, so this leaves >10x headroom while bounding what a hostile or broken
  // entry can make a client allocate.
  knob<std::int64_t> max_value_bytes{{.name = "redis.max_value_bytes", .env = "COTUNE_REDIS_MAX_VALUE_BYTES",
                                      .fallback = std::int64_t(64) << 20,
                                      .doc = "larger remote values are neither read (a miss, counted as refused) "
                                             "nor written",
                                      .validate = cotune::detail::at_least<std::int64_t>(1, "COTUNE_REDIS_MAX_VALUE_BYTES")}};
  // Unset by default: signing needs a secret shared by every client, which only the deployment knows.
  knob<std::optional<std::string>> secret{{.name = "redis.secret", .env = "COTUNE_REMOTE_SECRET",
                                           .doc = "shared secret: remote entries are signed (HMAC-SHA256) and unsigned or "
                                                  "wrongly signed ones are refused; unset = entries are only checksummed",
                                           .secret = true}};
  // Off by default: a client that tunes should share what it tuned.
  knob<bool> read_only{{.name = "redis.read_only", .env = "COTUNE_REDIS_READ_ONLY", .fallback = false,
                        .doc = "only read from Redis: never store entries and never take tuning leases"}};
  // 15 s: the holder renews every third of it, so a renewal can stall a whole operation timeout
  // (1 s) and still leave a second chance before expiry; a crashed holder delays the others by at
  // most 15 s, small next to a tuning run.
  knob<std::int64_t> lease_ms{{.name = "redis.lease_ms", .env = "COTUNE_REDIS_LEASE_MS", .fallback = 15000,
                               .doc = "lifetime of a tuning lease; the holder renews it every third of this, and others "
                                      "take over this long after a holder dies",
                               .validate = cotune::detail::at_least<std::int64_t>(30, "COTUNE_REDIS_LEASE_MS")}};
  // 5 min: an exhaustive tuning of a large GEMM space (hundreds of candidates) takes minutes; past
  // that, tuning locally is cheaper than waiting on.
  knob<std::int64_t> lease_wait_ms{{.name = "redis.lease_wait_ms", .env = "COTUNE_REDIS_LEASE_WAIT_MS",
                                    .fallback = 300000,
                                    .doc = "how long a process waits for another's tuning of the same key before it "
                                           "tunes itself; 0 = never wait",
                                    .validate = cotune::detail::at_least<std::int64_t>(0, "COTUNE_REDIS_LEASE_WAIT_MS")}};
};

/// The process's Redis knobs (registered with the knob registry on first use).
[[nodiscard]] COTUNE_DECL redis_knob_group& redis_knobs();

#if !COTUNE_HEADER_ONLY
namespace detail {
// With COTUNE_SEPARATE_COMPILATION the group and its registration are one object of the static library
// (impl/redis_src.hpp): every file that includes this header refers to it, so that a link brings it in
// and the knobs are registered before `main`, as header-only, even in a program that never reads them.
[[gnu::used]] static redis_knob_group& (*const redis_knobs_link)() = &redis_knobs;
} // namespace detail
#endif

} // namespace cotune::redis

#if COTUNE_HEADER_ONLY
#include <cotune/redis/redis_knobs.ipp>
#endif
