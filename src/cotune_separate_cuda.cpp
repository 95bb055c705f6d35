// The CUDA module's part of cotune's separately compiled library (cotune::cotune_separate), built when the
// module is: its bodies (knobs, driver and NVRTC tables, devices and their buffers, availability, backend), compiled once. <cotune/impl/cuda_src.hpp>, the one file
// for builds without CMake, holds this and the CUDA tuners' jobs, which CMake compiles as an object of
// their own (src/cotune_separate_cuda_jobs.cpp).
#include <cotune/cuda/cuda_knobs.ipp>
#include <cotune/cuda/availability.ipp>
#include <cotune/cuda/device.ipp>
#include <cotune/cuda/device_buffer.ipp>
#include <cotune/cuda/driver_api.ipp>
#include <cotune/cuda/nvrtc_api.ipp>
#include <cotune/cuda/cuda_backend.ipp>
#include <cotune/cuda/compiled_backend.ipp>
#include <cotune/cuda/isolation.ipp>
