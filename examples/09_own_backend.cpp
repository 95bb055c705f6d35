// 09: a backend of one's own. cotune's autotuner names no concrete backend: anything that satisfies
// the `Backend` concept (backend/backend.hpp) can be tuned, cached and launched. This one runs C++
// function templates already compiled into the program: "compiling" a candidate picks the template
// instance its config names, "loading" it gives a function pointer, and launching calls it. The
// tuner, its caches (the binary is the instance's name), the host benchmarker and the printed table
// work unchanged.
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <cotune/cotune.hpp>

using signature = void(cotune::host_span<const float>, cotune::host_span<float>, int);

/// The kernel: a sum of `n` floats kept in LANES independent accumulators (more lanes: more
/// instruction-level parallelism, until registers run out).
template <int Lanes>
void sum_lanes(cotune::host_span<const float> x, cotune::host_span<float> out, int n) {
  float acc[Lanes] = {};
  int i = 0;
  for (; i + Lanes <= n; i += Lanes)
    for (int l = 0; l < Lanes; ++l) acc[l] += x.data()[i + l];
  float total = 0;
  for (; i < n; ++i) total += x.data()[i];
  for (int l = 0; l < Lanes; ++l) total += acc[l];
  out.data()[0] = total;
}

/// A backend whose kernels are instances of function templates in this program, one per config.
class instance_backend {
public:
  using kernel_fn = void (*)(cotune::host_span<const float>, cotune::host_span<float>, int);

  struct device {
    friend bool operator==(const device&, const device&) = default;
  };
  struct binary {
    std::string instance; ///< "sum_lanes<4>": what the binary cache stores
  };
  struct function {
    kernel_fn fn = nullptr;
  };

  // Optional capabilities (each a named concept in backend/backend.hpp).
  using default_benchmarker_type = cotune::host_benchmarker; ///< timed by the host clock
  static constexpr bool benchmark_overlaps_compile = false;  ///< compiles share the measured cores
  static constexpr bool uses_launch_options = false;         ///< no num_warps & co. in its configs
  static constexpr bool fork_isolation = true;               ///< its kernels run in the process's memory

  // DeviceProvider: one device, described for cache keys and messages.
  [[nodiscard]] std::vector<device> devices() const { return {device{}}; }
  [[nodiscard]] std::string fingerprint(const device&) const { return "instance_backend 1 (this program)"; }
  [[nodiscard]] std::string device_name(const device&) const { return "this process"; }

  // Compiler: what a binary is made from, how it is made, and how the cache stores it.
  [[nodiscard]] cotune::binary_recipe binary_key(const cotune::kernel_source& k, const cotune::config& c,
                                                 const device&) const {
    return {.backend = "instance", .ingredients = {k.entry, instance_name(k, c)}, .file = k.name + ".instance"};
  }
  [[nodiscard]] binary compile(const cotune::kernel_source& k, const cotune::config& c, const device&) const {
    auto name = instance_name(k, c);
    if (!table().contains(name))
      throw cotune::compile_error("no instance " + name + " in this program", "compiled instances: sum_lanes<1|2|4|8|16>");
    return {name};
  }
  [[nodiscard]] cotune::binary_image to_image(const binary& b) const {
    cotune::binary_image image;
    image.bytes = b.instance;
    return image;
  }
  [[nodiscard]] std::optional<binary> from_image(cotune::binary_image img) const {
    if (!table().contains(img.bytes)) return std::nullopt; // not one of ours: a miss
    return binary{img.bytes};
  }

  // Loader and launch.
  [[nodiscard]] function load(const binary& b, const cotune::kernel_source&, const cotune::config&,
                              const device&) const {
    return {table().at(b.instance)};
  }
  template <class... Args>
  void launch(const function& f, const cotune::launch_grid&, Args&... args) const {
    f.fn(args...);
  }

private:
  static std::string instance_name(const cotune::kernel_source& k, const cotune::config& c) {
    return k.entry + "<" + c.at("LANES").text() + ">";
  }
  static const std::map<std::string, kernel_fn>& table() {
    static const std::map<std::string, kernel_fn> instances{
        {"sum_lanes<1>", &sum_lanes<1>}, {"sum_lanes<2>", &sum_lanes<2>},   {"sum_lanes<4>", &sum_lanes<4>},
        {"sum_lanes<8>", &sum_lanes<8>}, {"sum_lanes<16>", &sum_lanes<16>},
    };
    return instances;
  }
};

// What the autotuner requires, and the optional capabilities this backend means to offer (a misspelt
// member fails here instead of silently switching a feature off).
static_assert(cotune::Backend<instance_backend>);
static_assert(cotune::LaunchableWith<instance_backend, cotune::host_span<const float>, cotune::host_span<float>, int>);
static_assert(cotune::DeclaresBenchmarker<instance_backend> && cotune::DeclaresCompileOverlap<instance_backend> &&
              cotune::DeclaresLaunchOptions<instance_backend> && cotune::DeclaresForkIsolation<instance_backend>);

int main() {
  // The source is only a name here: the backend finds the entry's instances in its table. LANES 32 has
  // no instance, so that candidate fails to "compile", and the tuning goes on without it.
  cotune::kernel_source kernel{.name = "sum", .code = "sum_lanes", .entry = "sum_lanes"};
  auto configs = cotune::config_space{}.axis("LANES", {1, 2, 4, 8, 16, 32}).build();
  cotune::autotuner<signature, instance_backend> tuner{
      kernel, configs, {.arg_names = {"x", "out", "n"}, .key = {"n"}, .bench = cotune::bench_options{.warmup_ms = 2, .rep_ms = 10}}};

  const int n = 1 << 16;
  std::vector<float> x(n, 0.5f), out(1, 0.0f);
  const auto& result = tuner.tune_now(x, out, n);
  cotune::printing_observer::print_table(stdout, result);

  tuner(x, out, n); // the tuned call: a lookup and instance_backend::launch
  const auto& failed = result.candidates.back();
  const bool failed_as_compile_error = failed.status == cotune::candidate_status::compile_error;
  std::printf("best {%s}; LANES 32: %s; sum %.1f (expected %.1f)\n", result.shown(result.best()).c_str(),
              std::string(cotune::to_string(failed.status)).c_str(), out[0], 0.5 * n);
  return out[0] == 0.5f * n && failed_as_compile_error ? 0 : 1;
}
