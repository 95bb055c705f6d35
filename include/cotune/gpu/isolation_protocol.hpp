#pragma once
/// \file What the parent and a GPU isolation worker (gpu/isolation.hpp) say to each other: a job (the
/// kernel's image and symbol, its launch geometry, its arguments as bytes or as IPC memory handles,
/// the benchmark options) and the worker's replies. The same for CUDA and HIP. Plain bytes in the
/// machine's own layout: both ends are the same executable on the same machine. Nothing here touches
/// a GPU runtime, so the encoding is tested on machines without a GPU.
///
/// Frames on the stream socket: a tag byte, a u64 payload size, the payload (detail::fork_process's
/// write_record, sent with MSG_NOSIGNAL; `send_frame`, `receive_frame`).
/// Parent to worker: 'J' job. Worker to parent: 'H' ready (or 'h' + why it cannot serve), then per
/// job 'F' (the first run finished; only for a timed job) and 'R' (the values) or 'E' (a kind byte and
/// the message). A worker that answers 'E' with kind `context_lost` exits after the reply.

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cotune/bench/benchmarker.hpp>
#include <cotune/core/errors.hpp>

namespace cotune::gpu::detail {

/// Which runtime's worker: its name in messages, the variable that makes a process one, and the header
/// whose constructor is the worker's entry.
struct worker_kind {
  const char* runtime;   ///< "CUDA"
  const char* variable;  ///< "COTUNE_CUDA_ISOLATION_WORKER"
  const char* program;   ///< the worker's argv[0]: "cotune-cuda-isolation-worker"
  const char* entry;     ///< "cotune/cuda/cuda_benchmarker.hpp"
};

inline constexpr char tag_job = 'J', tag_ready = 'H', tag_not_ready = 'h', tag_first_run = 'F', tag_values = 'R',
                      tag_failed = 'E';

/// Why a job failed in the worker ('E' frames).
enum class worker_failure : char {
  error = 'e',        ///< any other error (cotune::error)
  launch = 'l',       ///< a launch failed without harming the context (launch_error)
  timeout = 't',      ///< the first run did not end by the bench timeout: the worker is killed (hung)
  context_lost = 'c', ///< a sticky error (illegal address, trap, assert): the worker exits (crashed)
  unmappable = 'u',   ///< an argument's memory could not be mapped there: measured in-process instead
};

/// One kernel argument: its bytes, or device memory of the parent mapped through an IPC memory handle
/// (the worker passes base + offset to the kernel, and zeroes or restores `extent` bytes there).
struct worker_param {
  bool device = false;
  std::string bytes{};               ///< the value the kernel receives (when !device)
  std::array<char, 64> handle{};     ///< the allocation's CUipcMemHandle or hipIpcMemHandle_t (when device)
  std::uint64_t offset = 0;          ///< of the argument's address in that allocation
  std::uint64_t extent = 0;          ///< bytes a buffer argument spans (0 for a raw pointer)
  bool zero = false, restore = false; ///< reset_to_zero, restore_value
  bool poison = false;                ///< filled with 0xFF before the verification run (poison_outputs)
};

/// One measurement (or, when !timed, one run) of a loaded kernel.
struct worker_job {
  bool timed = false;
  std::string image{};  ///< cubin or PTX (cuModuleLoadData), or an AMD code object (hipModuleLoadData)
  std::string symbol{}; ///< the entry's lowered name
  std::array<std::uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::uint32_t shared_bytes = 0;
  std::int64_t timeout_ms = 0; ///< the first run's deadline (COTUNE_BENCH_TIMEOUT_MS), 0 = none
  bench_options bench{};
  /// The parent's timing knobs (cuda./hip.flush_factor and graph, bench.batch_below_us), which it
  /// may have set in code, where the worker's environment would not show them.
  double flush_factor = 2.0, batch_below_us = 0.0;
  bool graph = false;
  std::vector<worker_param> params{};
};

/// Appends plain values and strings; `reader` takes them back in order.
class wire_writer {
public:
  template <class T>
    requires std::is_trivially_copyable_v<T>
  wire_writer& put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  wire_writer& put_text(std::string_view s) {
    put(static_cast<std::uint64_t>(s.size()));
    out_.append(s);
    return *this;
  }
  [[nodiscard]] std::string take() { return std::move(out_); }

private:
  std::string out_;
};

/// Reads what a wire_writer wrote; a short or malformed message throws cotune::error.
class wire_reader {
public:
  explicit wire_reader(std::string_view in) : in_(in) {}
  template <class T>
    requires std::is_trivially_copyable_v<T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, in_.data(), sizeof v);
    in_.remove_prefix(sizeof v);
    return v;
  }
  std::string get_text();
  [[nodiscard]] bool done() const noexcept { return in_.empty(); }

private:
  void need(std::uint64_t n) const {
    if (n > in_.size()) throw error("isolation worker protocol: a truncated message");
  }
  std::string_view in_;
};

template <class T>
void put_optional(wire_writer& w, const std::optional<T>& v) {
  w.put(static_cast<std::uint8_t>(v.has_value()));
  if (v) w.put(*v);
}
template <class T>
std::optional<T> get_optional(wire_reader& r) {
  if (!r.get<std::uint8_t>()) return std::nullopt;
  return r.get<T>();
}

[[nodiscard]] COTUNE_DECL std::string encode(const worker_job& j);

/// The job `encode` wrote; throws cotune::error for a malformed one.
[[nodiscard]] COTUNE_DECL worker_job decode_job(std::string_view bytes);

[[nodiscard]] COTUNE_DECL std::string encode_values(const std::vector<double>& v);
[[nodiscard]] COTUNE_DECL std::vector<double> decode_values(std::string_view bytes);

/// A worker's environment variable (COTUNE_CUDA_ISOLATION_WORKER, COTUNE_HIP_ISOLATION_WORKER) holds
/// "<socket fd>:<device ordinal>"; its presence makes the executable a worker before main()
/// (gpu/isolation_worker.hpp).
/// Parses the variable's value; nothing if malformed.
[[nodiscard]] COTUNE_DECL std::optional<std::pair<int, int>> parse_worker_env(std::string_view v);

/// One received frame, or why none came.
struct frame {
  enum class ending { ok, closed, timed_out } end = ending::closed;
  char tag = 0;
  std::string payload{};
};

/// Sends one frame; false when it could not (the peer is gone: never a SIGPIPE).
COTUNE_DECL bool send_frame(int fd, char tag, std::string_view payload);

/// Reads one frame, waiting at most until `deadline`.
[[nodiscard]] COTUNE_DECL frame receive_frame(int fd, std::chrono::steady_clock::time_point deadline);

} // namespace cotune::gpu::detail

#if COTUNE_HEADER_ONLY
#include <cotune/gpu/isolation_protocol.ipp>
#endif
