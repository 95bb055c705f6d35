// The HIP module's tuning job in cotune's separately compiled library (cotune::cotune_separate), built
// when the module is: an object of its own, so that only programs that name a HIP tuner link it (and
// the test libraries can leave it out; see <cotune/impl/hip_jobs_src.hpp>).
#include <cotune/impl/hip_jobs_src.hpp>
