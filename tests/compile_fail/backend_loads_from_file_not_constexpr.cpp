// Must not compile: a backend that declares loads_from_file, but not as a constant (the binary cache
// would otherwise hand it bytes instead of the cached file without a word).
// expect: loads_from_file must be `static constexpr bool`
#include <cotune/defaults.hpp>

struct file_loading_backend : cotune::host_backend {
#ifdef COTUNE_CONTROL
  static constexpr bool loads_from_file = true;
#else
  static inline bool loads_from_file = true;
#endif
};

static_assert(sizeof(cotune::autotuner<void(int*, int), file_loading_backend>) > 0);
