// A shared library that Python loads with ctypes, for scripts/gpu-dlpack-torch: each function takes
// DLManagedTensor pointers (from `torch.utils.dlpack.to_dlpack(t)`, through PyCapsule_GetPointer) and
// runs a tuned kernel on them, y += alpha * x: on the GPU with the CUDA backend (NVRTC) on the caller's
// stream, or on the CPU with the host backend. Errors come back as text (return value 1).
//
// Isolation is turned off: a CUDA isolation worker is a new process of the program's executable, which
// here is the Python interpreter, not a program built with cotune (docs/tensors.md).

#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>

#include <cotune/cotune.hpp>
#include <cotune/cuda/cuda.hpp>
#include <cotune/dlpack/dlpack.hpp>

namespace {

namespace dlpack = cotune::dlpack;

const char* cuda_axpy_code = R"(
extern "C" __global__ void axpy(const float* x, float* y, float alpha, int n) {
  for (int k = threadIdx.x; k < BLOCK; k += blockDim.x) {
    const long long i = (long long)blockIdx.x * BLOCK + k;
    if (i < n) y[i] += alpha * x[i];
  }
}
)";

const char* host_axpy_code = R"(
extern "C" void axpy(const float* x, float* y, float alpha, int n) {
  for (int i = 0; i < n; i += UNROLL)
    for (int k = 0; k < UNROLL && i + k < n; ++k) y[i + k] += alpha * x[i + k];
}
)";

using cuda_tuner = cotune::autotuner<void(dlpack::cuda_tensor<const float>, dlpack::cuda_tensor<float>, float, int),
                                     cotune::cuda::cuda_backend>;
using host_tuner = cotune::autotuner<void(dlpack::host_tensor<const float>, dlpack::host_tensor<float>, float, int)>;

template <class Options>
Options axpy_options() {
  Options o;
  o.arg_names = {"x", "y", "alpha", "n"};
  o.key = {"x"};
  o.restore_value = {"y"}; // every candidate's run is undone: the caller's y is updated once
  o.bench = {.warmup_ms = 2.0, .rep_ms = 10.0};
  return o;
}

cuda_tuner& cuda_axpy() {
  static cuda_tuner tuner = [] {
    cotune::knobs().autotuning.isolate.set("off");
    auto o = axpy_options<cuda_tuner::options>();
    o.grid = [](const cotune::config& c, const auto&, const auto&, float, int n) {
      const auto block = c.at("BLOCK").as_int();
      return cotune::launch_grid{.x = static_cast<unsigned>((n + block - 1) / block)};
    };
    return cuda_tuner{cotune::kernel_source{.name = "dlpack_torch_axpy", .code = cuda_axpy_code, .entry = "axpy"},
                      cotune::config_space{}.axis("BLOCK", {256, 1024, 4096}).num_warps({4, 8}).build(), o};
  }();
  return tuner;
}

host_tuner& host_axpy() {
  static host_tuner tuner = [] {
    cotune::knobs().autotuning.isolate.set("off");
    return host_tuner{cotune::kernel_source{.name = "dlpack_torch_host_axpy", .code = host_axpy_code, .entry = "axpy"},
                      cotune::config_space{}.axis("UNROLL", {1, 4, 8}).build(), axpy_options<host_tuner::options>()};
  }();
  return tuner;
}

int failed(const std::exception& e, char* message, std::size_t size) {
  if (message && size) std::snprintf(message, size, "%s", e.what());
  return 1;
}

} // namespace

/// y += alpha * x on the GPU, tuned per size, launched on `stream` (a CUstream, e.g. PyTorch's
/// `torch.cuda.current_stream().cuda_stream`; null: the legacy default stream). 0, or 1 with the error in
/// `message`.
extern "C" int cotune_dlpack_cuda_axpy(const DLManagedTensor* x, const DLManagedTensor* y, float alpha, void* stream,
                                       char* message, std::size_t size) {
  try {
    const dlpack::cuda_tensor<const float> xs = x;
    cuda_axpy().on(static_cast<CUstream>(stream))(xs, y, alpha, static_cast<int>(xs.size()));
    return 0;
  } catch (const std::exception& e) {
    return failed(e, message, size);
  }
}

/// y += alpha * x on the CPU (host tensors), tuned per size. 0, or 1 with the error in `message`.
extern "C" int cotune_dlpack_host_axpy(const DLManagedTensor* x, const DLManagedTensor* y, float alpha, char* message,
                                       std::size_t size) {
  try {
    const dlpack::host_tensor<const float> xs = x;
    host_axpy()(xs, y, alpha, static_cast<int>(xs.size()));
    return 0;
  } catch (const std::exception& e) {
    return failed(e, message, size);
  }
}

/// How many keys each tuner has measured: the CUDA one (`cuda` != 0) or the host one.
extern "C" int cotune_dlpack_measured_tunings(int cuda) {
  return static_cast<int>(cuda ? cuda_axpy().measured_tunings() : host_axpy().measured_tunings());
}
