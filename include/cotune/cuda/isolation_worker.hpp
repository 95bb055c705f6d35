#pragma once
/// \file The CUDA isolation worker's side (cuda/isolation.hpp says why workers exist and how they
/// start). A constructor of priority 101, run before the program's ordinary static initialisers and
/// before main(), looks for COTUNE_CUDA_ISOLATION_WORKER; in a worker it opens the driver, makes a
/// context on its device, reports ready and serves jobs until the parent closes the socket, then
/// leaves with _exit: the program's main() never runs there. In every other process it returns at once.
///
/// A job: load the cubin (kept while the next job has the same one), map the arguments' IPC handles
/// (kept while the next job uses them), run once and wait for it with the bench timeout as the
/// deadline, then (timed jobs) measure with cuda_benchmarker exactly as in-process. A sticky error
/// (illegal address, trap, assert) is reported and the worker exits: its context is lost.

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <cuda.h>
#include <fmt/format.h>

#include <cotune/bench/measurement.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/device.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/cuda/driver_api.hpp>
#include <cotune/cuda/isolation.hpp>
#include <cotune/cuda/isolation_protocol.hpp>
#include <cotune/detail/fork_process.hpp>

namespace cotune::cuda::detail {

/// A worker's state between jobs.
class isolation_server {
public:
  isolation_server(const device_context& ctx, device d) : ctx_(&ctx), device_(std::move(d)) {}
  isolation_server(const isolation_server&) = delete;
  isolation_server& operator=(const isolation_server&) = delete;

  /// Runs one job and answers on `fd`; false when the worker must end (its context is lost or a
  /// kernel may still be running).
  bool serve(int fd, const worker_job& job) {
    const auto& api = ctx_->api();
    try {
      ctx_->make_current();
      load(job);
      std::vector<std::string> values = map_params(job);
      std::vector<void*> params;
      for (auto& v : values) params.push_back(v.data());
      params.push_back(nullptr);
      std::vector<device_buffer<std::uint8_t>> saved(job.params.size());
      for (std::size_t i = 0; i < job.params.size(); ++i)
        if (job.params[i].restore && job.params[i].extent)
          saved[i] = device_buffer<std::uint8_t>(*ctx_, job.params[i].extent);
      auto address = [&](std::size_t i) {
        CUdeviceptr p = 0;
        std::memcpy(&p, values[i].data(), sizeof p);
        return p;
      };
      // As kernel_arguments::run_once does in-process: zero, snapshot, launch, restore.
      auto once = [&] {
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (job.params[i].zero && job.params[i].extent) memory_runtime::zero(*ctx_, address(i), job.params[i].extent);
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (saved[i].size()) memory_runtime::copy(*ctx_, saved[i].data(), address(i), job.params[i].extent);
        ctx_->check(api.launch_kernel(function_, job.grid[0], job.grid[1], job.grid[2], job.block[0], job.block[1],
                                      job.block[2], job.shared_bytes, ctx_->stream(), params.data(), nullptr),
                    "launching the candidate in its isolation worker");
        for (std::size_t i = 0; i < job.params.size(); ++i)
          if (saved[i].size()) memory_runtime::copy(*ctx_, address(i), saved[i].data(), job.params[i].extent);
      };
      std::optional<std::chrono::steady_clock::time_point> deadline;
      if (job.timeout_ms > 0) deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(job.timeout_ms);
      once();
      ctx_->synchronize("the candidate's first run", deadline);
      if (!job.timed) return send_frame(fd, tag_values, encode_values({}));
      if (!send_frame(fd, tag_first_run, {})) return false;
      const cuda_bench_options o{.graph = job.graph, .flush_factor = job.flush_factor,
                                 .batch_below_us = job.batch_below_us};
      if (!bench_ || o.graph != bench_options_.graph || o.flush_factor != bench_options_.flush_factor ||
          o.batch_below_us != bench_options_.batch_below_us) {
        bench_.emplace(device_, o);
        bench_options_ = o;
      }
      const measurement m = bench_->measure(once, job.bench);
      return send_frame(fd, tag_values, encode_values(as_values(m)));
    } catch (const timeout_error& e) {
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::timeout)) + e.what());
      return false;
    } catch (const std::exception& e) {
      const CUresult r = api.ctx_synchronize();
      const bool lost = is_sticky_error(r);
      if (lost) { // the in-process message speaks of this process's context: say what the kernel did
        (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::context_lost)) +
                                             fmt::format("it failed with {}", ctx_->library().error_text(r)));
        return false;
      }
      const auto kind = dynamic_cast<const launch_error*>(&e) ? worker_failure::launch : worker_failure::error;
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(kind)) + e.what());
      return true;
    }
  }

