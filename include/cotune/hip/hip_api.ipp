#pragma once
/// \file The bodies of hip/hip_api.hpp's non-template functions at namespace scope (compiled once
/// with COTUNE_SEPARATE_COMPILATION, by impl/hip_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/hip/hip_api.hpp>

namespace cotune::hip {

COTUNE_DECL std::vector<const char*> runtime_symbols(std::string_view hip_name) {
  if (hip_name == "hipGetDeviceProperties") return {"hipGetDevicePropertiesR0000", "hipGetDeviceProperties"};
  return {hip_name.data()};
}

COTUNE_DECL void device_context::make_current() const {
  thread_local const device_context* current = nullptr;
  if (current == this) return;
  check(api_->set_device(ordinal_), "hipSetDevice");
  current = this;
}

COTUNE_DECL std::unique_ptr<runtime_library> runtime_library::open(const std::vector<std::string>& paths,
                                                                   std::string& why) {
  std::string tried;
  auto lib = gpu::open_first<runtime_library>(
      paths, tried,
      [](void* handle, const std::string& path) { return std::unique_ptr<runtime_library>(new runtime_library(handle, path)); },
      [](runtime_library& lib, void* handle) {
        std::string missing;
#define COTUNE_HIP_RESOLVE(member, name, type)                                                              \
  for (const char* symbol : runtime_symbols(#name))                                                         \
    if (!lib.api_.member) lib.api_.member = reinterpret_cast<std::add_pointer_t<type>>(::dlsym(handle, symbol)); \
  if (!lib.api_.member) gpu::add_missing(missing, #name);
        COTUNE_HIP_RUNTIME_FUNCTIONS(COTUNE_HIP_RESOLVE)
        COTUNE_HIP_OVERLOADED_FUNCTIONS(COTUNE_HIP_RESOLVE)
#undef COTUNE_HIP_RESOLVE
        return missing;
      },
      "(a HIP runtime older than 5.2?)");
  if (lib) {
    lib->api_.runtime_get_version(&lib->version_);
    if (hip_error r = lib->api_.init(0); r != hip_success) {
      lib->init_error_ = fmt::format(COTUNE_FMT("hipInit failed: {}"), lib->error_text(r));
    } else if (hip_error c = lib->api_.get_device_count(&lib->device_count_); c != hip_success) {
      lib->init_error_ = fmt::format(COTUNE_FMT("hipGetDeviceCount failed: {}"), lib->error_text(c));
      lib->device_count_ = 0;
    }
    if (lib->device_count_ < 0) lib->device_count_ = 0;
    for (int i = 0; i < lib->device_count_; ++i)
      lib->contexts_.emplace_back(new device_context(*lib, lib->api_, i));
    return lib;
  }
  why = fmt::format(
      COTUNE_FMT("cannot load the HIP runtime (libamdhip64); tried:{}\ninstall ROCm's HIP runtime (Debian: "
                 "libamdhip64-5), or set COTUNE_LIBAMDHIP64_PATH (cotune::hip::hip_knobs().libamdhip64_path) "
                 "to libamdhip64.so's path"),
      tried);
  return nullptr;
}

COTUNE_DECL std::string runtime_library::error_text(hip_error r) const {
  const char* name = api_.get_error_name ? api_.get_error_name(r) : nullptr;
  const char* text = api_.get_error_string ? api_.get_error_string(r) : nullptr;
  return fmt::format(COTUNE_FMT("{} ({})"), name ? name : fmt::format(COTUNE_FMT("hipError_t {}"), r),
                     text ? text : "no description");
}

COTUNE_DECL const device_context& runtime_library::context(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count_)
    throw error(fmt::format(COTUNE_FMT("HIP device {} does not exist: the runtime reports {} device(s){}"), ordinal,
                            device_count_, init_error_.empty() ? "" : " (" + init_error_ + ")"));
  device_context& ctx = *contexts_[static_cast<std::size_t>(ordinal)];
  std::call_once(ctx.once_, [&] {
    if (hip_error r = api_.set_device(ordinal); r != hip_success)
      throw error(fmt::format(COTUNE_FMT("HIP device {}: hipSetDevice failed: {}"), ordinal, error_text(r)));
    if (hip_error r = api_.stream_create_with_flags(&ctx.stream_, hip_stream_non_blocking); r != hip_success)
      throw error(
          fmt::format(COTUNE_FMT("HIP device {}: hipStreamCreateWithFlags failed: {}"), ordinal, error_text(r)));
  });
  return ctx;
}

COTUNE_DECL void device_context::check(hip_error r, std::string_view what) const {
  // Not called sticky here: on an AMD GPU a memory fault usually ends the process inside the runtime.
  if (r != hip_success) gpu::throw_call_failed("HIP", ordinal_, what, library_->error_text(r), /*sticky=*/false);
}

COTUNE_DECL void device_context::synchronize(std::string_view what,
                                        std::optional<std::chrono::steady_clock::time_point> deadline) const {
  if (!deadline) return check(api_->stream_synchronize(stream_), what);
  gpu::poll_until_done(
      [&] {
        const hip_error r = api_->stream_query(stream_);
        if (r != hip_error_not_ready) check(r, what);
        return r != hip_error_not_ready;
      },
      *deadline, "HIP", ordinal_, what);
}

} // namespace cotune::hip

namespace cotune::hip::detail {

COTUNE_DECL std::vector<std::string> runtime_search_paths() {
  if (auto chosen = hip_knobs().libamdhip64_path.get()) return {*chosen};
  return {"libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so.5"};
}

COTUNE_DECL const runtime_entry& current_runtime_entry() {
  const auto key = runtime_search_paths();
  return gpu::library_for<runtime_library>(key);
}

} // namespace cotune::hip::detail

namespace cotune::hip {

COTUNE_DECL const runtime_library* try_runtime() {
  return detail::current_runtime_entry().library.get();
}

COTUNE_DECL std::string runtime_error() {
  return detail::current_runtime_entry().message;
}

COTUNE_DECL const runtime_library& runtime() {
  const auto& entry = detail::current_runtime_entry();
  if (!entry.library) throw error(entry.message);
  return *entry.library;
}

} // namespace cotune::hip
