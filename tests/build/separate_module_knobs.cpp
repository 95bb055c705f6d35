// Built with COTUNE_SEPARATE_COMPILATION and linked against the static cotune::cotune_separate: each
// module's knob group and registration is one object of that library (src/cotune_separate_<module>.cpp),
// and a static link takes an object only when something refers to it. This program includes the knob
// headers of the modules built here and never calls their accessors, so it passes only if including the
// header is enough for the knobs to be registered before `main`, as they are header-only.
// Exits 0 on success; prints what failed otherwise.
#include <cstdio>
#include <string>

#include <cotune/knobs/knob.hpp>
#if COTUNE_HAS_CUDA
#include <cotune/cuda/cuda_knobs.hpp>
#endif
#if COTUNE_HAS_HIP
#include <cotune/hip/hip_knobs.hpp>
#endif
#if COTUNE_HAS_REDIS
#include <cotune/redis/redis_knobs.hpp>
#endif

#if !defined(COTUNE_SEPARATE_COMPILATION) || COTUNE_HEADER_ONLY
#error "this program checks the separate mode: build it with COTUNE_SEPARATE_COMPILATION"
#endif

namespace {

bool registered(const std::string& group) {
  for (const auto* k : cotune::knob_registry::instance().all())
    if (k->name().starts_with(group + ".")) return true;
  std::printf("FAIL: no %s.* knob is registered though <cotune/%s/%s_knobs.hpp> is included\n", group.c_str(),
              group.c_str(), group.c_str());
  return false;
}

} // namespace

int main() {
  bool ok = true;
#if COTUNE_HAS_CUDA
  ok = registered("cuda") && ok;
#endif
#if COTUNE_HAS_HIP
  ok = registered("hip") && ok;
#endif
#if COTUNE_HAS_REDIS
  ok = registered("redis") && ok;
#endif
  if (ok) std::puts("ok: the knobs of every included module are registered");
  return ok ? 0 : 1;
}
