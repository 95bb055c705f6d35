// Must not compile: restoring a read-only device span from a snapshot (what restore_value would do).
// expect: (no matching function for call to .*restore|constraints not satisfied)
#include <cotune/cuda/device_buffer.hpp>

void use(cotune::cuda::device_span<float> writable, cotune::cuda::device_span<const float> read_only) {
#ifdef COTUNE_CONTROL
  writable.restore(writable.snapshot());
  (void)read_only;
#else
  (void)writable;
  read_only.restore(read_only.snapshot());
#endif
}
