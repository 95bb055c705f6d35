// Must not compile: a read-only device span turned into a writable one.
// expect: conversion from [^ ]*device_span<[^ ]*const float>
#include <cotune/cuda/device_buffer.hpp>

void use(cotune::cuda::device_span<const float> read_only) {
#ifdef COTUNE_CONTROL
  cotune::cuda::device_span<const float> view = read_only;
#else
  cotune::cuda::device_span<float> view = read_only;
#endif
  (void)view;
}
