// Header-only (the default mode; no COTUNE_SEPARATE_COMPILATION): a file that instantiates a tuner
// makes the process-wide set-up during static initialisation (tune/process_setup.hpp), as the
// impl/src.hpp file does in separate mode: before `main`, the core, search and job knob groups are in
// the registry and the shipped-database lookup is installed, though nothing has called their
// accessors or tuned yet. With an argument, the program also tunes a real host kernel through it.
// Exits 0 on success; prints what failed otherwise.
#include <cstdio>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>

#if !COTUNE_HEADER_ONLY
#error "this program checks the header-only mode: build it without COTUNE_SEPARATE_COMPILATION"
#endif

namespace {

bool registered(const std::string& name) {
  for (const auto* k : cotune::knob_registry::instance().all())
    if (k->name() == name) return true;
  std::printf("FAIL: knob %s is not registered before the first tuner runs\n", name.c_str());
  return false;
}

// The tuner whose instantiation brings the set-up into this file; run only when asked.
int tune_once() {
  static const char* code = R"(
extern "C" void fill(float* x, int n) { for (int i = 0; i < n; i += STEP) x[i] = 2.0f * i; }
)";
  cotune::kernel_source kernel{.name = "fill", .code = code, .entry = "fill"};
  cotune::autotuner<void(float*, int)> tuner{kernel, {cotune::config{{"STEP", 1}}, cotune::config{{"STEP", 2}}},
                                             {.arg_names = {"x", "n"}, .key = {"n"}}};
  std::vector<float> x(64, -1.0f);
  tuner(x.data(), static_cast<int>(x.size()));
  if (x[2] != 4.0f) {
    std::printf("FAIL: the tuned kernel wrote %g at x[2], not 4\n", static_cast<double>(x[2]));
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char**) {
  bool ok = registered("cache.dir") && registered("search.strategy") && registered("db.path");
  if (!cotune::shipped_winner_source()) {
    std::puts("FAIL: the shipped-database lookup is not installed before the first tuner runs");
    ok = false;
  }
  if (ok && argc > 1 && tune_once() != 0) ok = false;
  if (ok) std::puts("ok: the knob groups and the shipped-database lookup are set up before main");
  return ok ? 0 : 1;
}