private:
  void load(const worker_job& job) {
    const auto& api = ctx_->api();
    if (!module_ || job.image != image_ || job.symbol != symbol_) {
      if (module_) (void)api.module_unload(module_);
      module_ = nullptr;
      image_.clear();
      ctx_->check(api.module_load_data(&module_, job.image.c_str()), "loading the candidate in its isolation worker");
      image_ = job.image;
      symbol_ = job.symbol;
      shared_opted_ = 0;
      ctx_->check(api.module_get_function(&function_, module_, job.symbol.c_str()), "cuModuleGetFunction");
    }
    if (job.shared_bytes > 48 * 1024 && job.shared_bytes > shared_opted_) {
      ctx_->check(api.func_set_attribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(job.shared_bytes)),
                  "opting into dynamic shared memory");
      shared_opted_ = job.shared_bytes;
    }
  }

  /// The kernel's parameter values, device addresses mapped into this process. Mappings the job
  /// does not use are closed (the parent may have freed that memory).
  std::vector<std::string> map_params(const worker_job& job) {
    const auto& api = ctx_->api();
    std::map<std::string, CUdeviceptr> used;
    std::vector<std::string> out;
    for (const auto& p : job.params) {
      if (!p.device) {
        out.push_back(p.bytes);
        continue;
      }
      const std::string key(p.handle.data(), p.handle.size());
      auto it = mapped_.find(key);
      CUdeviceptr base = 0;
      if (it != mapped_.end()) {
        base = it->second;
      } else {
        CUipcMemHandle h{};
        std::memcpy(&h, p.handle.data(), sizeof h);
        ctx_->check(api.ipc_open_mem_handle(&base, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                    "mapping an argument's memory (cuIpcOpenMemHandle)");
        mapped_.emplace(key, base);
      }
      used.emplace(key, base);
      const CUdeviceptr ptr = base + p.offset;
      out.emplace_back(reinterpret_cast<const char*>(&ptr), sizeof ptr);
    }
    for (auto& [key, base] : mapped_)
      if (!used.count(key)) (void)api.ipc_close_mem_handle(base);
    mapped_ = std::move(used);
    return out;
  }

  const device_context* ctx_;
  device device_;
  std::optional<cuda_benchmarker> bench_; ///< remade when the parent's timing knobs change
  cuda_bench_options bench_options_{};
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  std::string image_, symbol_;
  std::uint32_t shared_opted_ = 0;
  std::map<std::string, CUdeviceptr> mapped_;
};

/// The worker's whole life; never returns.
[[noreturn]] inline void isolation_worker_main(int fd, int ordinal) {
  cotune::detail::fork_process::close_inherited(fd);
  const driver_library* lib = try_driver();
  std::optional<isolation_server> server;
  try {
    if (!lib) throw error(driver_error());
    const device_context& ctx = lib->context(ordinal);
    server.emplace(ctx, describe_device(*lib, ordinal));
  } catch (const std::exception& e) {
    (void)send_frame(fd, tag_not_ready, fmt::format("CUDA device {} in the worker: {}", ordinal, e.what()));
    ::_exit(2);
  }
  if (!send_frame(fd, tag_ready, {})) ::_exit(0);
  for (;;) {
    frame f = receive_frame(fd, std::chrono::steady_clock::time_point::max());
    if (f.end != frame::ending::ok) ::_exit(0); // the parent is gone or done
    if (f.tag != tag_job) ::_exit(3);
    worker_job job;
    try {
      job = decode_job(f.payload);
    } catch (const std::exception& e) {
      (void)send_frame(fd, tag_failed, std::string(1, static_cast<char>(worker_failure::error)) + e.what());
      continue;
    }
    if (!server->serve(fd, job)) ::_exit(0);
  }
}

/// Before main(): becomes the worker when the parent asked for one; else nothing.
[[gnu::constructor(101), gnu::used]] static void become_isolation_worker_if_asked() {
  const char* v = std::getenv(worker_env);
  if (!v) return;
  const auto parsed = parse_worker_env(v);
  ::unsetenv(worker_env); // processes this one starts are not workers
  if (!parsed) return;
  isolation_worker_main(parsed->first, parsed->second);
}

} // namespace cotune::cuda::detail
