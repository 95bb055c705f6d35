// Conan's test package: the headers compile against the packaged dependencies, the program links
// and runs. It builds a config and computes a cache key; it compiles no kernel, so that the test
// needs no compiler at run time (cross builds, minimal images).
#include <cstdio>

#include <cotune/cotune.hpp>
#ifdef COTUNE_HAS_REDIS
#include <cotune/redis/redis.hpp>
#endif
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda.hpp>
#endif

int main() {
  const cotune::config cfg{{"BLOCK", 128}, {"UNROLL", 4}};
  const auto key = cotune::detail::sha256_hex(cfg.text());
  std::printf("cotune %s: config {%s}, key %s\n", cotune::version, cfg.text().c_str(), key.c_str());
#ifdef COTUNE_HAS_REDIS
  std::printf("redis module: key prefix %s\n", cotune::redis::redis_knobs().prefix.get().c_str());
#endif
#ifdef COTUNE_HAS_CUDA
  std::printf("cuda module: %s\n", cotune::cuda::availability().text().c_str());
#endif
  return key.size() == 64 ? 0 : 1;
}
