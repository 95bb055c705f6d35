// Must not compile: zeroing a read-only host span (what reset_to_zero would do to it).
// expect: (no matching function for call to .*zero|constraints not satisfied)
#include <cotune/core/buffer.hpp>

void use(cotune::host_span<float> writable, cotune::host_span<const float> read_only) {
#ifdef COTUNE_CONTROL
  writable.zero();
  (void)read_only;
#else
  (void)writable;
  read_only.zero();
#endif
}
