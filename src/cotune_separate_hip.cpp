// The HIP module's part of cotune's separately compiled library (cotune::cotune_separate), built when the
// module is: its bodies (knobs, runtime and hiprtc tables, devices and their buffers, availability, backend), compiled
// once (see <cotune/impl/hip_src.hpp>). The HIP tuners' job is an object of its own
// (src/cotune_separate_hip_jobs.cpp).
#include <cotune/hip/hip_knobs.ipp>
#include <cotune/hip/availability.ipp>
#include <cotune/hip/device.ipp>
#include <cotune/hip/device_buffer.ipp>
#include <cotune/hip/hip_api.ipp>
#include <cotune/hip/hiprtc_api.ipp>
#include <cotune/hip/hip_backend.ipp>
#include <cotune/hip/compiled_backend.ipp>
#include <cotune/hip/isolation.ipp>
