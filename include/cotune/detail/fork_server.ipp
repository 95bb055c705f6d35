#pragma once
/// \file The bodies of detail/fork_server.hpp's non-template functions (compiled once with
/// COTUNE_SEPARATE_COMPILATION, by impl/src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/detail/fork_server.hpp>

namespace cotune::detail {

COTUNE_DECL int above_standard_streams(int fd) {
  if (fd < 0 || fd >= 3) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

COTUNE_DECL fork_server::fork_server(job_function job, const void* context, std::shared_mutex* fork_lock,
                                     warm_workers warm)
    : job_(job), context_(context), fork_lock_(fork_lock), warm_(warm) {
  {
    std::lock_guard lock(mutex_);
    start();
  }
  prestart_workers();
}

COTUNE_DECL fork_server::~fork_server() {
  {
    std::lock_guard pool(pool_mutex_);
    idle_.clear(); // each closes its channel: the worker sees its end of file and exits
  }
  std::lock_guard lock(mutex_);
  stop_server();
}

COTUNE_DECL job_result fork_server::run_forked(std::string_view request, std::chrono::steady_clock::time_point deadline,
                                                 std::stop_token stop) {
  job_result result;
  // A server that died just after taking a request (killed, out of memory) never started its job:
  // that is safe to retry, once, on a new server.
  for (int attempt = 0; attempt < 2; ++attempt) {
    result = job_result{};
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      result.detail = fmt::format(COTUNE_FMT("pipe: {}"), std::strerror(errno));
      return result;
    }
    unique_fd in(above_standard_streams(pipe_fds[0]));
    unique_fd out(above_standard_streams(pipe_fds[1]));
    if (in.get() < 0 || out.get() < 0) {
      result.detail = fmt::format(COTUNE_FMT("fcntl: {}"), std::strerror(errno));
      return result;
    }
    std::string why;
    std::uint64_t generation = 0;
    const bool sent = send(request.size(), request, out.get(), why, generation);
    out.reset(); // the server holds its own copy now; ours would hide the end of file
    if (!sent) {
      result.detail = std::move(why);
      return result;
    }
    receive(in.get(), deadline, stop, result);
    if (result.outcome != job_outcome::lost || result.worker > 0) return result;
    std::lock_guard lock(mutex_);
    if (generation_ != generation) continue; // another caller has already replaced it
    if (server_alive()) return result;       // alive but could not fork (EAGAIN): do not re-fork the caller
    stop_server();
  }
  return result;
}

COTUNE_DECL std::unique_ptr<fork_server::warm_worker> fork_server::spawn(std::string& why) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    why = fmt::format(COTUNE_FMT("socketpair: {}"), std::strerror(errno));
    return nullptr;
  }
  auto w = std::make_unique<warm_worker>();
  w->channel.reset(above_standard_streams(sv[0]));
  unique_fd theirs(above_standard_streams(sv[1]));
  if (w->channel.get() < 0 || theirs.get() < 0) {
    why = fmt::format(COTUNE_FMT("fcntl: {}"), std::strerror(errno));
    return nullptr;
  }
  std::uint64_t generation = 0;
  if (!send(fork_process::spawn_marker, {}, theirs.get(), why, generation)) return nullptr;
  return w;
}

COTUNE_DECL void fork_server::prestart_workers() {
  const std::size_t n = std::min(warm_.prestart, warm_.count);
  for (std::size_t i = 0; i < n; ++i) {
    {
      std::lock_guard pool(pool_mutex_);
      if (live_ >= warm_.count) return;
      ++live_;
    }
    std::string why;
    auto w = spawn(why);
    std::lock_guard pool(pool_mutex_);
    if (!w) {
      --live_;
      return;
    }
    idle_.push_back(std::move(w));
  }
}

