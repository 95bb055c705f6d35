#pragma once
/// \file The bodies of backend/host_backend.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp): the compiler's resolution and runs, dlopen and the ELF lookups.

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <system_error>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cotune/backend/host_backend.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/detail/dir_fd.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/detail/process.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune {

namespace detail {

/// Why a compiler run was a crash of the compiler rather than an error in the kernel, or nothing: the
/// driver killed by a signal, or the driver reporting that one of its passes died (g++: "internal
/// compiler error: Segmentation fault", exit 4; clang: "... command failed due to signal").
[[nodiscard]] COTUNE_DECL std::optional<std::string> compiler_crash(const process_result& r) {
  if (r.timed_out || r.cancelled) return std::nullopt;
  if (r.signal) {
    const char* what = ::sigdescr_np(r.signal);
    return fmt::format(COTUNE_FMT("killed by signal {} ({})"), r.signal, what ? what : "unknown signal");
  }
  if (r.exit_code == 0) return std::nullopt;
  for (std::string_view marker : {"internal compiler error", "command failed due to signal"}) {
    const auto at = r.output.find(marker);
    if (at == std::string::npos) continue;
    const auto line_start = marker.starts_with("internal") ? at : r.output.rfind('\n', at) + 1;
    const auto line_end = r.output.find('\n', at);
    return r.output.substr(line_start, line_end == std::string::npos ? std::string::npos : line_end - line_start);
  }
  return std::nullopt;
}

/// The absolute path of `program` (looked up on PATH unless it contains a '/'), or nothing.
/// Symbolic links are not resolved: clang++-14 links to `clang`, and clang picks C or C++ linking
/// from the name it is called by, so the compiler must run under the name it was asked for.
[[nodiscard]] COTUNE_DECL std::optional<std::filesystem::path> find_on_path(const std::string& program) {
  auto runnable = [](const std::filesystem::path& p) {
    std::error_code ec;
    return ::access(p.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(p, ec);
  };
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    std::error_code ec;
    auto absolute = std::filesystem::absolute(program, ec).lexically_normal();
    if (!ec && runnable(absolute)) return absolute;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::error_code ec;
    auto candidate = std::filesystem::absolute(std::filesystem::path(dir) / program, ec).lexically_normal();
    if (!ec && runnable(candidate)) return candidate;
  }
  return std::nullopt;
}

/// Splits on spaces (no quoting: flags with spaces go in kernel_source::options).
[[nodiscard]] COTUNE_DECL std::vector<std::string> split_flags(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

/// `machine,system,cpu model`: the host part of a host kernel's key (with -march=native, binaries
/// are specific to the CPU model).
[[nodiscard]] COTUNE_DECL const std::string& host_platform() {
  static const std::string platform = [] {
    utsname u{};
    ::uname(&u);
    std::string model = "unknown cpu";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
      if (line.starts_with("model name")) {
        model = line.substr(line.find(':') + 2);
        break;
      }
    return fmt::format(COTUNE_FMT("{},{},{}"), u.machine, u.sysname, model);
  }();
  return platform;
}

/// Whether [address, address + bytes) lies in a loaded object's writable segment, outside its RELRO part
/// (made read-only after relocation): an `extern const` table lies in read-only memory, where a write
/// would crash the process instead of failing with a message.
[[nodiscard]] COTUNE_DECL bool writable_memory(std::uintptr_t address, std::size_t bytes) {
  struct query {
    std::uintptr_t begin, end;
    bool writable;
  } q{address, address + bytes, false};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto& q = *static_cast<query*>(data);
        auto contains = [&](const ElfW(Phdr)& ph) {
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          return q.begin >= lo && q.end <= lo + ph.p_memsz;
        };
        bool found = false, relro = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && contains(ph)) found = (ph.p_flags & PF_W) != 0 || found;
          if (ph.p_type == PT_GNU_RELRO && contains(ph)) relro = true;
        }
        if (!found) return 0;
        q.writable = !relro;
        return 1;
      },
      &q);
  return q.writable;
}

} // namespace detail

