#pragma once
/// \file GPU isolation (COTUNE_ISOLATE), the parent's side, for CUDA and HIP alike: candidates are
/// benchmarked in a worker process per device, with its own context, so that an illegal address, a
/// trap, an abort, a segfault or a kernel that never ends costs that candidate alone. The parent's
/// context never runs the candidate: after a fault it still runs its own kernels and the winner.
/// gpu/isolation_worker.hpp is the worker's side; cuda/isolation.hpp and hip/isolation.hpp name the
/// runtime's worker (`worker_kind`) and how its memory is shared (`Shares`).
///
/// How a worker starts: fork + exec of /proc/self/exe with the runtime's worker variable set
/// (COTUNE_CUDA_ISOLATION_WORKER, COTUNE_HIP_ISOLATION_WORKER), which a constructor in the runtime's
/// isolation_worker.hpp (included by its benchmarker) recognises before main() and turns into the
/// worker loop (the gtest death-test trick). Chosen over a server forked before the runtime is
/// initialised (detail/fork_server.hpp, as the compile servers are) because that works only if the
/// server is forked before the program's first GPU call, which a library cannot promise: a program
/// that made a device buffer before its first tuning has an initialised driver, and a forked copy of
/// it cannot use the GPU. An exec'd worker is a fresh process at any time. What it costs: the
/// program's own static initialisers of higher priority run in the worker too (cotune's runs at
/// priority 101, before the default ones), and a program that is not the executable (a plugin loaded
/// by Python) has no worker: then, and whenever a worker cannot start, one warning says so and
/// candidates are measured in-process.
///
/// Arguments reach the worker as IPC memory handles of the parent's allocations (cuMemAlloc,
/// cudaMalloc, hipMalloc memory; CUDA pool and cuMemCreate memory are not IPC-capable, and such a
/// tuning is measured in-process with a warning naming the argument), scalars by value, the kernel as
/// its image bytes. reset_to_zero and restore_value run in the worker on the shared memory, as
/// in-process; the parent verifies (tune_options::verify) the worker's output in its own memory. User
/// hooks (pre_hook, post_hook, a config's pre-hook, on_load) are host code that only the parent can
/// run: a tuning with any is measured in-process (tune/isolated_measure.hpp says so once).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <concepts>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/backend/launch_geometry.hpp>
#include <cotune/bench/benchmarker.hpp>
#include <cotune/core/buffer.hpp>
#include <cotune/detail/fork_process.hpp>
#include <cotune/detail/isolated_run.hpp>
#include <cotune/detail/unique_fd.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/gpu/isolation_protocol.hpp>
#include <cotune/gpu/loaded_kernel.hpp>
#include <cotune/knobs/knobs.hpp>

extern char** environ;

