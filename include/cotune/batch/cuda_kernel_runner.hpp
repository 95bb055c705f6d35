#pragma once
/// \file `cotune::batch::cuda_kernel_runner`: a job's CUDA kernel, tuned by the ordinary autotuner over
/// the CUDA backend and the CUDA benchmarker (events, L2 flush) on every local CUDA device.
///
/// Each instance's buffers are filled on the host (argument_pack's fills) and copied to the device;
/// scalars go by value. The kernel receives them as its own parameters, in the job's order, straight
/// from cuLaunchKernel (no trampoline: declare `extern "C" __global__ void k(const float* a, int n)`).
/// The grid and dynamic shared memory come from the kernel's `geometry`. With several identical GPUs
/// each key's candidates are split across them, each measuring with its own copy of the arguments
/// (devices of another model than device 0 are not used: their winners would differ).
///
/// Needs the CUDA module (cotune::cuda); `cotune tune` passes it to `run_job` when built with it:
///
///     cotune::batch::run_job<cotune::file_cache, cotune::batch::cuda_kernel_runner>(job, options);

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <cuda.h>
#include <fmt/core.h>

#include <cotune/cache/file_cache.hpp>
#include <cotune/cuda/availability.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/cuda/device_buffer.hpp>
#include <cotune/detail/config.hpp>
#include <cotune/batch/argument_pack.hpp>
#include <cotune/batch/job_runner.hpp>
#include <cotune/batch/job_spec.hpp>
#include <cotune/tune/autotuner.hpp>
#include <cotune/tune/job_instantiation.hpp>

namespace cotune::batch {

/// A problem instance's arguments in one CUDA device's memory: the buffers allocated there and filled
/// from the host, the scalars by value, and `params()`, what cuLaunchKernel takes. A `Buffer` keyed by
/// the instance's key text, as argument_pack is; `zero`/`snapshot`/`restore` act on the buffers marked
/// `reset`/`restore`, on the device's stream. Copies share the memory.
class device_argument_pack {
public:
  using snapshot_type = std::vector<cuda::device_buffer<std::byte>>; ///< device copies of the restore buffers

  device_argument_pack() = default;

  /// Allocates every buffer on `d` and fills it; throws cotune::error naming the argument that cannot
  /// be made (a fill file, out of memory).
  COTUNE_DECL device_argument_pack(std::vector<argument> args, std::size_t instance_index, const cuda::device& d);

  /// The same arguments, made anew on device `d` (for the other devices measuring a key).
  [[nodiscard]] device_argument_pack on(const cuda::device& d) const { return {s_->args, s_->instance, d}; }

  [[nodiscard]] std::size_t size() const noexcept { return s_ ? s_->args.size() : 0; }
  /// The instance's key text: the autotuner keys on it.
  [[nodiscard]] std::string_view element_type_name() const noexcept {
    return s_ ? std::string_view(s_->key_text) : std::string_view("(no arguments)");
  }
  [[nodiscard]] const std::string& key_text() const noexcept { return s_->key_text; }
  [[nodiscard]] std::size_t instance_index() const noexcept { return s_->instance; }
  [[nodiscard]] const std::vector<argument>& arguments() const noexcept { return s_->args; }
  /// Buffer argument `i`'s contents, copied to the host (after the work queued on the device's stream).
  [[nodiscard]] COTUNE_DECL std::vector<std::byte> copy_to_host(std::size_t i) const;
  /// One pointer per kernel parameter, pointing at its value (null-terminated).
  [[nodiscard]] void** params() const noexcept { return s_ ? s_->params.data() : nullptr; }

  /// Zeroes the buffers marked `reset` (queued on the device's stream).
  COTUNE_DECL void zero() const;
  /// Device copies of the buffers marked `restore`.
  [[nodiscard]] COTUNE_DECL snapshot_type snapshot() const;
  /// Writes back the device copies `snapshot` took.
  COTUNE_DECL void restore(const snapshot_type& snap) const;

private:
  struct storage {
    std::vector<argument> args;
    std::string key_text;
    std::size_t instance = 0;
    cuda::device device{};
    std::vector<cuda::device_buffer<std::byte>> buffers; ///< empty for scalars
    std::vector<CUdeviceptr> pointers;                   ///< buffer addresses, as the kernel's pointer parameters
    std::vector<std::uint64_t> scalars;                  ///< scalar values in their C type
    std::vector<void*> params;                           ///< what cuLaunchKernel reads
  };