COTUNE_DECL bool fork_server::still_alive(warm_worker& w) {
  char chunk[4096];
  for (;;) {
    pollfd pfd{w.channel.get(), POLLIN | POLLRDHUP, 0};
    const int ready = ::poll(&pfd, 1, 0);
    if (ready == 0) break;
    if (ready < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
    const ssize_t got = ::read(w.channel.get(), chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    w.records.append(chunk, static_cast<std::size_t>(got));
  }
  return !w.records.ended();
}

COTUNE_DECL std::unique_ptr<fork_server::warm_worker> fork_server::take_worker() {
  {
    std::lock_guard pool(pool_mutex_);
    while (!idle_.empty()) {
      auto w = std::move(idle_.back());
      idle_.pop_back();
      if (still_alive(*w)) return w;
      --live_; // died while idle (killed from outside, or its server's restart): drop it
    }
    if (live_ >= warm_.count) return nullptr;
    ++live_;
  }
  std::string why;
  auto w = spawn(why);
  if (!w) {
    std::lock_guard pool(pool_mutex_);
    --live_;
  }
  return w;
}

COTUNE_DECL void fork_server::release_worker(std::unique_ptr<warm_worker> w, bool keep) {
  std::lock_guard pool(pool_mutex_);
  if (keep && w->jobs < warm_.jobs_per_worker) {
    idle_.push_back(std::move(w));
    return;
  }
  --live_;
  w.reset();
}

COTUNE_DECL std::optional<job_result> fork_server::run_warm(std::string_view request,
                                                              std::chrono::steady_clock::time_point deadline,
                                                              const std::stop_token& stop) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto w = take_worker();
    if (!w) return std::nullopt;
    job_result result;
    auto& rec = w->records;
    rec.next_job();
    const std::uint64_t size = request.size();
    const std::string_view head(reinterpret_cast<const char*>(&size), sizeof size);
    if (!fork_process::write_two(w->channel.get(), head, request, MSG_NOSIGNAL)) {
      release_worker(std::move(w), false); // gone before it took the job: safe to try another
      continue;
    }
    ++w->jobs;
    bool gone = false; // the channel ended without the monitor's last record
    char chunk[65536];
    while (!rec.answered() && !rec.ended() && !gone) {
      const bool late = std::chrono::steady_clock::now() >= deadline;
      if (late || stop.stop_requested()) {
        // Dropping the worker shuts its channel down: its monitor kills it.
        result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
        result.detail = late ? "killed at its deadline" : "killed on a stop request";
        result.worker = rec.pid;
        release_worker(std::move(w), false);
        return result;
      }
      pollfd pfd{w->channel.get(), POLLIN, 0};
      const int ready = ::poll(&pfd, 1, wait_ms(deadline));
      if (ready < 0 && errno != EINTR) gone = true;
      if (ready <= 0) continue;
      const ssize_t got = ::read(w->channel.get(), chunk, sizeof chunk);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) gone = true; // worker and monitor both gone without a status
      else rec.append(chunk, static_cast<std::size_t>(got));
    }
    result.worker = rec.pid;
    warm_jobs_.fetch_add(1, std::memory_order_relaxed);
    if (rec.answered()) {
      if (rec.reply) {
        result.outcome = job_outcome::ok;
        result.reply = std::move(*rec.reply);
      } else {
        result.outcome = job_outcome::failed;
        result.detail = std::move(*rec.exception);
      }
      release_worker(std::move(w), true);
      return result;
    }
    if (!rec.accepted) {
      release_worker(std::move(w), false); // it died before it took the job: try another worker
      continue;
    }
    result.outcome = job_outcome::crashed;
    result.detail = rec.status ? wait_status_text(*rec.status) + " before replying"
                               : std::string("ended before replying (its exit status was not reported)");
    release_worker(std::move(w), false);
    return result;
  }
  return std::nullopt;
}