namespace cotune::gpu::detail {

/// Which runtime's worker: its name in messages, the variable that makes a process one, and the header
/// whose constructor is the worker's entry.
struct worker_kind {
  const char* runtime;   ///< "CUDA"
  const char* variable;  ///< "COTUNE_CUDA_ISOLATION_WORKER"
  const char* program;   ///< the worker's argv[0]: "cotune-cuda-isolation-worker"
  const char* entry;     ///< "cotune/cuda/cuda_benchmarker.hpp"
};

/// How long a new worker may take to report ready: exec, the runtime's initialisation and a context
/// on its device. On the H200 test machine a respawn took well under a second (bench_cuda_isolation prints
/// p50/p99); 30 s leaves room for a loaded 8-GPU host and still says "cannot start" in bounded time.
inline constexpr std::chrono::seconds worker_start_limit{30};
/// The parent's backstop past the worker's own first-run deadline (COTUNE_BENCH_TIMEOUT_MS), for a
/// worker stuck inside the driver: hangs are detected at the bench timeout plus at most this.
inline constexpr std::chrono::milliseconds hang_slack{900};

/// One received frame, or why none came.
struct frame {
  enum class ending { ok, closed, timed_out } end = ending::closed;
  char tag = 0;
  std::string payload{};
};

inline bool send_frame(int fd, char tag, std::string_view payload) {
  return cotune::detail::fork_process::write_record(fd, tag, payload.size(), payload);
}

/// Reads one frame, waiting at most until `deadline`.
[[nodiscard]] inline frame receive_frame(int fd, std::chrono::steady_clock::time_point deadline) {
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

/// One worker process serving one device.
class isolation_worker {
public:
  /// Starts a worker for device `ordinal` (does not wait for it: `ready` does). Throws
  /// std::runtime_error when the process cannot be spawned.
  isolation_worker(const worker_kind& kind, int ordinal) : kind_(&kind), ordinal_(ordinal) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(fmt::format("socketpair: {}", std::strerror(errno)));
    socket_.reset(sv[0]);
    // The child's end goes to descriptor 3 there; one that already is 3 here would stay close-on-exec.
    int child = sv[1];
    if (child <= 3) {
      child = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 4);
      ::close(sv[1]);
    }
    cotune::detail::unique_fd child_end(child);
    std::vector<std::string> env_text;
    for (char** e = environ; e && *e; ++e)
      if (!std::string_view(*e).starts_with(std::string(kind.variable) + "=")) env_text.emplace_back(*e);
    env_text.push_back(fmt::format("{}=3:{}", kind.variable, ordinal));
    std::vector<char*> envp;
    for (auto& s : env_text) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string arg0 = kind.program;
    char* argv[] = {arg0.data(), nullptr};
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, child_end.get(), 3);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    started_ = std::chrono::steady_clock::now();
    const int rc = ::posix_spawn(&pid_, "/proc/self/exe", &actions, nullptr, argv, envp.data());
    ::posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error(fmt::format("posix_spawn of /proc/self/exe: {}", std::strerror(rc)));
    }
  }
  isolation_worker(const isolation_worker&) = delete;
  isolation_worker& operator=(const isolation_worker&) = delete;
  ~isolation_worker() { kill(); }

  /// Waits for the worker's ready report (once); nothing when ready, else why it cannot serve.
  [[nodiscard]] std::optional<std::string> ready() {
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
      why_not_ = fmt::format("it did not report ready within {} s", worker_start_limit.count());
    else why_not_ = fmt::format("it ended before reporting ready ({}); is the program's executable built with "
                                "{} (the worker's entry)?",
                                reap(), kind_->entry);
    kill();
    return why_not_;
  }

  /// Milliseconds from spawning to ready.
  [[nodiscard]] double start_ms() const noexcept { return start_ms_; }
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }

  /// Runs one job: sends it and waits for the reply, killing the worker at the deadline. An ending
  /// other than returned or threw means the worker is gone (`alive()` is false).
  [[nodiscard]] cotune::detail::isolated_result run(const worker_job& job) {
    using cotune::detail::isolated_result;
    isolated_result out;
    const auto t0 = std::chrono::steady_clock::now();
    const auto first_limit = std::chrono::milliseconds(job.timeout_ms > 0 ? job.timeout_ms : 3'600'000) + hang_slack;
    auto deadline = t0 + first_limit;
    if (!send_frame(socket_.get(), tag_job, encode(job))) {
      out.end = isolated_result::ending::crashed;
      out.detail = fmt::format("its isolation worker (pid {}) could not be sent the job: {}", pid_, reap());
      return out;
    }
    for (;;) {
      frame f = receive_frame(socket_.get(), deadline);
      if (f.end == frame::ending::timed_out) {
        kill();
        out.end = isolated_result::ending::hung;
        out.detail = fmt::format("still running after {} ms (COTUNE_BENCH_TIMEOUT_MS = {} ms); its isolation worker "
                                 "was killed and is replaced",
                                 std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count(),
                                 job.timeout_ms);
        return out;
      }
      if (f.end == frame::ending::closed) {
        out.end = isolated_result::ending::crashed;
        out.detail = fmt::format("its isolation worker (pid {}) was {} without replying; it is replaced", pid_, reap());
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
          out.detail = fmt::format("{}; its isolation worker was killed and is replaced", message);
        } else if (kind == worker_failure::unmappable) {
          out.end = isolated_result::ending::refused;
          out.detail = fmt::format("COTUNE_ISOLATE: the {} isolation worker cannot map an argument's memory ({}); "
                                   "candidates are measured in-process",
                                   kind_->runtime, message);
        } else if (kind == worker_failure::context_lost) {
          kill();
          out.end = isolated_result::ending::crashed;
          out.detail = fmt::format("{} (in its isolation worker, whose {} context it lost; the tuning's own "
                                   "context is untouched and the worker is replaced)",
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
      out.detail = fmt::format("its isolation worker sent a malformed reply (tag {}); it is replaced", static_cast<int>(f.tag));
      return out;
    }
  }

  [[nodiscard]] bool alive() const noexcept { return pid_ > 0; }

  /// Kills the worker (if it still runs) and collects it.
  void kill() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    (void)reap();
  }

private:
  /// Collects the worker's exit: "killed by signal 6 (Aborted)" or "exited with status 3".
  std::string reap() noexcept {
    if (pid_ <= 0) return "gone";
    int status = 0;
    pid_t r;
    while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    socket_.reset();
    if (r < 0) return "gone";
    if (WIFSIGNALED(status)) {
      const char* name = ::sigdescr_np(WTERMSIG(status));
      return fmt::format("killed by signal {} ({})", WTERMSIG(status), name ? name : "unknown signal");
    }
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  }

  const worker_kind* kind_;
  int ordinal_;
  pid_t pid_ = -1;
  cotune::detail::unique_fd socket_;
  std::chrono::steady_clock::time_point started_{};
  bool ready_ = false;
  std::optional<std::string> why_not_;
  double start_ms_ = 0;
};

