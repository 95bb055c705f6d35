// The CUDA module's tuning jobs in cotune's separately compiled library (cotune::cotune_separate), built
// when the module is: an object of its own, so that only programs that name a CUDA tuner link it (and
// the test libraries can leave it out; see <cotune/impl/cuda_jobs_src.hpp>).
#include <cotune/impl/cuda_jobs_src.hpp>
