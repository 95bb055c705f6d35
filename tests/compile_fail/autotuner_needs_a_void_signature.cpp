// Must not compile: an autotuner whose first argument is not a kernel signature void(Args...).
// expect: cotune::autotuner's first argument is the kernel's signature
#include <cotune/defaults.hpp>

#ifdef COTUNE_CONTROL
using signature_under_test = void(int);
#else
using signature_under_test = int(int);
#endif

static_assert(sizeof(cotune::autotuner<signature_under_test>) > 0);
