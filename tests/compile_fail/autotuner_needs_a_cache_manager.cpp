// Must not compile: an autotuner whose cache is not a cotune::CacheManager.
// expect: satisf[a-z]* [a-z ]*[^ ]*CacheManager
#include <cotune/defaults.hpp>

struct not_a_cache {};

#ifdef COTUNE_CONTROL
using cache_under_test = cotune::file_cache;
#else
using cache_under_test = not_a_cache;
#endif

static_assert(sizeof(cotune::autotuner<void(int), cotune::host_backend, cotune::host_benchmarker, cache_under_test>) > 0);
