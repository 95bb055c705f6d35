// Must not compile: a backend whose device_key is there but has the wrong shape (it would otherwise
// be ignored without a word, and two tuners on one GPU could time at once).
// expect: device_key must be `std::string device_key\(const device&\) const`
#include <string>

#include <cotune/defaults.hpp>

struct keyed_backend : cotune::host_backend {
#ifdef COTUNE_CONTROL
  [[nodiscard]] std::string device_key(const device&) const { return "cpu0"; }
#else
  [[nodiscard]] int device_key(const device&) const { return 0; }
#endif
};

static_assert(sizeof(cotune::autotuner<void(int*, int), keyed_backend>) > 0);
