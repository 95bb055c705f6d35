#pragma once
/// \file The bodies of gpu/precompiled_file.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp).

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <unistd.h>

#include <fmt/core.h>
#include <simdjson.h>

#include <cotune/core/json_writer.hpp>
#include <cotune/detail/files.hpp>
#include <cotune/detail/hashing.hpp>
#include <cotune/gpu/precompiled_file.hpp>
#include <cotune/knobs/knobs.hpp>

namespace cotune::gpu {

namespace detail {
inline constexpr std::string_view precompiled_magic = "cotune-precompiled";

[[noreturn]] inline void refuse_precompiled(const std::filesystem::path& path, std::string_view why) {
  throw precompiled_file_error(
      fmt::format(COTUNE_FMT("precompiled file '{}' {}; rebuild it with cotune_precompile() (or `cotune "
                             "precompile`) from this cotune"),
                  path.string(), why));
}

template <class T>
[[nodiscard]] T field_or_refuse(const simdjson::dom::object& o, std::string_view name, const std::filesystem::path& path) {
  T v{};
  if (o[name].get(v) != simdjson::SUCCESS)
    refuse_precompiled(path, fmt::format(COTUNE_FMT("has an index entry without '{}'"), name));
  return v;
}
} // namespace detail

COTUNE_DECL std::string precompiled_recipe(const kernel_source& k, const config& c,
                                           const std::vector<std::string>& options) {
  cotune::detail::sha256_hasher h;
  h.field("cotune-precompiled-recipe").field(k.digest()).field(c.text()).field(std::to_string(options.size()));
  for (const auto& o : options) h.field(o);
  return cotune::detail::to_hex(h.digest());
}

COTUNE_DECL bool precompiled_arch_matches(std::string_view entry_arch, std::string_view target) {
  if (entry_arch == target) return true;
  return entry_arch.find(':') == std::string_view::npos && target.substr(0, target.find(':')) == entry_arch;
}

COTUNE_DECL precompiled_file precompiled_file::read(const std::filesystem::path& path) {
  std::optional<std::string> bytes;
  try {
    bytes = cotune::detail::read_file(path);
  } catch (const std::exception& e) {
    detail::refuse_precompiled(path, fmt::format(COTUNE_FMT("cannot be read ({})"), e.what()));
  }
  if (!bytes) detail::refuse_precompiled(path, "does not exist");
  const std::string_view text = *bytes;
  const auto eol = text.find('\n');
  const std::string_view header = text.substr(0, eol == std::string_view::npos ? 0 : eol);
  if (!header.starts_with(detail::precompiled_magic))
    detail::refuse_precompiled(path, "is not a cotune precompiled file (it does not begin with 'cotune-precompiled')");
  int version = 0;
  std::size_t index_bytes = 0;
  char index_digest[65] = {};
  const std::string header_text(header);
  if (std::sscanf(header_text.c_str(), "cotune-precompiled %d %zu %64s", &version, &index_bytes, index_digest) != 3)
    detail::refuse_precompiled(path, fmt::format(COTUNE_FMT("has a damaged header line '{}'"), header_text));
  if (version != format_version)
    detail::refuse_precompiled(
        path, fmt::format(COTUNE_FMT("has format {}, this cotune reads format {}"), version, format_version));
  const std::size_t index_at = eol + 1;
  if (index_bytes > text.size() - index_at) detail::refuse_precompiled(path, "is truncated (its index is cut short)");
  const std::string_view index = text.substr(index_at, index_bytes);
  if (cotune::detail::sha256_hex(index) != index_digest)
    detail::refuse_precompiled(path, "is damaged: its index does not match the index's SHA-256 in its header");
  const std::size_t images_at = index_at + index_bytes;

  precompiled_file out;
  out.path_ = path;
  out.digest_ = cotune::detail::sha256_hex(text);
  simdjson::dom::parser parser;
  simdjson::dom::object root;
  simdjson::dom::array list;
  if (parser.parse(index.data(), index.size()).get(root) != simdjson::SUCCESS || root["entries"].get(list) != simdjson::SUCCESS)
    detail::refuse_precompiled(path, "has an index that is not the JSON it should be");
  for (simdjson::dom::element el : list) {
    simdjson::dom::object o;
    if (el.get(o) != simdjson::SUCCESS) detail::refuse_precompiled(path, "has an index entry that is not an object");
    precompiled_entry e;
    e.kernel = std::string(detail::field_or_refuse<std::string_view>(o, "kernel", path));
    e.config = std::string(detail::field_or_refuse<std::string_view>(o, "config", path));
    e.arch = std::string(detail::field_or_refuse<std::string_view>(o, "arch", path));
    e.recipe = std::string(detail::field_or_refuse<std::string_view>(o, "recipe", path));
    e.lowered_name = std::string(detail::field_or_refuse<std::string_view>(o, "lowered_name", path));
    e.compiler = std::string(detail::field_or_refuse<std::string_view>(o, "compiler", path));
    e.ok = detail::field_or_refuse<bool>(o, "ok", path);
    e.log = std::string(detail::field_or_refuse<std::string_view>(o, "log", path));
    const auto offset = detail::field_or_refuse<std::uint64_t>(o, "offset", path);
    const auto size = detail::field_or_refuse<std::uint64_t>(o, "size", path);
    const auto image_sha = detail::field_or_refuse<std::string_view>(o, "image_sha256", path);
    if (offset > text.size() - images_at || size > text.size() - images_at - offset)
      detail::refuse_precompiled(
          path, fmt::format(COTUNE_FMT("is truncated (the image of kernel '{}' config {{{}}} for {} is cut short)"),
                            e.kernel, e.config, e.arch));
    e.image = std::string(text.substr(images_at + offset, size));
    if (cotune::detail::sha256_hex(e.image) != image_sha)
      detail::refuse_precompiled(
          path, fmt::format(COTUNE_FMT("is damaged: the image of kernel '{}' config {{{}}} for {} does not match "
                                       "its SHA-256"),
                            e.kernel, e.config, e.arch));
    if (e.ok && (e.image.empty() || e.lowered_name.empty()))
      detail::refuse_precompiled(
          path, fmt::format(COTUNE_FMT("has an entry without an image or a symbol (kernel '{}' config {{{}}} for {})"),
                            e.kernel, e.config, e.arch));
    out.entries_.push_back(std::move(e));
  }
  return out;
}

COTUNE_DECL const precompiled_file& precompiled_file::shared(const std::filesystem::path& path) {
  static std::mutex mutex;
  static std::map<std::string, std::variant<std::unique_ptr<precompiled_file>, std::string>> opened;
  const std::scoped_lock lock(mutex);
  auto [it, fresh] = opened.try_emplace(path.string());
  if (fresh) {
    try {
      it->second = std::make_unique<precompiled_file>(read(path));
    } catch (const precompiled_file_error& e) {
      it->second = std::string(e.what());
    }
  }
  if (const auto* why = std::get_if<std::string>(&it->second)) throw precompiled_file_error(*why);
  return *std::get<std::unique_ptr<precompiled_file>>(it->second);
}

COTUNE_DECL void precompiled_file::write(const std::filesystem::path& path, const std::vector<precompiled_entry>& entries) {
  json_writer w;
  w.begin_object().field("format", format_version).key("entries").begin_array();
  std::uint64_t offset = 0;
  for (const auto& e : entries) {
    w.begin_object().field("kernel", e.kernel).field("config", e.config).field("arch", e.arch);
    w.field("recipe", e.recipe).field("lowered_name", e.lowered_name).field("compiler", e.compiler);
    w.field("ok", e.ok).field("log", e.log).field("offset", offset).field("size", std::uint64_t{e.image.size()});
    w.field("image_sha256", cotune::detail::sha256_hex(e.image)).end_object();
    offset += e.image.size();
  }
  w.end_array().end_object();
  const std::string index = w.str();
  const std::string temp = fmt::format(COTUNE_FMT("{}.tmp.{}"), path.string(), ::getpid());
  {
    std::ofstream f(temp, std::ios::binary | std::ios::trunc);
    f << fmt::format(COTUNE_FMT("{} {} {} {}\n"), detail::precompiled_magic, format_version, index.size(),
                     cotune::detail::sha256_hex(index))
      << index;
    for (const auto& e : entries) f << e.image;
    f.flush();
    if (!f) {
      std::remove(temp.c_str());
      throw error(fmt::format(COTUNE_FMT("cannot write precompiled file '{}'"), temp));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    throw error(fmt::format(COTUNE_FMT("cannot rename '{}' to '{}': {}"), temp, path.string(), std::strerror(err)));
  }
}

COTUNE_DECL const precompiled_entry* precompiled_file::find(std::string_view kernel, std::string_view config,
                                                            std::string_view target) const {
  const precompiled_entry* loose = nullptr;
  for (const auto& e : entries_) {
    if (e.kernel != kernel || e.config != config) continue;
    if (e.arch == target) return &e;
    if (!loose && precompiled_arch_matches(e.arch, target)) loose = &e;
  }
  return loose;
}

COTUNE_DECL precompiled_mode current_precompiled_mode() {
  const auto& k = cotune::knobs().runtime;
  if (!k.precompiled_file.get()) return precompiled_mode::off;
  const std::string mode = k.precompiled.get();
  return mode == "only" ? precompiled_mode::only : mode == "off" ? precompiled_mode::off : precompiled_mode::prefer;
}

namespace detail {
struct precompiled_warnings {
  std::mutex mutex;
  std::set<std::string> said;
  std::vector<std::string> pending;
};
inline precompiled_warnings& warnings() {
  static precompiled_warnings w;
  return w;
}
} // namespace detail

COTUNE_DECL void warn_precompiled(std::string text) {
  auto& w = detail::warnings();
  const std::scoped_lock lock(w.mutex);
  if (w.said.insert(text).second) w.pending.push_back(std::move(text));
}

COTUNE_DECL std::vector<std::string> take_precompiled_warnings() {
  auto& w = detail::warnings();
  const std::scoped_lock lock(w.mutex);
  return std::exchange(w.pending, {});
}

namespace detail {
template <class T>
[[nodiscard]] bool read_at(std::string_view image, std::uint64_t at, T& out) {
  if (at > image.size() || sizeof(T) > image.size() - at) return false;
  std::memcpy(&out, image.data() + at, sizeof(T));
  return true;
}

/// `symbol` is the C++ mangling of a function named `base` at global scope: of a template's instance
/// (`_Z4gemmILi64EEvPf`) when `instance`, else of a plain function (`_Z3addPfi`).
[[nodiscard]] inline bool mangles(std::string_view symbol, std::string_view base, bool instance) {
  const std::string prefix = fmt::format(COTUNE_FMT("_Z{}{}"), base.size(), base);
  if (!symbol.starts_with(prefix) || symbol.size() == prefix.size()) return false;
  return (symbol[prefix.size()] == 'I') == instance;
}
} // namespace detail

COTUNE_DECL std::optional<std::string> elf_kernel_symbol(std::string_view image, std::string_view entry, std::string* why) {
  auto fail = [&](std::string text) -> std::optional<std::string> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  // ELF64, little-endian: both cubins and AMD code objects are.
  if (image.size() < 64 || image.substr(0, 4) != "\x7f" "ELF" || image[4] != 2 || image[5] != 1)
    return fail("the image is not a 64-bit little-endian ELF file");
  std::uint64_t shoff = 0;
  std::uint16_t shentsize = 0, shnum = 0;
  if (!detail::read_at(image, 0x28, shoff) || !detail::read_at(image, 0x3A, shentsize) || !detail::read_at(image, 0x3C, shnum) ||
      shentsize < 64)
    return fail("the image's section table cannot be read");
  const std::string_view base = entry.substr(0, entry.find('<'));
  const bool is_template = entry.find('<') != std::string_view::npos;
  std::vector<std::string> found;
  for (std::uint16_t i = 0; i < shnum; ++i) {
    const std::uint64_t sh = shoff + std::uint64_t{i} * shentsize;
    std::uint32_t type = 0, link = 0;
    std::uint64_t offset = 0, size = 0, entsize = 0;
    if (!detail::read_at(image, sh + 4, type) || !detail::read_at(image, sh + 0x18, offset) ||
        !detail::read_at(image, sh + 0x20, size) || !detail::read_at(image, sh + 0x28, link) ||
        !detail::read_at(image, sh + 0x38, entsize))
      return fail("the image's section table is cut short");
    if (type != 2 /* SHT_SYMTAB */ || entsize < 24) continue;
    std::uint64_t str_offset = 0, str_size = 0;
    const std::uint64_t strsh = shoff + std::uint64_t{link} * shentsize;
    if (link >= shnum || !detail::read_at(image, strsh + 0x18, str_offset) || !detail::read_at(image, strsh + 0x20, str_size) ||
        str_offset > image.size() || str_size > image.size() - str_offset)
      return fail("the image's symbol names cannot be read");
    const std::string_view strings = image.substr(str_offset, str_size);
    for (std::uint64_t at = offset; at + 24 <= offset + size && at + 24 <= image.size(); at += entsize) {
      std::uint32_t name = 0;
      unsigned char info = 0;
      (void)detail::read_at(image, at, name);
      (void)detail::read_at(image, at + 4, info);
      if ((info & 0xf) != 2 /* STT_FUNC */ || (info >> 4) == 0 /* STB_LOCAL */ || name >= strings.size()) continue;
      const std::string_view symbol(strings.data() + name);
      if ((!is_template && symbol == entry) || detail::mangles(symbol, base, is_template)) {
        if (std::find(found.begin(), found.end(), symbol) == found.end()) found.emplace_back(symbol);
      }
    }
  }
  if (found.empty()) return fail(fmt::format(COTUNE_FMT("the image has no kernel named '{}'"), entry));
  // An extern "C" kernel named exactly as the entry wins over any C++ overload of the same name.
  for (const auto& s : found)
    if (s == entry) return s;
  if (found.size() > 1) {
    std::string names;
    for (const auto& s : found) names += (names.empty() ? "" : ", ") + s;
    return fail(
        fmt::format(COTUNE_FMT("the image has several kernels named '{}' ({}); give the kernel a unique name or "
                               "make it extern \"C\""),
                    base, names));
  }
  return found.front();
}

} // namespace cotune::gpu
