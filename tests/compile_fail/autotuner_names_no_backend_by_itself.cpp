// Must not compile: <cotune/tune/autotuner.hpp> alone names no concrete backend, so an autotuner
// that names none is an error there (the host default comes from <cotune/defaults.hpp>).
// expect: wrong number of template arguments|too few template arguments
#ifdef COTUNE_CONTROL
#include <cotune/defaults.hpp>
#else
#include <cotune/tune/autotuner.hpp>
#endif

static_assert(sizeof(cotune::autotuner<void(int*, int)>) > 0);
