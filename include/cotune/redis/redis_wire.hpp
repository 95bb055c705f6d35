#pragma once
/// \file What cotune's Redis client needs from hiredis, at the wire's level: a reply copied out of
/// hiredis's (`redis_reply`), an owning context, SIGPIPE kept from killing the process, and the one
/// read-only Lua script that reads many entries in one round trip. `redis_backend` builds on it.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <pthread.h>
#include <time.h>

#include <hiredis/hiredis.h>

namespace cotune::redis {

/// A reply from Redis, copied out of hiredis's.
struct redis_reply {
  enum class kind { nil, string, integer, status, error, array };
  kind type = kind::nil;
  std::string str;          ///< string, status or error text
  long long integer = 0;
  std::vector<redis_reply> elements;

  [[nodiscard]] bool is_nil() const noexcept { return type == kind::nil; }
  [[nodiscard]] bool is_error() const noexcept { return type == kind::error; }
  [[nodiscard]] bool is_string() const noexcept { return type == kind::string; }
  [[nodiscard]] bool is_status(std::string_view s) const noexcept { return type == kind::status && str == s; }
};

namespace detail {

struct context_deleter {
  void operator()(redisContext* c) const noexcept {
    if (c) ::redisFree(c);
  }
};
using context_ptr = std::unique_ptr<redisContext, context_deleter>;

[[nodiscard]] COTUNE_DECL timeval to_timeval(std::chrono::milliseconds ms);

[[nodiscard]] COTUNE_DECL redis_reply copy_reply(const redisReply* r);

/// Blocks SIGPIPE in this thread while alive and discards one raised meanwhile: hiredis writes with
/// write(2), and a write to a connection the server closed must fail with EPIPE, not kill the process.
class sigpipe_guard {
public:
  sigpipe_guard();
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;
  ~sigpipe_guard();

private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

/// Reads many keys in one round trip. Per key: the value; nil if absent; -1 for another type; -2
/// when longer than ARGV[1] (checked with STRLEN, so an oversized value is never sent).
inline constexpr std::string_view redis_get_script = R"lua(
local limit = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then
    out[i] = false
  elseif kind ~= 'string' then
    out[i] = -1
  elseif redis.call('STRLEN', key) > limit then
    out[i] = -2
  else
    out[i] = redis.call('GET', key)
  end
end
return out
)lua";

/// True for an error reply that means "no scripting here" (disabled, not permitted, unknown).
[[nodiscard]] inline bool scripting_refused(const redis_reply& r) {
  return r.str.starts_with("NOSCRIPT") || r.str.starts_with("NOPERM") ||
         r.str.find("unknown command") != std::string::npos || r.str.find("disabled") != std::string::npos;
}

} // namespace detail

} // namespace cotune::redis

#if COTUNE_HEADER_ONLY
#include <cotune/redis/redis_wire.ipp>
#endif