  template <class Pick, class F>
  void for_each(Pick pick, F&& f) const; // cuda_kernel_runner.ipp

  std::shared_ptr<storage> s_;
};

static_assert(WritableBuffer<device_argument_pack>);

/// The CUDA backend, launching a device_argument_pack as the kernel's own parameters (launch_raw)
/// rather than as one argument; everything else is cuda_backend's.
class job_cuda_backend : public cuda::cuda_backend {
public:
  using cuda::cuda_backend::cuda_backend;
  using cuda::cuda_backend::launch;
  using cuda::cuda_backend::launch_on;

  void launch(const function& f, const launch_grid& grid, device_argument_pack& args) const {
    launch_raw(f, grid, args.params());
  }
  void launch_on(CUstream stream, const function& f, const launch_grid& grid, device_argument_pack& args) const {
    launch_raw_on(stream, f, grid, args.params());
  }
};

static_assert(Backend<job_cuda_backend> && LaunchableWith<job_cuda_backend, device_argument_pack>);

/// A CUDA kernel of a job: `autotuner<void(device_argument_pack), job_cuda_backend, cuda_benchmarker>`.
/// Construction throws job_error naming the kernel when there is no CUDA device (why, from
/// cuda::availability()), so that each of its keys fails with that reason.
template <CacheManager Cache>
class cuda_kernel_runner final : public kernel_runner {
public:
  static constexpr std::string_view backend_name = "cuda";
  using tuner_type = autotuner<void(device_argument_pack), job_cuda_backend, cuda::cuda_benchmarker, Cache>;

  cuda_kernel_runner(const job_spec& job, const kernel_job& kj, const run_options& o)
      : kj_(kj), devices_(checked_devices(kj)), by_key_(instances_by_key(kj)), tuner_(kj.source, kj.configs(),
                                                                                      options(job, kj, o)) {}

private:
  static std::vector<cuda::device> checked_devices(const kernel_job& kj) {
    auto devices = job_cuda_backend{}.devices();
    if (devices.empty()) {
      std::string why = cuda::availability().message;
      if (why.empty()) why = "the CUDA driver reports no devices";
      throw job_error(fmt::format("{}: kernel '{}' (backend cuda) cannot be tuned here: no CUDA device ({}); run the "
                                  "job on a machine with an NVIDIA GPU, or leave the kernel out",
                                  kj.where, kj.name(), why.substr(0, why.find('\n'))));
    }
    return devices;
  }

  typename tuner_type::options options(const job_spec& job, const kernel_job& kj, const run_options& o) const {
    auto opts = job_tuner_options<typename tuner_type::options, device_argument_pack>(job, kj, o, by_key_);
    const kernel_job* k = &kj;
    opts.grid = [k](const config& c, const device_argument_pack& p) {
      return k->grid_for(c, k->instances.at(p.instance_index()));
    };
    // Candidates are split across the devices interchangeable with device 0 (the tuner checks).
    const auto* devices = &devices_;
    if (devices_.size() > 1)
      opts.args_for_device = [devices](std::size_t d, const device_argument_pack& p) {
        return std::tuple<device_argument_pack>(p.on(devices->at(d)));
      };
    return opts;
  }

  [[nodiscard]] std::string do_fingerprint() const override { return tuner_.backend().fingerprint(devices_.at(0)); }
  [[nodiscard]] const tuning_result& do_tune(std::size_t index) override {
    device_argument_pack pack(kj_.arguments_for(kj_.instances.at(index)), index, devices_.at(0));
    return tuner_.tune_now(pack);
  }

  const kernel_job& kj_;
  std::vector<cuda::device> devices_;
  std::map<std::string, const instance*, std::less<>> by_key_;
  tuner_type tuner_;
};

} // namespace cotune::batch

#if COTUNE_HEADER_ONLY
#include <cotune/batch/cuda_kernel_runner.ipp>
#else
// COTUNE_SEPARATE_COMPILATION: a job's CUDA tuner's job, table of keys and core over the file cache are
// compiled once, in <cotune/impl/cuda_src.hpp> (as the CUDA tuner's in <cotune/cuda/cuda.hpp>).
COTUNE_EXTERN_TUNING_JOB(cotune::batch::job_cuda_backend, cotune::cuda::cuda_benchmarker, cotune::file_cache);
#endif
