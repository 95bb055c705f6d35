#pragma once
/// \file The bodies of hip/hiprtc_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/hiprtc_api.hpp>

namespace cotune::hip::detail {

COTUNE_DECL std::vector<std::string> hiprtc_search_paths() {
  if (auto chosen = hip_knobs().libhiprtc_path.get()) return {*chosen};
  return {"libhiprtc.so.6", "libhiprtc.so.5", "libamdhip64.so.5", "/opt/rocm/lib/libhiprtc.so.6",
          "/opt/rocm/lib/libhiprtc.so.5"};
}

COTUNE_DECL const hiprtc_entry& current_hiprtc_entry() {
  const auto key = hiprtc_search_paths();
  return gpu::library_for<hiprtc_library>(key);
}

} // namespace cotune::hip::detail

namespace cotune::hip {

COTUNE_DECL std::unique_ptr<hiprtc_library> hiprtc_library::open(const std::vector<std::string>& paths,
                                                                 std::string& why) {
  std::string tried;
  auto lib = gpu::open_first<hiprtc_library>(
      paths, tried,
      [](void* handle, const std::string& path) { return std::unique_ptr<hiprtc_library>(new hiprtc_library(handle, path)); },
      [](hiprtc_library& lib, void* handle) {
        std::string missing;
#define COTUNE_HIPRTC_RESOLVE(member, name, type)                                                           \
  lib.api_.member = reinterpret_cast<std::add_pointer_t<type>>(::dlsym(handle, #name));                     \
  if (!lib.api_.member) gpu::add_missing(missing, #name);
        COTUNE_HIPRTC_FUNCTIONS(COTUNE_HIPRTC_RESOLVE)
#undef COTUNE_HIPRTC_RESOLVE
        return missing;
      });
  if (lib) {
    lib->api_.version(&lib->major_, &lib->minor_);
    return lib;
  }
  why = fmt::format(
      COTUNE_FMT("cannot load hiprtc (needed to compile HIP kernels); tried:{}\ninstall ROCm's hiprtc (Debian: "
                 "libamdhip64-5), or set COTUNE_LIBHIPRTC_PATH (cotune::hip::hip_knobs().libhiprtc_path)"),
      tried);
  return nullptr;
}

COTUNE_DECL gpu::rtc_output hiprtc_library::compile_here(const gpu::rtc_request& r) const {
  gpu::rtc_output out;
  hiprtc_program program = nullptr;
  if (hiprtc_result e = api_.create_program(&program, r.source.c_str(), r.file_name.c_str(), 0, nullptr, nullptr);
      e != hiprtc_success) {
    out.error = fmt::format(COTUNE_FMT("hiprtcCreateProgram: {}"), api_.get_error_string(e));
    return out;
  }
  struct destroy {
    const hiprtc_api& api;
    hiprtc_program& p;
    ~destroy() { api.destroy_program(&p); }
  } guard{api_, program};
  if (hiprtc_result e = api_.add_name_expression(program, r.name_expression.c_str()); e != hiprtc_success) {
    out.error =
        fmt::format(COTUNE_FMT("hiprtcAddNameExpression('{}'): {}"), r.name_expression, api_.get_error_string(e));
    return out;
  }
  std::vector<const char*> argv;
  for (const auto& o : r.options) argv.push_back(o.c_str());
  const hiprtc_result compiled = api_.compile_program(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  if (api_.get_program_log_size(program, &log_size) == hiprtc_success && log_size > 1) {
    out.log.resize(log_size);
    if (api_.get_program_log(program, out.log.data()) != hiprtc_success) out.log.clear();
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  }
  if (compiled != hiprtc_success) {
    out.error = api_.get_error_string(compiled);
    return out;
  }
  std::size_t size = 0;
  if (hiprtc_result e = api_.get_code_size(program, &size); e != hiprtc_success || size == 0) {
    out.error =
        fmt::format(COTUNE_FMT("hiprtcGetCodeSize: {}"), e != hiprtc_success ? api_.get_error_string(e) : "no code");
    return out;
  }
  out.image.resize(size);
  if (hiprtc_result e = api_.get_code(program, out.image.data()); e != hiprtc_success) {
    out.error = fmt::format(COTUNE_FMT("hiprtcGetCode: {}"), api_.get_error_string(e));
    return out;
  }
  const char* lowered = nullptr;
  if (hiprtc_result e = api_.get_lowered_name(program, r.name_expression.c_str(), &lowered);
      e != hiprtc_success || !lowered) {
    out.error = fmt::format(COTUNE_FMT("hiprtcGetLoweredName('{}'): {}"), r.name_expression,
                            e != hiprtc_success ? api_.get_error_string(e) : "no name");
    return out;
  }
  out.lowered_name = lowered;
  out.ok = true;
  return out;
}

COTUNE_DECL const hiprtc_library* try_hiprtc() {
  return detail::current_hiprtc_entry().library.get();
}

COTUNE_DECL std::string hiprtc_error() {
  return detail::current_hiprtc_entry().message;
}

COTUNE_DECL const hiprtc_library& hiprtc() {
  const auto& entry = detail::current_hiprtc_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::hip
