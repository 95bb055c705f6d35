// `cotune precompile`: GPU kernels compiled ahead of time into one file a program ships
// (gpu/precompiled_file.hpp), from a job file's kernels and spaces. The CMake function
// cotune_precompile() (cmake/cotune_precompile.cmake) runs it at build time.
//
//   cotune precompile JOB --arch sm_90 [--arch gfx90a ...] -o FILE [--nvcc PATH] [--hipcc PATH] [-j N]
//
// Each CUDA kernel of the job (backend "cuda") is compiled by nvcc for every sm_XY architecture named,
// each HIP kernel (backend "hip") by hipcc for every gfx architecture, once per config of its space
// that some instance's constraints allow (every config when the job has no instance). The options are
// the ones the runtime's backend would give its runtime compiler (its `precompiled_options`, so that
// the entry's recipe digest is the one the runtime computes), plus what makes nvcc or hipcc compile
// the same thing: a cubin (`-cubin`), a bare code object (`--cuda-device-only --no-gpu-bundle-output`,
// hip/hip_runtime.h included as hiprtc does), and, for a name expression (`scale<BLOCK>`), a line that
// takes the instance's address so that it is instantiated. A config the compiler refuses is recorded
// as a failure with its log (COTUNE_PRECOMPILED=only then reports it); the command fails only when it
// cannot run at all (exit 1) or the job is refused (exit 2).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cotune/batch/job_spec.hpp>
#include <cotune/gpu/precompiled_file.hpp>
#ifdef COTUNE_HAS_CUDA
#include <cotune/cuda/cuda_backend.hpp>
#endif
#ifdef COTUNE_HAS_HIP
#include <cotune/hip/hip_backend.hpp>
#endif

#include "commands.hpp"

namespace cj = cotune::batch;
namespace fs = std::filesystem;

