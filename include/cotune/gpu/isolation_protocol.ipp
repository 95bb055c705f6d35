#pragma once
/// \file The bodies of gpu/isolation_protocol.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/fork_process.hpp>
#include <cotune/gpu/isolation_protocol.hpp>

namespace cotune::gpu::detail {

COTUNE_DECL std::string encode(const worker_job& j) {
  wire_writer w;
  w.put(static_cast<std::uint8_t>(j.timed)).put_text(j.image).put_text(j.symbol).put(j.grid).put(j.block);
  w.put(j.shared_bytes).put(j.timeout_ms).put(j.flush_factor).put(j.batch_below_us).put(static_cast<std::uint8_t>(j.graph));
  w.put(j.bench.warmup_ms).put(j.bench.rep_ms).put(static_cast<std::uint64_t>(j.bench.quantiles.size()));
  for (double q : j.bench.quantiles) w.put(q);
  w.put(static_cast<std::int32_t>(j.bench.mode));
  put_optional(w, j.bench.noise_target);
  put_optional(w, j.bench.min_samples);
  put_optional(w, j.bench.capturable);
  put_optional(w, j.bench.required_samples);
  w.put(static_cast<std::uint64_t>(j.params.size()));
  for (const auto& p : j.params) {
    w.put(static_cast<std::uint8_t>(p.device));
    if (!p.device) {
      w.put_text(p.bytes);
      continue;
    }
    w.put(p.handle).put(p.offset).put(p.extent);
    w.put(static_cast<std::uint8_t>(p.zero)).put(static_cast<std::uint8_t>(p.restore));
    w.put(static_cast<std::uint8_t>(p.poison));
  }
  return w.take();
}

COTUNE_DECL worker_job decode_job(std::string_view bytes) {
  wire_reader r(bytes);
  worker_job j;
  j.timed = r.get<std::uint8_t>() != 0;
  j.image = r.get_text();
  j.symbol = r.get_text();
  j.grid = r.get<std::array<std::uint32_t, 3>>();
  j.block = r.get<std::array<std::uint32_t, 3>>();
  j.shared_bytes = r.get<std::uint32_t>();
  j.timeout_ms = r.get<std::int64_t>();
  j.flush_factor = r.get<double>();
  j.batch_below_us = r.get<double>();
  j.graph = r.get<std::uint8_t>() != 0;
  j.bench.warmup_ms = r.get<double>();
  j.bench.rep_ms = r.get<double>();
  const auto nq = r.get<std::uint64_t>();
  if (nq > 64) throw error("isolation worker protocol: too many quantiles");
  for (std::uint64_t i = 0; i < nq; ++i) j.bench.quantiles.push_back(r.get<double>());
  const auto mode = r.get<std::int32_t>();
  j.bench.mode = static_cast<return_mode>(mode);
  j.bench.noise_target = get_optional<double>(r);
  j.bench.min_samples = get_optional<std::size_t>(r);
  j.bench.capturable = get_optional<bool>(r);
  j.bench.required_samples = get_optional<std::size_t>(r);
  const auto np = r.get<std::uint64_t>();
  if (np > 4096) throw error("isolation worker protocol: too many kernel arguments");
  for (std::uint64_t i = 0; i < np; ++i) {
    worker_param p;
    p.device = r.get<std::uint8_t>() != 0;
    if (!p.device) {
      p.bytes = r.get_text();
    } else {
      p.handle = r.get<std::array<char, 64>>();
      p.offset = r.get<std::uint64_t>();
      p.extent = r.get<std::uint64_t>();
      p.zero = r.get<std::uint8_t>() != 0;
      p.restore = r.get<std::uint8_t>() != 0;
      p.poison = r.get<std::uint8_t>() != 0;
    }
    j.params.push_back(std::move(p));
  }
  if (!r.done()) throw error("isolation worker protocol: trailing bytes after a job");
  return j;
}

COTUNE_DECL std::string encode_values(const std::vector<double>& v) {
  wire_writer w;
  w.put(static_cast<std::uint64_t>(v.size()));
  for (double x : v) w.put(x);
  return w.take();
}

COTUNE_DECL std::vector<double> decode_values(std::string_view bytes) {
  wire_reader r(bytes);
  const auto n = r.get<std::uint64_t>();
  if (n > 1024) throw error("isolation worker protocol: too many values");
  std::vector<double> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(r.get<double>());
  if (!r.done()) throw error("isolation worker protocol: trailing bytes after values");
  return v;
}

COTUNE_DECL std::optional<std::pair<int, int>> parse_worker_env(std::string_view v) {
  const auto colon = v.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= v.size()) return std::nullopt;
  auto number = [](std::string_view s) -> std::optional<int> {
    if (s.size() > 9) return std::nullopt;
    int n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  };
  auto fd = number(v.substr(0, colon)), ordinal = number(v.substr(colon + 1));
  if (!fd || !ordinal) return std::nullopt;
  return std::pair<int, int>{*fd, *ordinal};
}

COTUNE_DECL bool send_frame(int fd, char tag, std::string_view payload) {
  // MSG_NOSIGNAL: a worker that is gone (killed between the pool's alive() check and this job, or the OOM
  // killer's pick) is a false return, not a SIGPIPE that ends the tuning's process.
  return cotune::detail::fork_process::write_record(fd, tag, payload.size(), payload, MSG_NOSIGNAL);
}

COTUNE_DECL frame receive_frame(int fd, std::chrono::steady_clock::time_point deadline) {
  frame f;
  auto wait = [&]() -> bool {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) return false;
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) return true;
    }
  };
  if (!wait()) {
    f.end = frame::ending::timed_out;
    return f;
  }
  char head[9];
  if (!cotune::detail::fork_process::read_all(fd, head, sizeof head)) return f; // closed
  std::uint64_t size = 0;
  std::memcpy(&size, head + 1, sizeof size);
  if (size > (std::uint64_t{1} << 32)) return f;
  f.payload.resize(size);
  if (size && !cotune::detail::fork_process::read_all(fd, f.payload.data(), size)) return f;
  f.tag = head[0];
  f.end = frame::ending::ok;
  return f;
}

COTUNE_DECL std::string wire_reader::get_text() {
  const auto n = get<std::uint64_t>();
  need(n);
  std::string s(in_.substr(0, n));
  in_.remove_prefix(n);
  return s;
}

} // namespace cotune::gpu::detail
