#pragma once
/// \file The bodies of cache/local_fill.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cache/local_fill.hpp>

namespace cotune::detail {

COTUNE_DECL local_filler::~local_filler() {
  if (!s_) return;
  if (s_->pid != ::getpid()) {
    (void)s_.release(); // the parent's thread: not ours to join
    return;
  }
  {
    std::unique_lock lock(s_->mutex);
    s_->closing = true;
    s_->deadline = std::chrono::steady_clock::now() + exit_drain_limit;
  }
  s_->wake.notify_all();
  if (s_->thread.joinable()) s_->thread.join();
}

COTUNE_DECL void local_filler::post(std::function<void()> fill) {
  std::unique_lock lock(mutex_);
  if (s_ && s_->pid != ::getpid()) (void)s_.release(); // inherited through fork(): no thread behind it
  if (!s_) {
    s_ = std::make_unique<state>();
    s_->thread = std::thread([s = s_.get()] { run(*s); });
  }
  {
    std::lock_guard queue(s_->mutex);
    s_->tasks.push_back(std::move(fill));
    ++s_->stats.queued;
  }
  s_->wake.notify_all();
}

COTUNE_DECL bool local_filler::wait_idle(std::chrono::milliseconds limit) {
  state* s = current();
  if (!s) return true;
  std::unique_lock lock(s->mutex);
  return s->idle.wait_for(lock, limit, [s] { return s->tasks.empty() && !s->busy; });
}

COTUNE_DECL local_fill_stats local_filler::stats() {
  state* s = current();
  if (!s) return {};
  std::lock_guard lock(s->mutex);
  return s->stats;
}

COTUNE_DECL void local_filler::run(state& s) {
  std::unique_lock lock(s.mutex);
  for (;;) {
    s.wake.wait(lock, [&] { return s.closing || !s.tasks.empty(); });
    if (s.tasks.empty()) break; // closing, nothing left
    if (s.closing && std::chrono::steady_clock::now() > s.deadline) {
      s.stats.dropped += s.tasks.size();
      s.tasks.clear();
      break;
    }
    auto task = std::move(s.tasks.front());
    s.tasks.pop_front();
    s.busy = true;
    lock.unlock();
    bool ok = true;
    try {
      task();
    } catch (...) {
      ok = false;
    }
    task = nullptr; // what it holds is released off the lock too
    lock.lock();
    s.busy = false;
    ++(ok ? s.stats.done : s.stats.failed);
    if (s.tasks.empty()) s.idle.notify_all();
  }
  s.busy = false;
  s.idle.notify_all();
}

} // namespace cotune::detail
