// Must not compile: a backend whose take_warnings is there but has the wrong shape (its warnings would
// otherwise never reach the observers).
// expect: take_warnings must be `std::vector<std::string> take_warnings\(\) const`
#include <string>
#include <vector>

#include <cotune/defaults.hpp>

struct warning_backend : cotune::host_backend {
#ifdef COTUNE_CONTROL
  [[nodiscard]] std::vector<std::string> take_warnings() const { return {}; }
#else
  [[nodiscard]] std::string take_warnings() const { return {}; }
#endif
};

static_assert(sizeof(cotune::autotuner<void(int*, int), warning_backend>) > 0);
