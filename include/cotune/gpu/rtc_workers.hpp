#pragma once
/// \file `cotune::gpu::rtc_workers<Compiler>`: runs a run-time compiler (NVRTC, hiprtc) in warm
/// compile processes, with deadlines, cancellation and crash isolation; shared by the CUDA and HIP
/// backends.
///
/// Why processes: NVRTC serialises much of its work between the threads of one process (16 GEMM
/// compiles: 1.17-1.54 s on 16 threads, 0.34-0.41 s in 16 processes; 32-core H200 host, 2026-11-30),
/// cannot be interrupted, and may crash. Why warm ones: a process forked per compile pays the fork,
/// fresh-memory faults and the compiler's first-use set-up each time (one GEMM compile: 289 ms in a
/// forked process against 237 ms on a thread, H200 host), and those costs made one compile at a time
/// slower in processes than on threads. So the compile server warms the compiler up once (a tiny
/// compile), then keeps up to `workers` persistent compile processes forked from it, each taking many
/// compiles (detail/fork_server.hpp, `warm_workers`).
///
/// `Compiler` supplies: `rtc_output compile_here(const rtc_request&) const` (in the calling process,
/// thread-safe), `void warm_up() const` (a tiny compile), and `static constexpr const char* rtc_name`
/// ("NVRTC", "hiprtc") for messages.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/fork_server.hpp>
#include <cotune/gpu/rtc_output.hpp>

namespace cotune::gpu {

/// How many warm compile processes to keep when a knob says 0 (automatic): one per hardware thread,
/// as many as the compile pool's default size, so that each compile thread has its own warm process.
[[nodiscard]] inline std::size_t default_compile_workers() {
  return std::max(1u, std::thread::hardware_concurrency());
}

template <class Compiler>
class rtc_workers {
public:
  explicit rtc_workers(const Compiler& compiler) : compiler_(&compiler) {}
  rtc_workers(const rtc_workers&) = delete;
  rtc_workers& operator=(const rtc_workers&) = delete;

  /// Compiles `r`: in a compile process when `in_processes` (and the server runs), else here, where
  /// the deadline and the stop request count only before the compile starts. `workers` is the number
  /// of warm processes kept (read when the server starts).
  [[nodiscard]] rtc_output compile(const rtc_request& r, std::chrono::steady_clock::time_point deadline,
                                   std::stop_token stop, bool in_processes, std::size_t workers) const {
    if (in_processes)
      if (auto* server = compile_server(workers)) {
        auto out = compile_in_process_of_its_own(*server, r, deadline, std::move(stop));
        if (out) return *std::move(out);
      }
    if (stop.stop_requested() || std::chrono::steady_clock::now() >= deadline) {
      rtc_output out;
      out.stopped = stop.stop_requested() ? rtc_output::stop_cause::stop_request : rtc_output::stop_cause::deadline;
      out.error = "stopped before it started";
      return out;
    }
    std::shared_lock lock(in_process_mutex_); // no compile server is forked while the compiler runs here
    compilations_.fetch_add(1, std::memory_order_relaxed);
    return compiler_->compile_here(r);
  }

  /// Starts the compile server (and its warm processes) now rather than at the first compile; returns
  /// whether it runs.
  bool start(std::size_t workers) const { return compile_server(workers) != nullptr; }

