#pragma once
/// \file The bodies of gpu/program_module.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, by
/// impl/gpu_src.hpp).

#include <cotune/detail/config.hpp>
#include <cotune/gpu/program_module.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>

namespace cotune::gpu {

namespace detail {

/// The loaded object whose base address is `base`: its load bias and program headers.
struct loaded_object {
  std::uintptr_t bias = 0;
  const ElfW(Phdr)* headers = nullptr;
  int header_count = 0;
  std::string name; ///< empty for the executable
  bool found = false;
};

inline loaded_object find_loaded_object(const void* base) {
  loaded_object out;
  auto visit = [](dl_phdr_info* info, std::size_t, void* data) -> int {
    auto& o = *static_cast<std::pair<const void*, loaded_object*>*>(data);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const auto& h = info->dlpi_phdr[i];
      if (h.p_type != PT_LOAD || h.p_offset != 0) continue; // the segment that maps the ELF header
      if (reinterpret_cast<const void*>(info->dlpi_addr + h.p_vaddr) != o.first) continue;
      o.second->bias = info->dlpi_addr;
      o.second->headers = info->dlpi_phdr;
      o.second->header_count = info->dlpi_phnum;
      o.second->name = info->dlpi_name ? info->dlpi_name : "";
      o.second->found = true;
      return 1;
    }
    return 0;
  };
  std::pair<const void*, loaded_object*> data{base, &out};
  dl_iterate_phdr(visit, &data);
  return out;
}

/// The GNU build ID among the object's notes (mapped with its PT_NOTE segments), as hex; empty if none.
inline std::string build_id(const loaded_object& o) {
  for (int i = 0; i < o.header_count; ++i) {
    const auto& h = o.headers[i];
    if (h.p_type != PT_NOTE) continue;
    const char* at = reinterpret_cast<const char*>(o.bias + h.p_vaddr);
    const char* end = at + h.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof note);
      const char* name = at + sizeof note;
      const char* desc = name + ((note.n_namesz + 3) & ~3u);
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          desc + note.n_descsz <= end)
        return cotune::detail::to_hex(
            std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(desc), note.n_descsz));
      at = desc + ((note.n_descsz + 3) & ~3u);
    }
  }
  return {};
}

/// nvcc's wrapper of a `.cu` file's fat binary, in the section `.nvFatBinSegment`.
struct fat_binary_wrapper {
  std::int32_t magic;   ///< 0x466243b1
  std::int32_t version; ///< 1
  const unsigned char* data;
  const void* unused;
};
/// The header that begins a fat binary.
struct fat_binary_header {
  std::uint32_t magic; ///< 0xba55ed50
  std::uint16_t version;
  std::uint16_t header_size;
  std::uint64_t fat_size; ///< the bytes after the header
};

/// The fat binaries nvcc embedded in `file` (loaded with `bias`): the section `.nvFatBinSegment`,
/// found in the file's section headers (which are not mapped), holds a wrapper per `.cu` file.
inline std::vector<std::string_view> fat_binaries(const std::filesystem::path& file, std::uintptr_t bias) {
  std::vector<std::string_view> out;
  std::ifstream in(file, std::ios::binary);
  ElfW(Ehdr) header{};
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_shentsize != sizeof(ElfW(Shdr)) || header.e_shstrndx >= header.e_shnum)
    return out;
  std::vector<ElfW(Shdr)> sections(header.e_shnum);
  in.seekg(static_cast<std::streamoff>(header.e_shoff));
  if (!in.read(reinterpret_cast<char*>(sections.data()), static_cast<std::streamsize>(sections.size() * sizeof(ElfW(Shdr)))))
    return out;
  const auto& names = sections[header.e_shstrndx];
  std::string strings(names.sh_size, '\0');
  in.seekg(static_cast<std::streamoff>(names.sh_offset));
  if (!in.read(strings.data(), static_cast<std::streamsize>(strings.size()))) return out;
  for (const auto& s : sections) {
    if (s.sh_name >= strings.size() || std::string_view(strings.c_str() + s.sh_name) != ".nvFatBinSegment") continue;
    const auto* wrappers = reinterpret_cast<const fat_binary_wrapper*>(bias + s.sh_addr);
    for (std::size_t i = 0; i < s.sh_size / sizeof(fat_binary_wrapper); ++i) {
      const auto& w = wrappers[i];
      if (w.magic != 0x466243b1 || !w.data) continue;
      fat_binary_header fat{};
      std::memcpy(&fat, w.data, sizeof fat);
      if (fat.magic != 0xba55ed50u) continue;
      out.emplace_back(reinterpret_cast<const char*>(w.data), fat.header_size + fat.fat_size);
    }
  }
  return out;
}

} // namespace detail

COTUNE_DECL const program_module& program_module_of(const void* address) {
  static std::mutex mutex;
  static std::map<const void*, std::unique_ptr<program_module>> modules; // by base address; never freed
  Dl_info info{};
  if (!address || !::dladdr(address, &info) || !info.dli_fbase)
    throw error(fmt::format(COTUNE_FMT("the kernel address {} is in no file the program loaded"), address));
  std::lock_guard lock(mutex);
  auto& m = modules[info.dli_fbase];
  if (m) return *m;
  const detail::loaded_object o = detail::find_loaded_object(info.dli_fbase);
  auto made = std::make_unique<program_module>();
  made->file = o.found && !o.name.empty() ? std::filesystem::path(o.name) : std::filesystem::path("/proc/self/exe");
  if (std::string id = o.found ? detail::build_id(o) : std::string(); !id.empty()) {
    made->build = "build-id:" + id;
  } else {
    auto bytes = cotune::detail::read_file(made->file);
    if (!bytes)
      throw error(fmt::format(COTUNE_FMT("cannot read '{}' to name the program's build (it holds compiled kernels)"),
                              made->file.string()));
    made->build = "sha256:" + cotune::detail::sha256_hex(*bytes);
  }
  if (o.found) made->fat_binaries = detail::fat_binaries(made->file, o.bias);
  m = std::move(made);
  return *m;
}

} // namespace cotune::gpu
