#pragma once
/// \file The bodies of gpu/isolation_pool.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/gpu/isolation_pool.hpp>

namespace cotune::gpu::detail {

COTUNE_DECL isolation_worker::isolation_worker(const worker_kind& kind, int ordinal) : kind_(&kind), ordinal_(ordinal) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw error(fmt::format(COTUNE_FMT("COTUNE_ISOLATE: cannot make the {} isolation worker's socket: {}"),
                            kind.runtime, std::strerror(errno)));
  socket_.reset(sv[0]);
  const cotune::detail::unique_fd child_end(sv[1]);
  started_ = std::chrono::steady_clock::now();
  try {
    process_.emplace("/proc/self/exe", std::vector<std::string>{kind.program},
                     std::vector<std::string>{fmt::format(COTUNE_FMT("{}=3:{}"), kind.variable, ordinal)},
                     child_end.get());
  } catch (const std::system_error& e) {
    throw error(
        fmt::format(COTUNE_FMT("COTUNE_ISOLATE: cannot start the {} isolation worker: {}"), kind.runtime, e.what()));
  }
}

COTUNE_DECL std::optional<std::string> isolation_worker::ready() {
  if (ready_) return std::nullopt;
  if (why_not_) return why_not_;
  frame f = receive_frame(socket_.get(), started_ + worker_start_limit);
  if (f.end == frame::ending::ok && f.tag == tag_ready) {
    ready_ = true;
    start_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    return std::nullopt;
  }
  if (f.end == frame::ending::ok && f.tag == tag_not_ready) why_not_ = f.payload;
  else if (f.end == frame::ending::timed_out)
    why_not_ = fmt::format(COTUNE_FMT("it did not report ready within {} s"), worker_start_limit.count());
  else
    why_not_ = fmt::format(COTUNE_FMT("it ended before reporting ready ({}); is the program's executable built with "
                                      "{} (the worker's entry)?"),
                           reap(), kind_->entry);
  kill();
  return why_not_;
}

COTUNE_DECL std::optional<cotune::detail::isolated_result> isolation_worker::run(const worker_job& job) {
  using cotune::detail::isolated_result;
  isolated_result out;
  const auto t0 = std::chrono::steady_clock::now();
  const auto first_limit = std::chrono::milliseconds(job.timeout_ms > 0 ? job.timeout_ms : 3'600'000) + hang_slack;
  auto deadline = t0 + first_limit;
  if (!send_frame(socket_.get(), tag_job, encode(job))) {
    const int was = pid();
    unsent_ = fmt::format(COTUNE_FMT("pid {}: {}"), was, reap());
    return std::nullopt;
  }
  for (;;) {
    frame f = receive_frame(socket_.get(), deadline);
    if (f.end == frame::ending::timed_out) {
      kill();
      out.end = isolated_result::ending::hung;
      out.detail = fmt::format(
          COTUNE_FMT("still running after {} ms (COTUNE_BENCH_TIMEOUT_MS = {} ms); its isolation worker "
                     "was killed and is replaced"),
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count(),
          job.timeout_ms);
      return out;
    }
    if (f.end == frame::ending::closed) {
      out.end = isolated_result::ending::crashed;
      out.detail = fmt::format(COTUNE_FMT("its isolation worker (pid {}) was {} without replying; it is replaced"),
                               pid(), reap());
      return out;
    }
    if (f.tag == tag_first_run) {
      // The kernel ends: the rest of the benchmark is bounded by its budgets (warm-up, repetitions,
      // the batch estimate), generously, plus the timeout once more.
      const double budget = 4 * (job.bench.warmup_ms + job.bench.rep_ms) + 1000;
      deadline = std::chrono::steady_clock::now() + first_limit + std::chrono::milliseconds(static_cast<long long>(budget));
      continue;
    }
    if (f.tag == tag_values) {
      out.end = isolated_result::ending::returned;
      out.values = decode_values(f.payload);
      return out;
    }
    if (f.tag == tag_failed && !f.payload.empty()) {
      const auto kind = static_cast<worker_failure>(f.payload[0]);
      std::string message = f.payload.substr(1);
      if (kind == worker_failure::timeout) {
        kill();
        out.end = isolated_result::ending::hung;
        out.detail = fmt::format(COTUNE_FMT("{}; its isolation worker was killed and is replaced"), message);
      } else if (kind == worker_failure::unmappable) {
        out.end = isolated_result::ending::refused;
        out.detail =
            fmt::format(COTUNE_FMT("COTUNE_ISOLATE: the {} isolation worker cannot map an argument's memory ({}); "
                                   "candidates are measured in-process"),
                        kind_->runtime, message);
      } else if (kind == worker_failure::context_lost) {
        kill();
        out.end = isolated_result::ending::crashed;
        out.detail = fmt::format(COTUNE_FMT("{} (in its isolation worker, whose {} context it lost; the tuning's own "
                                            "context is untouched and the worker is replaced)"),
                                 message, kind_->runtime);
      } else {
        out.end = isolated_result::ending::threw;
        out.kind = kind == worker_failure::launch ? 'l' : 'e';
        out.detail = std::move(message);
      }
      return out;
    }
    kill();
    out.end = isolated_result::ending::crashed;
    out.detail = fmt::format(COTUNE_FMT("its isolation worker sent a malformed reply (tag {}); it is replaced"),
                             static_cast<int>(f.tag));
    return out;
  }
}

