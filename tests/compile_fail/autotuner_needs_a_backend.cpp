// Must not compile: an autotuner over a type that is not a cotune::Backend.
// expect: satisf[a-z]* [a-z ]*[^ ]*Backend
#include <cotune/backend/host_backend.hpp>
#include <cotune/tune/autotuner.hpp>

struct not_a_backend {
  using device = int;
};

#ifdef COTUNE_CONTROL
using backend_under_test = cotune::host_backend;
#else
using backend_under_test = not_a_backend;
#endif

static_assert(sizeof(cotune::autotuner<void(int), backend_under_test>) > 0);