  /// Compilations run by this process (here or in compile processes) and in compile processes.
  [[nodiscard]] std::uint64_t compilations() const noexcept { return compilations_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t process_compilations() const noexcept {
    return process_compilations_.load(std::memory_order_relaxed);
  }

  /// The compile server's pid, or -1 if none has been started.
  [[nodiscard]] pid_t server_pid() const {
    std::lock_guard lock(server_mutex_);
    return server_ ? server_->server_pid() : -1;
  }

  /// Warm compile processes alive now, and compiles they have served.
  [[nodiscard]] std::size_t warm_processes() const {
    std::lock_guard lock(server_mutex_);
    return server_ ? server_->warm_worker_count() : 0;
  }
  [[nodiscard]] std::uint64_t warm_compilations() const {
    std::lock_guard lock(server_mutex_);
    return server_ ? server_->warm_jobs() : 0;
  }

  /// Warnings about how compiles run (the server could not start, or was lost) since the last call.
  [[nodiscard]] std::vector<std::string> take_warnings() const {
    std::lock_guard lock(warnings_mutex_);
    return std::exchange(warnings_, {});
  }

private:
  [[nodiscard]] cotune::detail::fork_server* compile_server(std::size_t workers) const {
    std::lock_guard lock(server_mutex_);
    if (!server_tried_) {
      server_tried_ = true;
      // The server forks only while no thread of this process is inside the compiler (it holds
      // in_process_mutex_ exclusively): its processes run the compiler from the server's copy of
      // this process, and a lock held in that copy would never be released.
      try {
        cotune::detail::warm_workers warm{.count = workers, .warm_up = &warm_up_job, .prestart = workers};
        server_ = std::make_unique<cotune::detail::fork_server>(&compile_job, this, &in_process_mutex_, warm);
      } catch (const std::exception& e) {
        warn(fmt::format("{} kernels will compile in this process, one at a time: {}", Compiler::rtc_name, e.what()));
      }
    }
    return server_.get();
  }

  static void warm_up_job(const void* self) { static_cast<const rtc_workers*>(self)->compiler_->warm_up(); }

  /// Runs in a compile process: decodes the request, compiles, encodes the result.
  static std::string compile_job(const void* self, std::string_view request) {
    wire_reader in{request};
    rtc_request r;
    r.source = in.text();
    r.file_name = in.text();
    r.name_expression = in.text();
    r.options.resize(in.count());
    for (auto& o : r.options) o = in.text();
    const auto out = static_cast<const rtc_workers*>(self)->compiler_->compile_here(r);
    std::string reply;
    wire_put(reply, out.ok ? "1" : "0");
    wire_put(reply, out.is_ptx ? "1" : "0");
    for (const std::string* f : {&out.error, &out.log, &out.image, &out.lowered_name}) wire_put(reply, *f);
    return reply;
  }

  /// Compiles in a process of `server`; nullopt if the server is lost (the caller compiles here instead).
  [[nodiscard]] std::optional<rtc_output> compile_in_process_of_its_own(cotune::detail::fork_server& server,
                                                                        const rtc_request& r,
                                                                        std::chrono::steady_clock::time_point deadline,
                                                                        std::stop_token stop) const {
    std::string request;
    for (const std::string* f : {&r.source, &r.file_name, &r.name_expression}) wire_put(request, *f);
    wire_put_count(request, r.options.size());
    for (const auto& o : r.options) wire_put(request, o);
    auto result = server.run(request, deadline, std::move(stop));
    rtc_output out;
    using cotune::detail::job_outcome;
    if (result.outcome != job_outcome::lost) {
      compilations_.fetch_add(1, std::memory_order_relaxed);
      process_compilations_.fetch_add(1, std::memory_order_relaxed);
    }
    switch (result.outcome) {
    case job_outcome::ok:
      try {
        wire_reader in{result.reply};
        out.ok = in.text() == "1";
        out.is_ptx = in.text() == "1";
        out.error = in.text();
        out.log = in.text();
        out.image = in.text();
        out.lowered_name = in.text();
      } catch (const std::exception& e) {
        out = rtc_output{};
        out.error = fmt::format("the compile process sent a malformed result ({})", e.what());
      }
      return out;
    case job_outcome::failed:
      out.error = fmt::format("the compile process failed: {}", result.detail);
      return out;
    case job_outcome::crashed:
      out.error = fmt::format("{} crashed: the compile process {}", Compiler::rtc_name, result.detail);
      out.crashed = true;
      return out;
    case job_outcome::timed_out:
    case job_outcome::cancelled:
      out.stopped = result.outcome == job_outcome::timed_out ? rtc_output::stop_cause::deadline
                                                             : rtc_output::stop_cause::stop_request;
      out.error = fmt::format("the compile process was {}", result.detail);
      return out;
    case job_outcome::lost:
      break;
    }
    std::call_once(lost_warned_, [&] {
      warn(fmt::format("the {} compile server is unusable ({}); compiling in this process", Compiler::rtc_name,
                       result.detail));
    });
    return std::nullopt;
  }

  void warn(std::string text) const {
    std::lock_guard lock(warnings_mutex_);
    warnings_.push_back(std::move(text));
  }

  // The compile processes' wire format: each field a u64 size and its bytes.
  static void wire_put_count(std::string& out, std::uint64_t n) { out.append(reinterpret_cast<const char*>(&n), sizeof n); }
  static void wire_put(std::string& out, std::string_view field) {
    wire_put_count(out, field.size());
    out.append(field);
  }
  struct wire_reader {
    std::string_view data;
    std::uint64_t count() {
      std::uint64_t n = 0;
      if (data.size() < sizeof n) throw error("truncated field size");
      std::memcpy(&n, data.data(), sizeof n);
      data.remove_prefix(sizeof n);
      return n;
    }
    std::string text() {
      const std::uint64_t n = count();
      if (data.size() < n) throw error("truncated field");
      std::string out(data.substr(0, static_cast<std::size_t>(n)));
      data.remove_prefix(static_cast<std::size_t>(n));
      return out;
    }
  };

  const Compiler* compiler_;
  mutable std::atomic<std::uint64_t> compilations_{0};
  mutable std::atomic<std::uint64_t> process_compilations_{0};
  mutable std::mutex server_mutex_;
  mutable std::mutex warnings_mutex_;
  mutable std::vector<std::string> warnings_;
  mutable std::once_flag lost_warned_;
  mutable bool server_tried_ = false;
  mutable std::unique_ptr<cotune::detail::fork_server> server_; ///< never destroyed while its library lives
  mutable std::shared_mutex in_process_mutex_; ///< shared by in-process compiles, exclusive while forking
};

} // namespace cotune::gpu
