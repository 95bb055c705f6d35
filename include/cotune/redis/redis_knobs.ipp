#pragma once
/// \file The body of redis/redis_knobs.hpp and the group's registration. Header-only, included by that
/// header; with COTUNE_SEPARATE_COMPILATION compiled once, by <cotune/impl/redis_src.hpp> (a member of
/// `cotune::cotune_separate` when the Redis module is built), which every file including the header
/// refers to (so a static link brings it in).

#include <cotune/redis/redis_knobs.hpp>

namespace cotune::redis {

COTUNE_DECL redis_knob_group& redis_knobs() { return knob_group<redis_knob_group>(); }

namespace detail {
/// Registers the Redis knobs during static initialisation of any program that includes this module,
/// so that the knob registry (and `cotune knobs`) lists them before first use.
COTUNE_DECL redis_knob_group& redis_knobs_registered = redis_knobs();
} // namespace detail


COTUNE_DECL std::string redis_endpoint::display() const {
  std::string login;
  if (!user.empty() || !password.empty()) login = user + (password.empty() ? "" : ":***") + "@";
  if (unix_socket) return fmt::format(COTUNE_FMT("unix://{}{}"), login, path);
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format(COTUNE_FMT("redis://{}{}{}{}:{}{}"), login, v6 ? "[" : "", host, v6 ? "]" : "", port,
                     db != 0 ? fmt::format(COTUNE_FMT("/{}"), db) : std::string());
}

} // namespace cotune::redis
namespace cotune::redis::detail {

COTUNE_DECL std::string percent_decode(std::string_view in, std::string_view url_shown) {
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= in.size() ||
        std::from_chars(in.data() + i + 1, in.data() + i + 3, v, 16).ptr != in.data() + i + 3)
      throw knob_error(
          fmt::format(COTUNE_FMT("COTUNE_REDIS_URL='{}': bad percent escape in the login part"), url_shown));
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

} // namespace cotune::redis::detail
namespace cotune::redis {

COTUNE_DECL redis_endpoint parse_redis_url(std::string_view url) {
  // Shown in errors with any password hidden.
  std::string shown(url);
  if (auto at = shown.rfind('@'); at != std::string::npos) {
    auto scheme_end = shown.find("://");
    auto login_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    if (login_start <= at) {
      // user:password@ hides the password; a lone password@ hides it all.
      auto colon = shown.find(':', login_start);
      if (colon != std::string::npos && colon < at) shown.replace(colon + 1, at - colon - 1, "***");
      else shown.replace(login_start, at - login_start, "***");
    }
  }
  auto fail = [&](std::string_view why) {
    return knob_error(
        fmt::format(COTUNE_FMT("COTUNE_REDIS_URL='{}' is not a usable Redis URL: {}; use "
                               "redis://[[user]:password@]host[:port][/db] or unix:///path/to/redis.sock"),
                    shown, why));
  };
  redis_endpoint e;
  std::string_view rest;
  if (url.starts_with("redis://")) rest = url.substr(8);
  else if (url.starts_with("unix://")) {
    e.unix_socket = true;
    rest = url.substr(7);
  } else if (url.starts_with("rediss://")) throw fail("TLS (rediss://) is not supported by hiredis 0.14");
  else throw fail("the scheme must be redis:// or unix://");

  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    auto login = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = login.find(':');
    if (colon == std::string_view::npos) {
      e.password = detail::percent_decode(login, shown); // redis://password@host, as redis-cli reads it
    } else {
      e.user = detail::percent_decode(login.substr(0, colon), shown);
      e.password = detail::percent_decode(login.substr(colon + 1), shown);
    }
  }
  if (e.unix_socket) {
    if (!rest.starts_with("/")) throw fail("a unix:// URL needs an absolute socket path (unix:///run/redis.sock)");
    e.path = std::string(rest);
    return e;
  }
  std::string_view hostport = rest;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    auto db = rest.substr(slash + 1);
    if (!db.empty()) {
      auto [end, ec] = std::from_chars(db.data(), db.data() + db.size(), e.db);
      if (ec != std::errc{} || end != db.data() + db.size() || e.db < 0) throw fail("the database must be a number");
    }
  }
  std::string_view port_text;
  if (hostport.starts_with("[")) {
    auto close = hostport.find(']');
    if (close == std::string_view::npos) throw fail("an IPv6 host needs a closing ']'");
    e.host = std::string(hostport.substr(1, close - 1));
    auto after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(":")) throw fail("expected ':port' after the IPv6 host");
      port_text = after.substr(1);
    }
  } else if (auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
    e.host = std::string(hostport.substr(0, colon));
    port_text = hostport.substr(colon + 1);
  } else {
    e.host = std::string(hostport);
  }
  if (e.host.empty()) throw fail("the host is empty");
  if (!port_text.empty()) {
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), e.port);
    if (ec != std::errc{} || end != port_text.data() + port_text.size() || e.port < 1 || e.port > 65535)
      throw fail("the port must be a number from 1 to 65535");
  }
  return e;
}

} // namespace cotune::redis
