#pragma once
/// \file The bodies of cuda/nvrtc_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/cuda_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/cuda/nvrtc_api.hpp>

namespace cotune::cuda::detail {

COTUNE_DECL std::vector<std::string> nvrtc_search_paths() {
  if (auto chosen = cuda_knobs().libnvrtc_path.get()) return {*chosen};
  const std::string soname = fmt::format(COTUNE_FMT("libnvrtc.so.{}"), CUDA_VERSION / 1000);
  std::vector<std::string> paths{soname, "libnvrtc.so"};
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) paths.push_back(fmt::format(COTUNE_FMT("{}/lib64/{}"), v, soname));
  paths.push_back("/usr/local/cuda/lib64/" + soname);
  return paths;
}

COTUNE_DECL const nvrtc_entry& current_nvrtc_entry() {
  const auto key = nvrtc_search_paths();
  return gpu::library_for<nvrtc_library>(key);
}

} // namespace cotune::cuda::detail

namespace cotune::cuda {

COTUNE_DECL std::unique_ptr<nvrtc_library> nvrtc_library::open(const std::vector<std::string>& paths,
                                                               std::string& why) {
  std::string tried;
  auto lib = gpu::open_first<nvrtc_library>(
      paths, tried,
      [](void* handle, const std::string& path) { return std::unique_ptr<nvrtc_library>(new nvrtc_library(handle, path)); },
      &nvrtc_library::resolve,
      "(an NVRTC older than CUDA 11.1?)");
  if (lib) {
    lib->api_.version(&lib->major_, &lib->minor_);
    int n = 0;
    if (lib->api_.get_num_supported_archs(&n) == NVRTC_SUCCESS && n > 0) {
      lib->archs_.resize(static_cast<std::size_t>(n));
      if (lib->api_.get_supported_archs(lib->archs_.data()) != NVRTC_SUCCESS) lib->archs_.clear();
    }
    lib->include_dir_ = find_toolkit_include_dir(lib->handle_);
    return lib;
  }
  why = fmt::format(
      COTUNE_FMT("cannot load NVRTC (needed to compile CUDA kernels); tried:{}\ninstall the CUDA toolkit's "
                 "NVRTC, or set COTUNE_LIBNVRTC_PATH (cotune::cuda::cuda_knobs().libnvrtc_path) to libnvrtc.so's path"),
      tried);
  return nullptr;
}

COTUNE_DECL nvrtc_output nvrtc_library::compile_here(const std::string& source, const std::string& file_name,
                                                     const std::vector<std::string>& options,
                                                     const std::string& name_expression) const {
  nvrtc_output out;
  nvrtcProgram program = nullptr;
  if (nvrtcResult r = api_.create_program(&program, source.c_str(), file_name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    out.error = fmt::format(COTUNE_FMT("nvrtcCreateProgram: {}"), api_.get_error_string(r));
    return out;
  }
  struct destroy {
    const nvrtc_api& api;
    nvrtcProgram& p;
    ~destroy() { api.destroy_program(&p); }
  } guard{api_, program};
  if (nvrtcResult r = api_.add_name_expression(program, name_expression.c_str()); r != NVRTC_SUCCESS) {
    out.error = fmt::format(COTUNE_FMT("nvrtcAddNameExpression('{}'): {}"), name_expression, api_.get_error_string(r));
    return out;
  }
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const auto& o : options) argv.push_back(o.c_str());
  nvrtcResult compiled = api_.compile_program(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  if (api_.get_program_log_size(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (api_.get_program_log(program, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS) {
    out.error = api_.get_error_string(compiled);
    return out;
  }
  std::size_t size = 0;
  if (api_.get_cubin_size(program, &size) == NVRTC_SUCCESS && size > 0) {
    out.image.resize(size);
    if (nvrtcResult r = api_.get_cubin(program, out.image.data()); r != NVRTC_SUCCESS) {
      out.error = fmt::format(COTUNE_FMT("nvrtcGetCUBIN: {}"), api_.get_error_string(r));
      return out;
    }
  } else {
    // A virtual architecture (-arch=compute_XY) yields PTX only; the driver compiles it at load.
    if (nvrtcResult r = api_.get_ptx_size(program, &size); r != NVRTC_SUCCESS || size == 0) {
      out.error = "NVRTC produced neither a cubin nor PTX";
      return out;
    }
    out.image.resize(size);
    if (nvrtcResult r = api_.get_ptx(program, out.image.data()); r != NVRTC_SUCCESS) {
      out.error = fmt::format(COTUNE_FMT("nvrtcGetPTX: {}"), api_.get_error_string(r));
      return out;
    }
    while (!out.image.empty() && out.image.back() == '\0') out.image.pop_back();
    out.is_ptx = true;
  }
  const char* lowered = nullptr;
  if (nvrtcResult r = api_.get_lowered_name(program, name_expression.c_str(), &lowered);
      r != NVRTC_SUCCESS || !lowered) {
    out.error = fmt::format(COTUNE_FMT("nvrtcGetLoweredName('{}'): {}"), name_expression,
                            r != NVRTC_SUCCESS ? api_.get_error_string(r) : "no name");
    return out;
  }
  out.lowered_name = lowered;
  out.ok = true;
  return out;
}

COTUNE_DECL std::filesystem::path nvrtc_library::find_toolkit_include_dir(void* handle) {
  std::vector<std::filesystem::path> candidates;
  Dl_info info{};
  if (void* sym = ::dlsym(handle, "nvrtcVersion"); sym && ::dladdr(sym, &info) && info.dli_fname) {
    std::filesystem::path lib(info.dli_fname);
    candidates.push_back(lib.parent_path().parent_path() / "include");
    std::error_code ec;
    auto real = std::filesystem::canonical(lib, ec);
    if (!ec) candidates.push_back(real.parent_path().parent_path() / "include");
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) candidates.push_back(std::filesystem::path(v) / "include");
  candidates.emplace_back("/usr/local/cuda/include");
  for (const auto& dir : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "cuda_fp16.h", ec)) return dir;
  }
  return {};
}

COTUNE_DECL void preload_nvrtc() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct joiner {
      std::thread thread;
      ~joiner() {
        if (thread.joinable()) thread.join();
      }
    };
    static joiner background; // joined at exit, before the process tears down
    background.thread = std::thread([paths = detail::nvrtc_search_paths()] { (void)gpu::library_for<nvrtc_library>(paths); });
  });
}

COTUNE_DECL const nvrtc_library* try_nvrtc() {
  return detail::current_nvrtc_entry().library.get();
}

COTUNE_DECL std::string nvrtc_error() {
  return detail::current_nvrtc_entry().message;
}

COTUNE_DECL const nvrtc_library& nvrtc() {
  const auto& entry = detail::current_nvrtc_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::cuda