namespace cotune_tool {

namespace {

struct precompile_args {
  std::string job;
  std::vector<std::string> archs;
  std::string output;
  std::string nvcc = "nvcc";
  std::string hipcc = "hipcc";
  unsigned jobs = 0;
};

/// One compile: a kernel, a config, an architecture, and the command that builds it.
struct compile_task {
  const cotune::kernel_source* kernel = nullptr;
  std::string config, arch, recipe, compiler;
  std::vector<std::string> argv;
  fs::path source, image;
  cotune::gpu::precompiled_entry entry;
};

/// What a compiler run did: its exit status (-1: it could not be started) and its output.
struct run_result {
  int exit_code = -1;
  std::string output;
};

/// The whole content of `path`, or nothing when it cannot be read.
std::optional<std::string> file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Runs `argv` (argv[0] looked up on PATH) with stdout and stderr into `log`, and waits for it.
run_result run(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args.front(), &actions, nullptr, args.data(), ::environ);
  posix_spawn_file_actions_destroy(&actions);
  run_result r;
  if (err != 0) {
    r.output = fmt::format("{} could not be run: {}", argv.front(), std::strerror(err));
    return r;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.output = file_text(log).value_or("");
  return r;
}

/// "sm_90" -> 90; nothing for anything else.
std::optional<int> sm_number(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  int n = 0;
  const auto* end = arch.data() + arch.size();
  const auto [p, ec] = std::from_chars(arch.data() + 3, end, n);
  if (ec != std::errc{} || p != end || n < 10) return std::nullopt;
  return n;
}

/// The compiler's first line that names its version ("Cuda compilation tools, release 13.0, V13.0.88").
std::string compiler_version(const std::string& compiler, std::string_view word, const fs::path& work) {
  const auto r = run({compiler, "--version"}, work / "version.log");
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.find(word) != std::string::npos) return fmt::format("{} ({})", fs::path(compiler).filename().string(), line);
  return fs::path(compiler).filename().string();
}

/// The source a compiler gets: the kernel's own text, and for a name expression a line that
/// instantiates it (taking its address, as a launch would).
std::string source_text(const cotune::kernel_source& k, std::size_t index) {
  if (k.entry.find('<') == std::string::npos) return k.code;
  return fmt::format("{}\n// cotune precompile: instantiate the entry's name expression\nvoid* cotune_precompiled_instance_{} "
                     "= (void*)&{};\n",
                     k.code, index, k.entry);
}

/// The configs of `kernel` that some instance allows (all of them without instances), in space order.
std::vector<cotune::config> configs_of(const cj::kernel_job& kernel) {
  auto all = kernel.configs();
  if (kernel.instances.empty()) return all;
  std::vector<cotune::config> out;
  std::set<std::string> seen;
  for (const auto& inst : kernel.instances)
    for (auto& c : kernel.candidates(inst, all))
      if (seen.insert(c.text()).second) out.push_back(c);
  return out;
}

void run_task(compile_task& t) {
  auto& e = t.entry;
  const auto r = run(t.argv, fs::path(t.image.string() + ".log"));
  e.log = r.output;
  if (r.exit_code != 0) {
    e.ok = false;
    e.log = r.exit_code < 0 ? r.output : fmt::format("{} failed (exit {}):\n{}", t.compiler, r.exit_code, r.output);
    return;
  }
  auto image = file_text(t.image);
  if (!image || image->empty()) {
    e.ok = false;
    e.log += fmt::format("\n{} wrote no image at '{}'", t.compiler, t.image.string());
    return;
  }
  std::string why;
  auto symbol = cotune::gpu::elf_kernel_symbol(*image, t.kernel->entry, &why);
  if (!symbol) {
    e.ok = false;
    e.log += fmt::format("\nthe kernel's symbol was not found: {}", why);
    return;
  }
  e.image = *std::move(image);
  e.lowered_name = *std::move(symbol);
}

template <class Backend, class Device>
void plan(const Backend& backend, const cj::kernel_job& kernel, const Device& d, const std::string& arch,
          const std::vector<std::string>& head, const std::vector<std::string>& tail, const std::string& compiler,
          const fs::path& work, std::string_view suffix, std::vector<compile_task>& tasks) {
  for (const auto& c : configs_of(kernel)) {
    compile_task t;
    const std::size_t index = tasks.size();
    t.kernel = &kernel.source;
    t.compiler = compiler;
    const auto opts = backend.precompiled_options(kernel.source, c, d);
    t.entry = {kernel.source.name, c.text(), arch, cotune::gpu::precompiled_recipe(kernel.source, c, opts), {}, compiler, true,
               {}, {}};
    t.source = work / fmt::format("{}-{}-{}{}", kernel.source.name, index, arch, suffix);
    t.image = work / fmt::format("{}-{}-{}.image", kernel.source.name, index, arch);
    t.argv = head;
    t.argv.insert(t.argv.end(), opts.begin(), opts.end());
    t.argv.insert(t.argv.end(), {"-o", t.image.string()});
    t.argv.insert(t.argv.end(), tail.begin(), tail.end());
    t.argv.push_back(t.source.string());
    std::ofstream(t.source, std::ios::binary | std::ios::trunc) << source_text(kernel.source, index);
    tasks.push_back(std::move(t));
  }
}

int run_precompile(const precompile_args& a) {
  const auto started = std::chrono::steady_clock::now();
  cj::job_spec job;
  try {
    job = cj::job_spec::load(a.job);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cotune: error: {}\n", e.what());
    return 2;
  }
  const fs::path output = fs::absolute(a.output);
  const fs::path work = fs::path(output.string() + ".work");
  fs::create_directories(work);

  std::vector<compile_task> tasks;
  std::set<std::string> used_archs;
  std::string cuda_compiler, hip_compiler;
  for (const auto& kernel : job.kernels) {
    if (kernel.backend != "cuda" && kernel.backend != "hip") continue;
    for (const auto& arch : a.archs) {
      const bool cuda_arch = sm_number(arch).has_value(), hip_arch = arch.starts_with("gfx");
      if (!cuda_arch && !hip_arch)
        throw cotune::error(fmt::format("architecture '{}' is neither sm_XY (CUDA) nor gfxNNN (HIP)", arch));
      if (kernel.backend == "cuda" && cuda_arch) {
#ifdef COTUNE_HAS_CUDA
        const cotune::cuda::cuda_backend backend(cotune::cuda::cuda_backend::options{.preload_nvrtc = false});
        if (cotune::cuda::detail::requested_arch(kernel.source.options))
          throw cotune::error(fmt::format("kernel '{}' names its own architecture in its options; precompile it without "
                                          "one (the architectures come from --arch)",
                                          kernel.name()));
        const int sm = *sm_number(arch);
        const cotune::cuda::device d{.ordinal = 0, .cc = {sm / 10, sm % 10}, .name = "precompile"};
        if (cuda_compiler.empty()) cuda_compiler = compiler_version(a.nvcc, "release", work);
        plan(backend, kernel, d, arch, {a.nvcc, "-cubin", "-arch=" + arch}, {"-x", "cu"}, cuda_compiler, work, ".cu", tasks);
        used_archs.insert(arch);
#else
        throw cotune::error("this cotune was built without its CUDA module: it cannot precompile CUDA kernels");
#endif
      } else if (kernel.backend == "hip" && hip_arch) {
#ifdef COTUNE_HAS_HIP
        const cotune::hip::hip_backend backend;
        // A wavefront is 64 threads on gfx9 (CDNA), 32 on gfx10 and later (RDNA): COTUNE_WARP_SIZE and
        // the block's threads depend on it, as on the device.
        const cotune::hip::device d{.arch_name = arch, .warp_size = arch.starts_with("gfx9") ? 64 : 32};
        if (hip_compiler.empty()) hip_compiler = compiler_version(a.hipcc, "version", work);
        plan(backend, kernel, d, arch,
             {a.hipcc, "--offload-arch=" + arch, "--cuda-device-only", "-c", "--no-gpu-bundle-output", "-include",
              "hip/hip_runtime.h"},
             {"-x", "hip"}, hip_compiler, work, ".hip", tasks);
        used_archs.insert(arch);
#else
        throw cotune::error("this cotune was built without its HIP module: it cannot precompile HIP kernels");
#endif
      }
    }
  }
  if (tasks.empty())
    throw cotune::error(fmt::format("job '{}' has no CUDA kernel for an sm_XY architecture and no HIP kernel for a gfx "
                                    "architecture among --arch",
                                    a.job));

  const unsigned threads = std::max(1u, std::min<unsigned>(a.jobs ? a.jobs : std::thread::hardware_concurrency(),
                                                           static_cast<unsigned>(tasks.size())));
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back([&] {
      for (std::size_t t; (t = next++) < tasks.size();) run_task(tasks[t]);
    });
  for (auto& t : pool) t.join();

  std::vector<cotune::gpu::precompiled_entry> entries;
  std::size_t failed = 0;
  for (auto& t : tasks) {
    if (!t.entry.ok) {
      ++failed;
      fmt::print(stderr, "cotune precompile: kernel '{}' config {{{}}} for {} failed (recorded as a failure):\n{}\n",
                 t.entry.kernel, t.entry.config, t.entry.arch, t.entry.log);
    }
    entries.push_back(std::move(t.entry));
  }
  cotune::gpu::precompiled_file::write(output, entries);
  std::error_code ignored;
  fs::remove_all(work, ignored);
  std::string archs;
  for (const auto& arch : used_archs) archs += (archs.empty() ? "" : " ") + arch;
  fmt::print("cotune precompile: {} entries ({} failed) for {} in {:.1f} s with {} compile threads: {}\n", entries.size(),
             failed, archs, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), threads,
             output.string());
  return 0;
}

} // namespace

command add_precompile_command(CLI::App& app) {
  auto args = std::make_shared<precompile_args>();
  auto* cmd = app.add_subcommand("precompile", "compile a job's GPU kernels ahead of time (nvcc, hipcc) into one file "
                                               "a program loads instead of compiling (COTUNE_PRECOMPILED_FILE)");
  cmd->add_option("job", args->job, "the job file naming the kernels and their spaces")->required()->check(CLI::ExistingFile);
  cmd->add_option("--arch", args->archs, "an architecture to build for: sm_90 (CUDA kernels), gfx90a (HIP kernels); repeat")
      ->required();
  cmd->add_option("-o,--output", args->output, "the file to write")->required();
  cmd->add_option("--nvcc", args->nvcc, "the nvcc to run (default: nvcc on PATH)");
  cmd->add_option("--hipcc", args->hipcc, "the hipcc to run (default: hipcc on PATH)");
  cmd->add_option("-j,--jobs", args->jobs, "compiles at once (default: one per hardware thread)");
  return {cmd, [args] { return run_precompile(*args); }};
}

} // namespace cotune_tool
