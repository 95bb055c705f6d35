#pragma once
/// \file The CUDA tuners' jobs, tables of keys and cores over the file cache, compiled once for
/// COTUNE_SEPARATE_COMPILATION: declared `extern template` by <cotune/cuda/cuda.hpp> (a CUDA tuner)
/// and <cotune/batch/cuda_kernel_runner.hpp> (a tuning job's CUDA kernels). <cotune/impl/cuda_src.hpp>
/// includes it; the `cotune::cotune_separate` CMake target compiles it as an object of its own, which a
/// static link takes only into programs that name such a tuner.

#if !defined(COTUNE_SEPARATE_COMPILATION)
#error "<cotune/impl/cuda_jobs_src.hpp> is for COTUNE_SEPARATE_COMPILATION builds: define it in every file of the program"
#endif

#include <cotune/cache/file_cache.hpp>
#include <cotune/cuda/cuda.hpp>
#include <cotune/cuda/cuda_backend.hpp>
#include <cotune/cuda/cuda_benchmarker.hpp>
#include <cotune/batch/cuda_kernel_runner.hpp>
#include <cotune/batch/cuda_kernel_runner.ipp>
#include <cotune/tune/job_instantiation.hpp>

COTUNE_INSTANTIATE_TUNING_JOB(cotune::cuda::cuda_backend, cotune::cuda::cuda_benchmarker, cotune::file_cache);
COTUNE_INSTANTIATE_TUNING_JOB(cotune::batch::job_cuda_backend, cotune::cuda::cuda_benchmarker, cotune::file_cache);
