#pragma once
/// \file The bodies of core/config.hpp (compiled once with COTUNE_SEPARATE_COMPILATION, see
/// detail/config.hpp), so that simdjson and most of fmt's formatting stay out of the files that only use configs.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>

#include <cotune/core/config.hpp>
#include <cotune/core/errors.hpp>
#include <cotune/core/json_writer.hpp>
#include <cotune/detail/json.hpp>

namespace cotune {

COTUNE_DECL config::config(std::initializer_list<std::pair<std::string_view, value>> params, launch_options launch)
    : launch_(launch) {
  for (const auto& [name, v] : params) {
    if (find(name)) throw error(fmt::format(COTUNE_FMT("config: parameter '{}' is given twice"), name));
    set(name, v);
  }
}

COTUNE_DECL config& config::set(std::string_view name, value v) {
  if (!is_identifier(name))
    throw error(
        fmt::format(COTUNE_FMT("config: parameter name '{}' is not a C identifier (letters, digits, '_')"), name));
  auto it = std::lower_bound(params_.begin(), params_.end(), name,
                             [](const param& p, std::string_view n) { return p.first < n; });
  if (it != params_.end() && it->first == name) it->second = std::move(v);
  else params_.emplace(it, std::string(name), std::move(v));
  return *this;
}

COTUNE_DECL std::string config::text() const {
  std::string out;
  for (const auto& [name, v] : params_) out += fmt::format(COTUNE_FMT("{}: {}, "), name, v.text());
  out += fmt::format(COTUNE_FMT("num_warps: {}, num_stages: {}, num_ctas: {}"), launch_.num_warps, launch_.num_stages,
                     launch_.num_ctas);
  if (launch_.maxnreg) out += fmt::format(COTUNE_FMT(", maxnreg: {}"), *launch_.maxnreg);
  if (launch_.threads_per_block) out += fmt::format(COTUNE_FMT(", threads_per_block: {}"), *launch_.threads_per_block);
  if (launch_.block)
    out += fmt::format(COTUNE_FMT(", block: {}x{}x{}"), launch_.block->x, launch_.block->y, launch_.block->z);
  if (pre_hook_) out += fmt::format(COTUNE_FMT(", pre_hook: {}"), pre_hook_->name);
  return out;
}

COTUNE_DECL std::string config::params_text() const {
  std::string out;
  for (const auto& [name, v] : params_)
    out += fmt::format(COTUNE_FMT("{}{}: {}"), out.empty() ? "" : ", ", name, v.text());
  if (pre_hook_) out += fmt::format(COTUNE_FMT("{}pre_hook: {}"), out.empty() ? "" : ", ", pre_hook_->name);
  return out.empty() ? std::string("(no parameters)") : out;
}

COTUNE_DECL std::string config::json() const {
  json_writer w;
  w.begin_object().key("params").begin_object();
  for (const auto& [name, v] : params_) w.key(name).raw(v.json());
  w.end_object().field("num_warps", launch_.num_warps).field("num_stages", launch_.num_stages);
  w.field("num_ctas", launch_.num_ctas);
  auto optional_int = [&](std::string_view name, const std::optional<int>& o) {
    w.key(name);
    if (o) w.value(*o);
    else w.null();
  };
  optional_int("maxnreg", launch_.maxnreg);
  optional_int("threads_per_block", launch_.threads_per_block);
  // Written only when set, so that configs without a 2-D block keep the JSON (and keys) they had.
  if (launch_.block)
    w.key("block").begin_array().value(launch_.block->x).value(launch_.block->y).value(launch_.block->z).end_array();
  w.key("pre_hook");
  if (pre_hook_) w.value(pre_hook_->name);
  else w.null();
  return std::move(w.end_object()).take();
}

COTUNE_DECL config config::from_json(simdjson::dom::element e) {
  using namespace simdjson;
  dom::object obj;
  if (e.get_object().get(obj) != SUCCESS) throw error("config JSON: expected an object");
  config c;
  dom::object params;
  if (obj["params"].get_object().get(params) != SUCCESS) throw error("config JSON: missing object 'params'");
  for (auto [k, v] : params) {
    std::string name(k);
    if (v.is_bool()) c.set(name, bool(v));
    else if (v.is_int64()) c.set(name, std::int64_t(v));
    else if (v.is_double()) c.set(name, double(v));
    else if (v.is_string()) c.set(name, std::string_view(v));
    else
      throw error(fmt::format(COTUNE_FMT("config JSON: parameter '{}' has an unsupported type"), name));
  }
  auto read_int = [&](const char* key, int fallback) -> int {
    auto f = obj[key];
    if (f.error() == NO_SUCH_FIELD) return fallback;
    std::int64_t n = 0;
    if (f.get_int64().get(n) != SUCCESS)
      throw error(fmt::format(COTUNE_FMT("config JSON: '{}' is not an integer"), key));
    // A value beyond int would otherwise wrap silently into another launch option.
    if (!std::in_range<int>(n)) throw error(fmt::format(COTUNE_FMT("config JSON: '{}' = {} is out of range"), key, n));
    return static_cast<int>(n);
  };
  auto read_opt = [&](const char* key) -> std::optional<int> {
    auto f = obj[key];
    if (f.error() == NO_SUCH_FIELD || f.is_null()) return std::nullopt;
    return read_int(key, 0);
  };
  c.launch_.num_warps = read_int("num_warps", 4);
  c.launch_.num_stages = read_int("num_stages", 3);
  c.launch_.num_ctas = read_int("num_ctas", 1);
  c.launch_.maxnreg = read_opt("maxnreg");
  c.launch_.threads_per_block = read_opt("threads_per_block");
  if (auto b = obj["block"]; b.error() == SUCCESS && !b.is_null()) {
    dom::array dims;
    if (b.get_array().get(dims) != SUCCESS || dims.size() != 3)
      throw error("config JSON: 'block' must be an array of three integers [x, y, z]");
    int xyz[3] = {1, 1, 1};
    int i = 0;
    for (auto d : dims) {
      std::int64_t n = 0;
      if (d.get_int64().get(n) != SUCCESS || !std::in_range<int>(n))
        throw error("config JSON: 'block' must be an array of three integers [x, y, z]");
      xyz[i++] = static_cast<int>(n);
    }
    c.launch_.block = block_dims{xyz[0], xyz[1], xyz[2]};
  }
  auto hook = obj["pre_hook"];
  if (hook.error() == SUCCESS && !hook.is_null()) {
    std::string_view hook_name;
    if (hook.get_string().get(hook_name) != SUCCESS || hook_name.empty())
      throw error("config JSON: 'pre_hook' must be a non-empty string or null");
    c.pre_hook_ = named_hook{std::string(hook_name), {}};
  }
  return c;
}
COTUNE_DECL config config::from_json(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  if (auto err = parser.parse(detail::normalize_nonfinite(json)).get(e); err != simdjson::SUCCESS) {
    if (auto at = detail::find_json_syntax_error(json, true))
      throw error(fmt::format(COTUNE_FMT("config JSON: not valid JSON at line {}, column {}: {}"), at->line, at->column,
                              at->what));
    throw error(fmt::format(COTUNE_FMT("config JSON: not valid JSON ({})"), simdjson::error_message(err)));
  }
  return from_json(e);
}

COTUNE_DECL config& config::with_pre_hook(std::string name, config_hook fn) {
  if (name.empty()) throw error("config: a pre-hook needs a non-empty name (it is part of cache keys)");
  pre_hook_ = named_hook{std::move(name), std::move(fn)};
  return *this;
}

COTUNE_DECL void config::throw_missing(std::string_view name) const {
  throw error(fmt::format(COTUNE_FMT("config {{{}}} has no parameter '{}'"), text(), name));
}

COTUNE_DECL bool config::equals(const config& other) const {
  auto hook_name = [](const config& c) { return c.pre_hook_ ? c.pre_hook_->name : std::string(); };
  return params_ == other.params_ && launch_ == other.launch_ && hook_name(*this) == hook_name(other);
}

COTUNE_DECL std::size_t config::hash() const { return std::hash<std::string>{}(text()); }

} // namespace cotune

COTUNE_DECL fmt::format_context::iterator fmt::formatter<cotune::config>::format(const cotune::config& c,
                                                                                 format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(c.text(), ctx);
}
