#pragma once
/// \file `cotune::config`: one candidate configuration (named parameters + launch options + pre-hook).

#include <cotune/detail/config.hpp> // first: a pre-C++20 compile stops at its one message
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/core/value.hpp>
#include <cotune/detail/json.hpp>

namespace cotune {

class config;

/// What a config's pre-hook sees: the config being run and the call's arguments, type-erased but
/// type-checked (`arg<T>(i)` throws if argument i is not a `T`).
struct hook_args {
  const config& cfg;
  std::span<void* const> args;
  std::span<const std::type_info* const> types;
  std::span<const std::string> names;

  /// Argument `i` as a `T&`; throws cotune::error naming the argument if its type is not `T`.
  template <class T>
  [[nodiscard]] T& arg(std::size_t i) const {
    if (i >= args.size()) throw error(fmt::format("hook_args: no argument {} (the kernel has {})", i, args.size()));
    if (*types[i] != typeid(T))
      throw error(fmt::format("hook_args: argument {} ('{}') is not of the requested type", i,
                              i < names.size() ? names[i] : std::string("?")));
    return *static_cast<T*>(args[i]);
  }
  /// Argument called `name` as a `T&`.
  template <class T>
  [[nodiscard]] T& arg(std::string_view name) const {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return arg<T>(i);
    throw error(fmt::format("hook_args: the kernel has no argument named '{}'", name));
  }
};

/// A config's pre-hook, called before every run of that config (benchmark runs and real launches).
using config_hook = std::function<void(const hook_args&)>;

/// A pre-hook with a name. The name, not the function's identity, takes part in equality and in
/// cache keys: unlike Triton, a config with a pre-hook can still be cached (spec §3.7 stops caching).
struct named_hook {
  std::string name;
  config_hook fn;
};

/// A block's shape in threads (x varies fastest), for kernels that index `threadIdx.y` and `.z`.
struct block_dims {
  int x = 1, y = 1, z = 1;
  [[nodiscard]] constexpr std::int64_t threads() const noexcept { return std::int64_t{x} * y * z; }
  friend constexpr bool operator==(const block_dims&, const block_dims&) = default;
};

/// Launch options, as in Triton's Config. `threads(warp_size)` is the block's thread count: the
/// product of `block` when it is set, else threads_per_block, else num_warps x warp_size; a block
/// without `block` runs (threads, 1, 1). The host backend ignores them.
struct launch_options {
  int num_warps = 4;  ///< Triton's default.
  int num_stages = 3; ///< Triton's default.
  int num_ctas = 1;
  // `{}` on the optionals so that `launch_options{.num_warps = 8}` compiles cleanly under -Wextra.
  std::optional<int> maxnreg{};
  std::optional<int> threads_per_block{};
  /// The block's 3-D shape; when set it decides the thread count (threads_per_block is then ignored).
  std::optional<block_dims> block{};

  [[nodiscard]] constexpr int threads(int warp_size = 32) const noexcept {
    if (block) return static_cast<int>(block->threads());
    return threads_per_block.value_or(num_warps * warp_size);
  }
  /// The block's shape: `block` when set, else (threads, 1, 1).
  [[nodiscard]] constexpr block_dims block_shape(int warp_size = 32) const noexcept {
    return block ? *block : block_dims{threads(warp_size), 1, 1};
  }
  friend constexpr bool operator==(const launch_options&, const launch_options&) = default;
};

/// True for a C identifier: parameter names become -D macros and must not smuggle in flags.
[[nodiscard]] constexpr bool is_identifier(std::string_view s) noexcept {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

/// One candidate configuration. A plain value: equality, hash and the canonical text do not depend on
/// the order in which parameters were given (Triton's do, spec §11.3).
class config {
public:
  using param = std::pair<std::string, value>;

  config() = default;
  COTUNE_DECL config(std::initializer_list<std::pair<std::string_view, value>> params, launch_options launch = {});

  /// Sets (or replaces) a parameter. Names must be C identifiers.
  COTUNE_DECL config& set(std::string_view name, value v);
  config& with_launch(launch_options launch) {
    launch_ = launch;
    return *this;
  }
  COTUNE_DECL config& with_pre_hook(std::string name, config_hook fn);

  [[nodiscard]] const value* find(std::string_view name) const noexcept {
    auto it = std::lower_bound(params_.begin(), params_.end(), name,
                               [](const param& p, std::string_view n) { return p.first < n; });
    return it != params_.end() && it->first == name ? &it->second : nullptr;
  }
  [[nodiscard]] const value& at(std::string_view name) const {
    if (auto v = find(name)) return *v;
    throw_missing(name);
  }
  [[nodiscard]] bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  /// The parameters, sorted by name.
  [[nodiscard]] const std::vector<param>& params() const noexcept { return params_; }
  [[nodiscard]] const launch_options& launch() const noexcept { return launch_; }
  [[nodiscard]] const std::optional<named_hook>& pre_hook() const noexcept { return pre_hook_; }

  /// Canonical text, used for display and cache keys:
  /// `BLOCK: 64, MODE: "fast", num_warps: 4, num_stages: 3, num_ctas: 1[, maxnreg: N][, threads_per_block: N]`
  /// `[, block: XxYxZ][, pre_hook: name]`.
  [[nodiscard]] COTUNE_DECL std::string text() const;

  /// The text without launch options, for backends that have none (the host backend):
  /// `BLOCK: 64, MODE: "fast"[, pre_hook: name]`, or `(no parameters)`.
  [[nodiscard]] COTUNE_DECL std::string params_text() const;

  /// JSON that `from_json` reads back into an equal config (the hook's function is not serialised,
  /// only its name).
  [[nodiscard]] COTUNE_DECL std::string json() const;

  /// Reads a config written by `json()`. Throws cotune::error saying what is wrong.
  [[nodiscard]] static config from_json(simdjson::dom::element e);
  [[nodiscard]] static config from_json(std::string_view json);

  /// Equality over parameters (any order), launch options and the pre-hook's name.
  friend bool operator==(const config& a, const config& b) { return a.equals(b); }

  [[nodiscard]] COTUNE_DECL std::size_t hash() const;

private:
  [[noreturn]] COTUNE_DECL void throw_missing(std::string_view name) const;
  [[nodiscard]] COTUNE_DECL bool equals(const config& other) const;

  std::vector<param> params_; // sorted by name
  launch_options launch_;
  std::optional<named_hook> pre_hook_;
};

} // namespace cotune

template <>
struct std::hash<cotune::config> {
  std::size_t operator()(const cotune::config& c) const { return c.hash(); }
};

template <>
struct fmt::formatter<cotune::config> : fmt::formatter<std::string_view> {
  // Out of line: the base's body is in <fmt/format.h>, which the headers leave out (config.ipp has it).
  COTUNE_DECL format_context::iterator format(const cotune::config& c, format_context& ctx) const;
};

#if COTUNE_HEADER_ONLY
#include <cotune/core/config.ipp>
#endif