COTUNE_DECL host_compiler resolve_host_compiler() {
  std::optional<std::filesystem::path> path;
  if (auto chosen = knobs().build.cxx.get()) {
    path = detail::find_on_path(*chosen);
    if (!path)
      throw error(fmt::format(COTUNE_FMT("host backend: the compiler CXX='{}' was not found or is not executable; "
                                         "set CXX (cotune::knobs().build.cxx) to an installed C++ compiler"),
                              *chosen));
  } else {
    for (const char* name : {"c++", "g++", "clang++"})
      if ((path = detail::find_on_path(name))) break;
    if (!path)
      throw error("host backend: no C++ compiler found (tried c++, g++, clang++ on PATH); install g++ "
                  "or set CXX (cotune::knobs().build.cxx)");
  }
  static std::mutex mutex;
  static std::map<std::filesystem::path, std::string> versions;
  std::lock_guard lock(mutex);
  auto it = versions.find(*path);
  if (it == versions.end()) {
    detail::process_result r;
    try {
      r = detail::run_process({path->string(), "--version"}, std::chrono::seconds(30));
    } catch (const std::system_error& e) {
      throw error(
          fmt::format(COTUNE_FMT("host backend: cannot run '{} --version': {}; set CXX (cotune::knobs().build.cxx) to "
                                 "an installed C++ compiler"),
                      path->string(), e.what()));
    }
    if (r.exit_code != 0)
      throw error(fmt::format(COTUNE_FMT("host backend: '{} --version' failed (exit {}): {}"), path->string(),
                              r.exit_code, r.output));
    it = versions.emplace(*path, r.output).first;
  }
  return {*path, it->second};
}

COTUNE_DECL std::string host_backend::fingerprint(const device&) const {
  auto cc = resolve_host_compiler();
  return fmt::format(COTUNE_FMT("host;{};{};{}"), cc.path.string(), detail::sha256_hex(cc.version),
                     detail::host_platform());
}

COTUNE_DECL std::vector<std::string> host_backend::command(const host_compiler& cc, const kernel_source& k,
                                                        const config& c, const std::string& src,
                                                        const std::string& out) const {
  std::vector<std::string> cmd{cc.path.string()};
  for (auto& f : detail::split_flags(knobs().build.cxxflags.get())) cmd.push_back(f);
  if (knobs().runtime.debug.get()) cmd.push_back("-g");
  cmd.insert(cmd.end(), {"-shared", "-fPIC"});
  for (const auto& o : k.options) cmd.push_back(o);
  for (const auto& d : k.include_dirs) cmd.push_back("-I" + d);
  for (const auto& [name, v] : c.params()) cmd.push_back(fmt::format(COTUNE_FMT("-D{}={}"), name, v.macro_text()));
  cmd.insert(cmd.end(), {src, "-o", out});
  return cmd;
}

COTUNE_DECL binary_recipe host_backend::binary_key(const kernel_source& k, const config& c, const device&) const {
  auto cc = resolve_host_compiler();
  binary_recipe r{"host", {cc.path.string(), cc.version, detail::host_platform()}, k.name + ".so"};
  for (auto& arg : command(cc, k, c, "SRC", "OUT")) r.ingredients.push_back(std::move(arg));
  r.ingredients.push_back(k.digest());
  return r;
}

COTUNE_DECL host_backend::binary host_backend::compile(const kernel_source& k, const config& c, const device&,
                                                      std::stop_token stop) const {
  if (!is_identifier(k.name))
    throw error(fmt::format(COTUNE_FMT("host backend: kernel name '{}' must be a C identifier"), k.name));
  auto cc = resolve_host_compiler();
  const std::string file = k.name + ".so";
  // In $TMPDIR (else /tmp), like every other temporary file.
  std::string tmpl = (std::filesystem::temp_directory_path() / "cotune-build-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    throw error(fmt::format(
        COTUNE_FMT("host backend: cannot create a build directory '{}': {}; set TMPDIR to a writable place"), tmpl,
        std::strerror(errno)));
  const std::filesystem::path tmp(tmpl);
  struct cleanup {
    std::filesystem::path dir;
    bool keep;
    ~cleanup() {
      std::error_code ec;
      if (!keep) std::filesystem::remove_all(dir, ec);
    }
  } guard{tmp, knobs().runtime.debug.get()};
  const auto src = (tmp / (k.name + ".cpp")).string();
  const auto out = (tmp / file).string();
  {
    std::ofstream f(src, std::ios::binary);
    f << k.code;
    if (!f) throw error(fmt::format(COTUNE_FMT("host backend: cannot write '{}'"), src));
  }
  auto cmd = command(cc, k, c, src, out);
  // TMPDIR inside the build directory: a compiler killed by the timeout or a stop request cannot
  // remove its temporary files (/tmp/cc*.s, *.o), and this directory is removed whatever happens.
  std::string shown;
  for (const auto& a : cmd) shown += (shown.empty() ? "" : " ") + a;
  detail::process_result r;
  try {
    r = detail::run_process(cmd, std::chrono::milliseconds(knobs().autotuning.compile_timeout_ms.get()), stop,
                            {"TMPDIR=" + tmp.string()});
  } catch (const std::system_error& e) {
    throw error(fmt::format(
        COTUNE_FMT("host backend: cannot run the compiler for kernel '{}' with config {{{}}}: {}; command: {}"), k.name,
        c.params_text(), e.what(), shown));
  }
  if (r.timed_out)
    throw timeout_error(
        fmt::format(COTUNE_FMT("host backend: compiling kernel '{}' with config {{{}}} took longer than "
                               "COTUNE_COMPILE_TIMEOUT_MS={} ms and was cancelled; command: {}"),
                    k.name, c.params_text(), knobs().autotuning.compile_timeout_ms.get(), shown));
  if (r.cancelled)
    throw timeout_error(fmt::format(COTUNE_FMT("host backend: compiling kernel '{}' with config {{{}}} was cancelled"),
                                    k.name, c.params_text()));
  if (auto crash = detail::compiler_crash(r))
    throw compiler_crashed(
        fmt::format(COTUNE_FMT("host backend: the compiler crashed ({}) while compiling kernel '{}' with "
                               "config {{{}}}: this is not an error in the kernel; command: {}\n{}"),
                    *crash, k.name, c.params_text(), shown, r.output),
        r.output);
  if (r.exit_code != 0)
    throw compile_error(fmt::format(COTUNE_FMT("host backend: kernel '{}' with config {{{}}} does not compile "
                                               "(exit {}); command: {}\n{}"),
                                    k.name, c.params_text(), r.exit_code, shown, r.output),
                        r.output);
  auto bytes = detail::read_file(out);
  if (!bytes) throw error(fmt::format(COTUNE_FMT("host backend: the compiler wrote no '{}'"), out));
  return {*std::move(bytes), {}};
}