/// Process-wide: one worker per device, replaced after each crash or hang, and the warnings for the
/// backend's take_warnings(). Thread-safe; jobs for one device run one at a time.
class isolation_pool {
public:
  /// The process's pool of `kind`'s workers.
  template <const worker_kind& Kind>
  static isolation_pool& of() {
    static auto* pool = new isolation_pool(Kind); // never destroyed: workers end with the process (EOF)
    return *pool;
  }

  /// Runs `job` on device `ordinal`'s worker. `refused` with the reason when no worker can run
  /// there (then the caller measures in-process; the first such reason is also a warning).
  [[nodiscard]] cotune::detail::isolated_result run(int ordinal, const worker_job& job) {
    slot& s = slot_for(ordinal);
    std::lock_guard lock(s.mutex);
    cotune::detail::isolated_result out;
    if (!s.unavailable.empty()) {
      out.end = cotune::detail::isolated_result::ending::refused;
      out.detail = s.unavailable;
      return out;
    }
    if (!s.worker || !s.worker->alive()) {
      try {
        s.worker = std::make_unique<isolation_worker>(*kind_, ordinal);
      } catch (const std::exception& e) {
        return refuse(s, ordinal, e.what());
      }
    }
    if (auto why = s.worker->ready()) return refuse(s, ordinal, *why);
    if (s.worker->start_ms() > 0 && !s.counted) {
      s.counted = true;
      std::lock_guard l(mutex_);
      start_ms_.push_back(s.worker->start_ms());
    }
    out = s.worker->run(job);
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

  /// Spawns device `ordinal`'s worker now if none is running, without waiting for it: its start-up
  /// (~135 ms on the H200: a new process and its context) then overlaps with the tuning's compiles
  /// instead of delaying its first measurement. A failure is left for `run` to report. Never throws.
  void prestart(int ordinal) noexcept {
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

  /// Milliseconds each worker took from spawn to ready (the first and every replacement).
  [[nodiscard]] std::vector<double> start_times() const {
    std::lock_guard l(mutex_);
    return start_ms_;
  }
  /// Workers replaced after a crash or a hang.
  [[nodiscard]] std::size_t replaced() const {
    std::lock_guard l(mutex_);
    return replaced_;
  }
  /// The warnings since the last call.
  [[nodiscard]] std::vector<std::string> take_warnings() {
    std::lock_guard l(mutex_);
    return std::exchange(warnings_, {});
  }
  /// Queues a warning (once per distinct text).
  void warn_once(std::string text) {
    std::lock_guard l(mutex_);
    if (std::find(warned_.begin(), warned_.end(), text) != warned_.end()) return;
    warned_.push_back(text);
    warnings_.push_back(std::move(text));
  }

private:
  explicit isolation_pool(const worker_kind& kind) : kind_(&kind) {}

  struct slot {
    std::mutex mutex;
    std::unique_ptr<isolation_worker> worker;
    std::string unavailable;
    bool counted = false;
  };

  slot& slot_for(int ordinal) {
    std::lock_guard l(mutex_);
    auto& s = slots_[ordinal];
    if (!s) s = std::make_unique<slot>();
    return *s;
  }

  cotune::detail::isolated_result refuse(slot& s, int ordinal, const std::string& why) {
    s.worker.reset();
    s.unavailable = fmt::format("COTUNE_ISOLATE: cannot start a {0} isolation worker for device {1} ({2}); its "
                                "candidates are measured in-process, where a crash or a hang of one takes the "
                                "program's {0} context (or the program) with it",
                                kind_->runtime, ordinal, why);
    warn_once(s.unavailable);
    cotune::detail::isolated_result out;
    out.end = cotune::detail::isolated_result::ending::refused;
    out.detail = s.unavailable;
    return out;
  }

  const worker_kind* kind_;
  mutable std::mutex mutex_;
  std::map<int, std::unique_ptr<slot>> slots_;
  std::vector<double> start_ms_;
  std::size_t replaced_ = 0;
  std::vector<std::string> warnings_, warned_;
};

/// How a runtime shares its device memory with a worker: its device address type and `shareable`,
/// which describes an address of a context as an IPC-mapped parameter, or says why it cannot be one.
template <class S, class Context>
concept Shares = requires(const Context& ctx, typename S::pointer p, std::uint64_t extent, std::string& why) {
  { S::shareable(ctx, p, extent, why) } -> std::same_as<std::optional<worker_param>>;
  { S::from_raw(static_cast<const volatile void*>(nullptr)) } -> std::same_as<typename S::pointer>;
};

/// The kernel arguments as a worker job's parameters (`params`): device memory (buffers, raw device
/// pointers) as IPC handles (`S`), the rest by value, reset_to_zero and restore_value flagged from
/// `task`. Returns why they cannot go to a worker (empty when they can).
template <class S, class Context, class... Args>
  requires Shares<S, Context>
[[nodiscard]] std::string describe_arguments(const Context& ctx, const cotune::detail::worker_task& task,
                                             std::vector<worker_param>& params, Args&... args) {
  using pointer = typename S::pointer;
  std::string why;
  std::size_t i = 0;
  auto describe = [&](auto& a) {
    using A = std::remove_cvref_t<decltype(a)>;
    const bool zero = i < task.zero.size() && task.zero[i], restore = i < task.restore.size() && task.restore[i];
    const bool poison = i < task.poison.size() && task.poison[i];
    const std::size_t at = i++;
    if (!why.empty()) return;
    auto device_memory = [&](pointer p, std::uint64_t extent) {
      if ((zero || restore) && extent == 0 && p) {
        why = fmt::format("argument {} is zeroed or restored, but its byte size is unknown", at);
        return;
      }
      if (!p) { // a null pointer or an empty buffer: nothing to share
        params.push_back({.bytes = std::string(sizeof p, '\0')});
        return;
      }
      std::string reason;
      auto param = S::shareable(ctx, p, extent, reason);
      if (!param) {
        why = fmt::format("argument {}: {}", at, reason);
        return;
      }
      param->zero = zero;
      param->restore = restore;
      param->poison = poison;
      params.push_back(*std::move(param));
    };
    if constexpr (AnyBuffer<A>) {
      const auto v = cotune::kernel_arg(a);
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, pointer>) {
        const auto& buf = as_buffer(a);
        std::uint64_t extent = 0;
        if constexpr (requires { buf.size_bytes(); }) extent = buf.size_bytes();
        device_memory(v, extent);
      } else {
        why = fmt::format("argument {} is a buffer whose kernel argument is not a device address", at);
      }
    } else if constexpr (std::is_pointer_v<A>) {
      device_memory(S::from_raw(a), 0); // a raw device pointer: mapped, never zeroed
    } else {
      const auto v = cotune::kernel_arg(a);
      static_assert(std::is_trivially_copyable_v<std::remove_cvref_t<decltype(v)>>,
                    "a GPU kernel argument is passed by value: it must be trivially copyable");
      params.push_back({.bytes = std::string(reinterpret_cast<const char*>(&v), sizeof v)});
    }
  };
  (describe(args), ...);
  return why;
}

/// Runs `f` (its module's `image`, entry `symbol`) in its device's worker of `Kind`, once or measured
/// with `o` (`task.timed`) under the parent's timing knobs `flush_factor` and `graph`, zeroing and
/// restoring the flagged arguments there: device memory goes as `S` shares it, the rest by value,
/// after the device's cotune stream has finished (so that the worker sees the arguments as the caller
/// left them). `refused`, and a warning once, when an argument cannot be shared or no worker can
/// start: the caller measures in-process then. Throws out_of_resources for more dynamic shared memory
/// than the kernel can have.
template <const worker_kind& Kind, class S, class K, class... Args>
[[nodiscard]] cotune::detail::isolated_result run_in_worker(const loaded_kernel<K>& f, std::string image,
                                                            std::string symbol, const launch_grid& grid,
                                                            const cotune::detail::worker_task& task,
                                                            const bench_options& o, double flush_factor, bool graph,
                                                            Args&... args) {
  check_dynamic_shared(f, grid.shared_bytes);
  const block_dims& block = grid.block ? *grid.block : f.block;
  worker_job job;
  job.timed = task.timed;
  job.image = std::move(image);
  job.symbol = std::move(symbol);
  job.grid = {grid.x, grid.y, grid.z};
  job.block = {static_cast<std::uint32_t>(block.x), static_cast<std::uint32_t>(block.y),
               static_cast<std::uint32_t>(block.z)};
  job.shared_bytes = grid.shared_bytes;
  job.timeout_ms = task.timeout_ms;
  job.bench = o;
  job.flush_factor = flush_factor;
  job.graph = graph;
  job.batch_below_us = knobs().bench.batch_below_us.get();
  auto& pool = isolation_pool::of<Kind>();
  const auto& ctx = *f.context;
  if (std::string why = describe_arguments<S>(ctx, task, job.params, args...); !why.empty()) {
    cotune::detail::isolated_result out;
    out.end = cotune::detail::isolated_result::ending::refused;
    out.detail = fmt::format("COTUNE_ISOLATE: kernel '{}' is measured in-process, not in an isolation worker: {}",
                             f.module->kernel_name, why);
    pool.warn_once(out.detail);
    return out;
  }
  ctx.make_current();
  ctx.synchronize("waiting for the device before measuring in the isolation worker");
  return pool.run(ctx.ordinal(), job);
}

} // namespace cotune::gpu::detail
