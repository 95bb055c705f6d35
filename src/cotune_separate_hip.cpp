// The HIP module's part of cotune's separately compiled library (cotune::cotune_separate), built when the
// module is: its knobs' group and registration, compiled once (see <cotune/impl/hip_src.hpp>). The HIP
// tuners' job is an object of its own (src/cotune_separate_hip_jobs.cpp).
#include <cotune/hip/hip_knobs.ipp>