COTUNE_DECL host_backend::function host_backend::load(const binary& bin, const kernel_source& k, const config& c,
                                                   const device&) const {
  std::filesystem::path path = bin.path;
  if (path.empty()) {
    try {
      path = detail::process_private_dir() / (detail::sha256_hex(bin.image).substr(0, 32) + "-" + k.name + ".so");
      detail::atomic_write(path, bin.image); // a temporary and a rename: a concurrent dlopen sees a whole file
    } catch (const std::system_error& e) {
      throw launch_error(
          fmt::format(COTUNE_FMT("host backend: kernel '{}' with config {{{}}}: cannot write the shared object "
                                 "to the private directory: {}"),
                      k.name, c.params_text(), e.what()));
    }
  }
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    throw launch_error(fmt::format(COTUNE_FMT("host backend: kernel '{}' with config {{{}}}: dlopen('{}') failed: {}"),
                                   k.name, c.params_text(), path.string(), e ? e : "unknown error"));
  }
  // The cache entry stays pinned (never evicted) for as long as the library is loaded.
  std::shared_ptr<void> lib(handle, [hold = bin.hold](void* h) { ::dlclose(h); });
  void* sym = ::dlsym(handle, k.entry.c_str());
  if (!sym)
    throw launch_error(
        fmt::format(COTUNE_FMT("host backend: kernel '{}' with config {{{}}}: the shared object has no symbol "
                               "'{}' (declare the entry point extern \"C\")"),
                    k.name, c.params_text(), k.entry));
  return function{std::move(lib), sym};
}

COTUNE_DECL std::optional<module_global> host_backend::find_global(const function& f, std::string_view name) const {
  const std::string symbol(name);
  void* address = ::dlsym(f.library.get(), symbol.c_str());
  if (!address) return std::nullopt;
  Dl_info info{};
  void* entry = nullptr;
  if (!::dladdr1(address, &info, &entry, RTLD_DL_SYMENT) || !entry)
    throw error(fmt::format(
        COTUNE_FMT("host backend: cannot tell the size of global '{}' (dladdr1 found no symbol entry)"), symbol));
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT)
    throw error(
        fmt::format(COTUNE_FMT("host backend: '{}' is not a variable (ELF symbol type {}); on_load writes global "
                               "variables only"),
                    symbol, ELF64_ST_TYPE(sym->st_info)));
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  if (!detail::writable_memory(at, sym->st_size))
    throw error(
        fmt::format(COTUNE_FMT("host backend: global '{}' lies in read-only memory (declared const?); declare it "
                               "without const to write it in on_load"),
                    symbol));
  // The copies keep the library loaded while the global can still be written.
  auto keep = f.library;
  return module_global{at, static_cast<std::size_t>(sym->st_size),
                       [keep](std::uintptr_t to, const void* from, std::size_t n) {
                         std::memcpy(reinterpret_cast<void*>(to), from, n);
                       },
                       [keep](void* to, std::uintptr_t from, std::size_t n) {
                         std::memcpy(to, reinterpret_cast<const void*>(from), n);
                       }};
}

} // namespace cotune