COTUNE_DECL void fork_server::start() {
  // A server forked while another thread of the caller was in dlopen or dlclose inherits the loader's
  // list lock held, and would block for ever at its workers' first dlopen (every candidate `hung`): it
  // says ready only once it has taken that lock (fork_process::serve), and one that does not within
  // `ready_limit` is killed and forked again. The window is short: a second fork finds it open.
  constexpr int attempts = 8;
  constexpr int ready_limit_ms = 2000;
  for (int attempt = 1;; ++attempt) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::system_error(errno, std::generic_category(), "fork_server: socketpair");
    sv[0] = above_standard_streams(sv[0]);
    sv[1] = above_standard_streams(sv[1]);
    int ready[2] = {-1, -1};
    if (sv[0] < 0 || sv[1] < 0 || ::pipe2(ready, O_CLOEXEC) != 0) {
      const int e = errno;
      for (int fd : {sv[0], sv[1], ready[0], ready[1]})
        if (fd >= 0) ::close(fd);
      throw std::system_error(e, std::generic_category(), "fork_server: fcntl");
    }
    pid_t pid;
    {
      std::unique_lock<std::shared_mutex> exclusive;
      if (fork_lock_) exclusive = std::unique_lock(*fork_lock_);
      pid = ::fork();
    }
    if (pid < 0) {
      const int e = errno;
      for (int fd : {sv[0], sv[1], ready[0], ready[1]}) ::close(fd);
      throw std::system_error(e, std::generic_category(), "fork_server: fork");
    }
    if (pid == 0) {
      ::close(sv[0]);
      ::close(ready[0]);
      fork_process::serve(sv[1], job_, context_, warm_.warm_up, ready[1]);
    }
    ::close(sv[1]);
    ::close(ready[1]);
    pollfd p{ready[0], POLLIN, 0};
    int polled;
    do polled = ::poll(&p, 1, ready_limit_ms);
    while (polled < 0 && errno == EINTR);
    char byte = 0;
    const bool is_ready = polled > 0 && ::read(ready[0], &byte, 1) == 1 && byte == 'r';
    ::close(ready[0]);
    if (is_ready) {
      socket_ = sv[0];
      server_ = pid;
      ++generation_;
      return;
    }
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(sv[0]);
    if (attempt == attempts)
      throw std::system_error(ETIMEDOUT, std::generic_category(),
                              fmt::format(COTUNE_FMT("fork_server: {} forked servers in a row did not start within {} "
                                                     "ms (the dynamic loader's lock held by another thread at each "
                                                     "fork, or a machine too loaded to run them)"),
                                          attempts, ready_limit_ms));
  }
}

