// Must not compile: a std::vector argument taken by value (the kernel would write into a copy).
// expect: a container argument taken by value is a copy
#include <cotune/cotune.hpp>

#include <span>
#include <vector>

#ifdef COTUNE_CONTROL
using tuner = cotune::autotuner<void(std::span<float>, int)>;
#else
using tuner = cotune::autotuner<void(std::vector<float>, int)>;
#endif

void make() { tuner t{{}, {}, {.arg_names = {"x", "n"}}}; }
