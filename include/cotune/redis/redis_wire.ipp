#pragma once
/// \file The bodies of redis/redis_wire.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/redis_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/redis/redis_wire.hpp>

namespace cotune::redis::detail {

COTUNE_DECL timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

COTUNE_DECL redis_reply copy_reply(const redisReply* r) {
  redis_reply out;
  switch (r->type) {
  case REDIS_REPLY_STRING: out.type = redis_reply::kind::string; break;
  case REDIS_REPLY_STATUS: out.type = redis_reply::kind::status; break;
  case REDIS_REPLY_ERROR: out.type = redis_reply::kind::error; break;
  case REDIS_REPLY_INTEGER: out.type = redis_reply::kind::integer; break;
  case REDIS_REPLY_ARRAY: out.type = redis_reply::kind::array; break;
  default: out.type = redis_reply::kind::nil; break;
  }
  if (r->str && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR))
    out.str.assign(r->str, r->len);
  out.integer = r->integer;
  if (r->type == REDIS_REPLY_ARRAY) {
    out.elements.reserve(r->elements);
    for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy_reply(r->element[i]));
  }
  return out;
}

COTUNE_DECL sigpipe_guard::sigpipe_guard() {
  sigemptyset(&pipe_);
  sigaddset(&pipe_, SIGPIPE);
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
}

COTUNE_DECL sigpipe_guard::~sigpipe_guard() {
  if (!was_pending_) {
    timespec zero{};
    while (::sigtimedwait(&pipe_, nullptr, &zero) > 0) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

} // namespace cotune::redis::detail
