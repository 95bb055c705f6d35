// The one file that compiles the job declared extern in separate_own_job.hpp.
#include "separate_own_job.hpp"

COTUNE_INSTANTIATE_TUNING_JOB(cotune::host_backend, cotune::host_benchmarker, separate_test::counting_cache);
