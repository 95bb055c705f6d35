// The CUDA module's part of cotune's separately compiled library (cotune::cotune_separate), built when the
// module is: its knobs' group and registration, compiled once (see <cotune/impl/cuda_src.hpp>).
#include <cotune/impl/cuda_src.hpp>