COTUNE_DECL bool fork_server::server_alive() const {
  if (server_ <= 0 || socket_ < 0) return false;
  // The server never writes to its socket, so any event on ours means its end is closed. A dying
  // server closes its descriptors before it can be waited for, and the pipe end it held (which
  // told the caller) is closed after its socket: this sees the death the caller just saw.
  pollfd pfd{socket_, POLLIN | POLLRDHUP, 0};
  if (::poll(&pfd, 1, 0) != 0) return false;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(server_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

COTUNE_DECL void fork_server::stop_server() {
  if (socket_ >= 0) {
    // shutdown, not just close: a child the caller forked (without exec) may hold a copy of the
    // socket, and the server must see its end of file all the same.
    ::shutdown(socket_, SHUT_RDWR);
    ::close(socket_);
  }
  socket_ = -1;
  if (server_ > 0) {
    // It ends on its socket's end of file, normally within a millisecond: looked for after 50 us,
    // then at doubling intervals up to 10 ms (a fixed 10 ms nap was 10 ms of every isolated tuning's
    // wall time, 1% of the CPU demo's); one that does not end (stopped, wedged) is killed after ~1 s.
    bool reaped = false;
    useconds_t nap = 50;
    for (useconds_t waited = 0; waited < 1'000'000 && !reaped; waited += nap, nap = std::min<useconds_t>(2 * nap, 10'000)) {
      const pid_t r = ::waitpid(server_, nullptr, WNOHANG);
      reaped = r == server_ || (r < 0 && errno != EINTR); // ECHILD: someone else reaped it
      if (!reaped) ::usleep(nap);
    }
    if (!reaped) {
      ::kill(server_, SIGKILL);
      while (::waitpid(server_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  server_ = -1;
}

COTUNE_DECL bool fork_server::send(std::uint64_t header, std::string_view request, int fd, std::string& why,
                                   std::uint64_t& generation) {
  std::lock_guard lock(mutex_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (socket_ < 0) {
      try {
        start();
      } catch (const std::system_error& e) {
        why = e.what();
        return false;
      }
    }
    generation = generation_;
    if (send_locked(header, request, fd, why)) return true;
    stop_server(); // the server is gone (or the stream is out of step): start another
  }
  return false;
}

COTUNE_DECL bool fork_server::send_locked(std::uint64_t header, std::string_view request, int fd,
                                          std::string& why) const {
  std::uint64_t size = header;
  fork_process::header_message m(size);
  msghdr& msg = m.msg;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  do n = ::sendmsg(socket_, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof size)) {
    why = fmt::format(COTUNE_FMT("the server is gone (sendmsg: {})"), n < 0 ? std::strerror(errno) : "short write");
    return false;
  }
  std::size_t done = 0;
  while (done < request.size()) {
    ssize_t w = ::send(socket_, request.data() + done, request.size() - done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      why = fmt::format(COTUNE_FMT("the server is gone (send: {})"), w < 0 ? std::strerror(errno) : "closed");
      return false;
    }
    done += static_cast<std::size_t>(w);
  }
  return true;
}

COTUNE_DECL void fork_server::receive(int in, std::chrono::steady_clock::time_point deadline,
                                      const std::stop_token& stop,
                                        job_result& result) {
  fork_process::job_records rec;
  char chunk[65536];
  while (!rec.ended()) { // the monitor's record is the last one
    const bool late = std::chrono::steady_clock::now() >= deadline;
    // Once the job has answered, only its exit status is missing, and the monitor sends it next.
    if (!rec.answered() && (late || stop.stop_requested())) {
      // Stop listening: closing the pipe (the caller does) tells the monitor to kill the worker.
      result.worker = rec.pid;
      result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
      result.detail = late ? "killed at its deadline" : "killed on a stop request";
      return;
    }
    pollfd pfd{in, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, wait_ms(deadline));
    if (ready < 0 && errno != EINTR) {
      result.worker = rec.pid;
      result.outcome = job_outcome::lost;
      result.detail = fmt::format(COTUNE_FMT("poll: {}"), std::strerror(errno));
      return;
    }
    if (ready <= 0) continue;
    const ssize_t got = ::read(in, chunk, sizeof chunk);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) break; // every writer (worker, monitor) has ended
    rec.append(chunk, static_cast<std::size_t>(got));
  }
  result.worker = rec.pid;
  const bool clean_exit = rec.status && WIFEXITED(*rec.status) && WEXITSTATUS(*rec.status) == 0;
  if (rec.exception && clean_exit) {
    result.outcome = job_outcome::failed;
    result.detail = std::move(*rec.exception);
    return;
  }
  if (rec.reply && clean_exit) {
    result.outcome = job_outcome::ok;
    result.reply = std::move(*rec.reply);
    return;
  }
  if (result.worker <= 0) {
    result.outcome = job_outcome::lost;
    result.detail = rec.fork_errno ? fmt::format(COTUNE_FMT("the server could not start a worker: fork: {}"),
                                                 std::strerror(*rec.fork_errno))
                                   : std::string("the server ended before starting the job");
    return;
  }
  result.outcome = job_outcome::crashed;
  result.detail = rec.status ? wait_status_text(*rec.status) + " before replying"
                             : std::string("ended before replying (its exit status was not reported)");
}

COTUNE_DECL void fork_server_lane::send(std::string_view request) {
  sent_.emplace_back(request);
  // A failed write says only that the worker is gone (its end closed), maybe of a job sent before this
  // one, which it took ('A') and crashed on: the worker is kept, so that receive() reads its records and
  // reports that job `crashed`. This one stays unwritten (and so does any later one: the stream may be
  // out of step): receive() sends it to the next worker.
  if (worker_ && written_ + 1 == sent_.size() && write(*worker_, sent_.back())) ++written_;
}

COTUNE_DECL job_result fork_server_lane::receive(std::chrono::steady_clock::time_point deadline, const std::stop_token& stop) {
  job_result result;
  if (sent_.empty()) {
    result.detail = "no job in flight";
    return result;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    // The oldest job never reached this worker whole (a write failed): it is for the next one.
    if (worker_ && written_ == 0) drop_worker();
    if (!worker_ && !take(result.detail)) return result;
    auto& rec = worker_->records;
    bool gone = false; // the channel ended without the monitor's last record
    char chunk[65536];
    while (!rec.answered() && !rec.ended() && !gone) {
      const bool late = std::chrono::steady_clock::now() >= deadline;
      if (late || stop.stop_requested()) {
        result.outcome = late ? job_outcome::timed_out : job_outcome::cancelled;
        result.detail = late ? "killed at its deadline" : "killed on a stop request";
        result.worker = rec.pid;
        finish_front(); // killed with its worker: the jobs behind it go to the next one
        return result;
      }
      pollfd pfd{worker_->channel.get(), POLLIN, 0};
      const int ready = ::poll(&pfd, 1, fork_server::wait_ms(deadline));
      if (ready < 0 && errno != EINTR) gone = true;
      if (ready <= 0) continue;
      const ssize_t got = ::read(worker_->channel.get(), chunk, sizeof chunk);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) gone = true;
      else rec.append(chunk, static_cast<std::size_t>(got));
    }
    result.worker = rec.pid;
    server_->warm_jobs_.fetch_add(1, std::memory_order_relaxed);
    if (rec.answered()) {
      if (rec.reply) {
        result.outcome = job_outcome::ok;
        result.reply = std::move(*rec.reply);
      } else {
        result.outcome = job_outcome::failed;
        result.detail = std::move(*rec.exception);
      }
      sent_.pop_front();
      --written_;
      ++worker_->jobs;
      rec.next_job();
      return result;
    }
    if (!rec.accepted) { // it died before it took the job: every job in flight goes to another worker
      drop_worker();
      continue;
    }
    result.outcome = job_outcome::crashed;
    result.detail = rec.status ? wait_status_text(*rec.status) + " before replying"
                               : std::string("ended before replying (its exit status was not reported)");
    finish_front();
    return result;
  }
  result.outcome = job_outcome::lost;
  result.detail = "no persistent worker could take the job";
  return result;
}

COTUNE_DECL bool fork_server_lane::take(std::string& why) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    worker_ = server_->take_worker();
    if (!worker_) {
      why = "no persistent worker could be started (the server is gone, or at its limit)";
      return false;
    }
    worker_->records.one_answer = true;
    worker_->records.next_job();
    written_ = 0;
    while (written_ < sent_.size() && write(*worker_, sent_[written_])) ++written_;
    // A write that fails after the first may be the worker dying of a job written before it (that job
    // is `crashed`, never sent again): receive() reads which jobs it took.
    if (written_ > 0 || sent_.empty()) return true;
    drop_worker(); // not even the first job reached it whole: it took none, another worker gets them all
  }
  why = "no persistent worker could be sent the job";
  return false;
}

COTUNE_DECL bool fork_server_lane::write(fork_server::warm_worker& w, const std::string& request) {
  const std::uint64_t size = request.size();
  return fork_process::write_two(w.channel.get(), std::string_view(reinterpret_cast<const char*>(&size), sizeof size),
                                 request, MSG_NOSIGNAL);
}

COTUNE_DECL void fork_server_lane::finish_front() {
  sent_.pop_front();
  drop_worker();
  std::string why;
  if (!sent_.empty()) (void)take(why); // failing here, receive() tries again and reports it
}

COTUNE_DECL void fork_server_lane::drop_worker() {
  if (worker_) server_->release_worker(std::move(worker_), false);
  written_ = 0;
}

COTUNE_DECL void fork_server_lane::drop() {
  if (!worker_) return;
  const bool idle = sent_.empty() && worker_->records.pending.empty();
  written_ = 0;
  worker_->records.one_answer = false;
  server_->release_worker(std::move(worker_), idle);
}

} // namespace cotune::detail