COTUNE_DECL void isolation_worker::kill() noexcept {
  if (process_) process_->kill();
  socket_.reset();
}

COTUNE_DECL std::string isolation_worker::reap() noexcept {
  socket_.reset();
  return process_ ? process_->reap_within(reap_grace) : std::string("gone");
}

COTUNE_DECL cotune::detail::isolated_result isolation_pool::run(int ordinal, const worker_job& job) {
  slot& s = slot_for(ordinal);
  std::lock_guard lock(s.mutex);
  cotune::detail::isolated_result out;
  if (!s.unavailable.empty()) {
    out.end = cotune::detail::isolated_result::ending::refused;
    out.detail = s.unavailable;
    return out;
  }
  std::vector<std::string> unsent; // how each worker the job could not be sent to had ended
  for (;;) {
    if (!s.worker || !s.worker->alive()) {
      try {
        s.worker = std::make_unique<isolation_worker>(*kind_, ordinal);
        s.counted = false;
      } catch (const error& e) {
        return refuse(s, ordinal, e.what());
      }
    }
    if (auto why = s.worker->ready()) return refuse(s, ordinal, *why);
    if (s.worker->start_ms() > 0 && !s.counted) {
      s.counted = true;
      std::lock_guard l(mutex_);
      start_ms_.push_back(s.worker->start_ms());
    }
    if (auto r = s.worker->run(job)) {
      out = std::move(*r);
      break;
    }
    // The worker had ended (or shut its socket) before the job reached it: the candidate is not to
    // blame, a new worker gets the job. A second in a row says something ends workers as they come;
    // then the job is recorded as crashed, so that the tuning goes on without waiting for a third.
    unsent.push_back(s.worker->unsent());
    s.worker.reset();
    {
      std::lock_guard l(mutex_);
      ++replaced_;
    }
    warn_once(
        fmt::format(COTUNE_FMT("COTUNE_ISOLATE: the {} isolation worker for device {} could no longer be sent a job "
                               "({}); it is replaced and the job goes to the new one"),
                    kind_->runtime, ordinal, unsent.back()));
    if (unsent.size() == 2) {
      out.end = cotune::detail::isolated_result::ending::crashed;
      out.detail = fmt::format(COTUNE_FMT("two {} isolation workers in a row could not be sent it ({}; then {}); "
                                          "something ends the workers as they start"),
                               kind_->runtime, unsent[0], unsent[1]);
      return out;
    }
  }
  if (out.end == cotune::detail::isolated_result::ending::refused) warn_once(out.detail);
  if (!s.worker->alive()) {
    // Started at once, so that its cuInit overlaps with whatever the tuning does next.
    try {
      s.worker = std::make_unique<isolation_worker>(*kind_, ordinal);
      s.counted = false;
    } catch (...) {
      s.worker.reset();
    }
    std::lock_guard l(mutex_);
    ++replaced_;
  }
  return out;
}

COTUNE_DECL void isolation_pool::prestart(int ordinal) noexcept {
  try {
    slot& s = slot_for(ordinal);
    std::lock_guard lock(s.mutex);
    if (!s.unavailable.empty() || (s.worker && s.worker->alive())) return;
    s.worker = std::make_unique<isolation_worker>(*kind_, ordinal);
    s.counted = false;
  } catch (...) {
    // run() spawns again and reports why it cannot
  }
}

COTUNE_DECL std::vector<double> isolation_pool::start_times() const {
  std::lock_guard l(mutex_);
  return start_ms_;
}

COTUNE_DECL std::size_t isolation_pool::replaced() const {
  std::lock_guard l(mutex_);
  return replaced_;
}

COTUNE_DECL std::vector<std::string> isolation_pool::take_warnings() {
  std::lock_guard l(mutex_);
  return std::exchange(warnings_, {});
}

COTUNE_DECL void isolation_pool::warn_once(std::string text) {
  std::lock_guard l(mutex_);
  if (std::find(warned_.begin(), warned_.end(), text) != warned_.end()) return;
  warned_.push_back(text);
  warnings_.push_back(std::move(text));
}

COTUNE_DECL isolation_pool::slot& isolation_pool::slot_for(int ordinal) {
  std::lock_guard l(mutex_);
  auto& s = slots_[ordinal];
  if (!s) s = std::make_unique<slot>();
  return *s;
}

COTUNE_DECL cotune::detail::isolated_result isolation_pool::refuse(slot& s, int ordinal, const std::string& why) {
  s.worker.reset();
  s.unavailable =
      fmt::format(COTUNE_FMT("COTUNE_ISOLATE: cannot start a {0} isolation worker for device {1} ({2}); its "
                             "candidates are measured in-process, where a crash or a hang of one takes the "
                             "program's {0} context (or the program) with it"),
                  kind_->runtime, ordinal, why);
  warn_once(s.unavailable);
  cotune::detail::isolated_result out;
  out.end = cotune::detail::isolated_result::ending::refused;
  out.detail = s.unavailable;
  return out;
}
} // namespace cotune::gpu::detail
