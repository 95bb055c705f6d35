// Must not compile: a host container passed to a CUDA kernel (its memory is on the host).
// expect: a host container .* cannot be a CUDA kernel's argument
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/device_buffer.hpp>

#include <vector>

void launch(const cotune::cuda::cuda_backend& b, const cotune::cuda::cuda_backend::function& f,
            cotune::cuda::device_span<float> device_data, std::vector<float>& host_data) {
#ifdef COTUNE_CONTROL
  (void)host_data;
  b.launch(f, cotune::launch_grid{}, device_data);
#else
  (void)device_data;
  b.launch(f, cotune::launch_grid{}, host_data);
#endif
}
